package eval

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/ragmem/ragmem/index"
	"github.com/ragmem/ragmem/index/driver"
	"github.com/ragmem/ragmem/search"
)

func approx(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

// Hand-computed: ranking d1 d2 d3 d4, judgements d2:2 d4:1 d9:3 (d9 never
// retrieved).
//
//	DCG@10  = 2/log2(3) + 1/log2(5)            = 1.26186 + 0.43068 = 1.69254
//	IDCG@10 = 3/log2(2) + 2/log2(3) + 1/log2(4) = 3 + 1.26186 + 0.5 = 4.76186
//	nDCG@10 = 0.355436; at k = 2: (2/log2 3) / (3 + 2/log2 3) = 0.296082
func TestMetricsHandComputed(t *testing.T) {
	ranking := []string{"d1", "d2", "d3", "d4"}
	rel := map[string]int{"d2": 2, "d4": 1, "d9": 3, "d1": 0}
	cases := []struct {
		name      string
		got, want float64
	}{
		{"nDCG@10", NDCG(ranking, rel, 10), 0.35543595158098623},
		{"nDCG@2", NDCG(ranking, rel, 2), 0.2960819109658652},
		{"nDCG@1", NDCG(ranking, rel, 1), 0},
		{"Recall@2", Recall(ranking, rel, 2), 1.0 / 3},
		{"Recall@10", Recall(ranking, rel, 10), 2.0 / 3},
		{"MRR@10", MRR(ranking, rel, 10), 0.5},
		{"MRR@1", MRR(ranking, rel, 1), 0},
		// A document repeated (two chunks) counts once, at its first rank.
		{"nDCG dup", NDCG([]string{"d2", "d2", "d4"}, rel, 10), (2 + 1/math.Log2(3)) / (3 + 2/math.Log2(3) + 0.5)},
		{"Recall dup", Recall([]string{"d2", "d2"}, rel, 2), 1.0 / 3},
		// Perfect ranking.
		{"nDCG perfect", NDCG([]string{"d9", "d2", "d4"}, rel, 10), 1},
		// No relevant document, an empty ranking, k <= 0.
		{"nDCG none", NDCG(ranking, map[string]int{"d1": 0, "d2": -1}, 10), 0},
		{"Recall none", Recall(ranking, map[string]int{}, 10), 0},
		{"nDCG empty", NDCG(nil, rel, 10), 0},
		{"nDCG k0", NDCG(ranking, rel, 0), 0},
	}
	for _, c := range cases {
		if !approx(c.got, c.want) {
			t.Errorf("%s = %.12f, want %.12f", c.name, c.got, c.want)
		}
	}
}

// Recall at every depth the report gives, on a ranking of 30 documents
// whose relevant ones are at ranks 3, 7, 24 and 26, with a fifth relevant
// document never retrieved and a judged non-relevant one at rank 1:
// R@5 = 1/5, R@10 = 2/5, R@25 = 3/5, R@100 = 4/5; MRR@10 = 1/3;
// nDCG@10 = (1/log2 4 + 1/log2 8) / (1 + 1/log2 3 + 1/log2 4 + 1/log2 5 + 1/log2 6).
func TestMeasureHandComputed(t *testing.T) {
	var ranking []string
	for i := 1; i <= 30; i++ {
		ranking = append(ranking, "d"+strconv.Itoa(i))
	}
	rel := map[string]int{"d3": 1, "d7": 1, "d24": 1, "d26": 1, "x": 1, "d1": 0}
	m := Measure(ranking, rel)
	ideal := 1 + 1/math.Log2(3) + 1/math.Log2(4) + 1/math.Log2(5) + 1/math.Log2(6)
	want := Metrics{
		NDCG10: (1/math.Log2(4) + 1/math.Log2(8)) / ideal, Recall5: 0.2, Recall10: 0.4, Recall25: 0.6, Recall100: 0.8, MRR10: 1.0 / 3,
	}
	for _, c := range []struct {
		name      string
		got, want float64
	}{
		{"nDCG@10", m.NDCG10, want.NDCG10}, {"R@5", m.Recall5, want.Recall5}, {"R@10", m.Recall10, want.Recall10},
		{"R@25", m.Recall25, want.Recall25}, {"R@100", m.Recall100, want.Recall100}, {"MRR@10", m.MRR10, want.MRR10},
	} {
		if !approx(c.got, c.want) {
			t.Errorf("%s = %.12f, want %.12f", c.name, c.got, c.want)
		}
	}
	// Cut exactly at the depth: rank 5 counts for R@5, rank 6 does not.
	if r := Recall([]string{"a", "b", "c", "d", "e", "f"}, map[string]int{"e": 1, "f": 1}, 5); !approx(r, 0.5) {
		t.Errorf("R@5 at the cut = %v", r)
	}
}

// The macro average weighs every data set the same, whatever its number of
// queries, and keeps rows apart by mode and fusion.
func TestMacro(t *testing.T) {
	row := func(mode, fusion, method string, ndcg, r10 float64) ModeResult {
		return ModeResult{Mode: mode, Fusion: fusion, Method: method, Metrics: Metrics{NDCG10: ndcg, Recall10: r10, Recall5: r10 / 2}}
	}
	reps := []*Report{
		{Dataset: "a", Queries: 1000, Results: []ModeResult{row("fulltext", "", "bm25", 0.5, 0.6), row("hybrid", "relative", "relative(alpha=0.10, calibrated)", 0.6, 0.7), row("hybrid", "rrf", "rrf(k=60)", 0.4, 0.5)}},
		{Dataset: "b", Queries: 10, Results: []ModeResult{row("fulltext", "", "bm25", 0.3, 0.2), row("hybrid", "relative", "relative(alpha=0.30, calibrated)", 0.2, 0.3)}},
	}
	got := Macro(reps)
	want := []MacroResult{
		{Mode: "fulltext", Method: "bm25", Metrics: Metrics{NDCG10: 0.4, Recall10: 0.4, Recall5: 0.2}, Datasets: 2},
		{Mode: "hybrid", Fusion: "relative", Method: "", Metrics: Metrics{NDCG10: 0.4, Recall10: 0.5, Recall5: 0.25}, Datasets: 2},
		{Mode: "hybrid", Fusion: "rrf", Method: "rrf(k=60)", Metrics: Metrics{NDCG10: 0.4, Recall10: 0.5, Recall5: 0.25}, Datasets: 1},
	}
	if len(got) != len(want) {
		t.Fatalf("Macro = %+v", got)
	}
	for i := range want {
		g, w := got[i], want[i]
		if g.Mode != w.Mode || g.Fusion != w.Fusion || g.Method != w.Method || g.Datasets != w.Datasets ||
			!approx(g.NDCG10, w.NDCG10) || !approx(g.Recall10, w.Recall10) || !approx(g.Recall5, w.Recall5) {
			t.Errorf("row %d = %+v, want %+v", i, g, w)
		}
	}
	if Macro(nil) != nil {
		t.Error("Macro(nil) not empty")
	}
}

func TestPercentile(t *testing.T) {
	xs := []float64{5, 1, 3, 2, 4}
	for p, want := range map[float64]float64{50: 3, 95: 5, 100: 5, 1: 1, 20: 1, 21: 2} {
		if got := Percentile(xs, p); got != want {
			t.Errorf("p%g = %v, want %v", p, got, want)
		}
	}
	if xs[0] != 5 {
		t.Error("Percentile sorted its input")
	}
	if Percentile([]float64(nil), 50) != 0 {
		t.Error("empty")
	}
}

func TestLoadBEIR(t *testing.T) {
	ds, err := LoadBEIR("testdata/tiny", "")
	if err != nil {
		t.Fatal(err)
	}
	if ds.Name != "tiny" || ds.Split != "test" || len(ds.Corpus) != 10 || len(ds.Order) != 4 {
		t.Fatalf("name %q split %q: %d docs, %d queries", ds.Name, ds.Split, len(ds.Corpus), len(ds.Order))
	}
	if ds.Order[0] != "q1" || ds.Queries["q3"] != "oxidised tea leaves" || ds.Qrels["q1"]["sol-1"] != 2 || ds.Qrels["q3"]["tea-1"] != 0 {
		t.Errorf("order %v, q3 %q, qrels %v", ds.Order, ds.Queries["q3"], ds.Qrels)
	}
	if _, ok := ds.Queries["q5"]; ok {
		t.Error("an unjudged query was kept")
	}
	if _, err := LoadBEIR("testdata/tiny", "train"); !errors.Is(err, ErrBadDataset) {
		t.Errorf("missing split: %v", err)
	}
	if _, err := LoadBEIR("testdata/tiny", "../x"); !errors.Is(err, ErrBadDataset) {
		t.Errorf("split with a path: %v", err)
	}
}

func TestReadersRejectBadInput(t *testing.T) {
	corpus := map[string]string{
		"not json":     "{\"_id\": 1\n",
		"no id":        `{"title":"x","text":"y"}`,
		"empty id":     `{"_id":"","text":"y"}`,
		"id an object": `{"_id":{},"text":"y"}`,
		"duplicate":    "{\"_id\":\"a\"}\n{\"_id\":\"a\"}\n",
	}
	for name, in := range corpus {
		if _, err := ReadCorpus(strings.NewReader(in)); !errors.Is(err, ErrBadDataset) {
			t.Errorf("corpus %s: %v", name, err)
		}
	}
	if _, err := ReadQueries(strings.NewReader("{\"_id\":\"q\"}\n{\"_id\":\"q\"}")); !errors.Is(err, ErrBadDataset) {
		t.Errorf("duplicate query: %v", err)
	}
	qrels := map[string]string{
		"two columns": "q\td\n",
		"bad score":   "q\td\t1\nq\td\tx\n",
		"empty":       "query-id\tcorpus-id\tscore\n",
	}
	for name, in := range qrels {
		if _, err := ReadQrels(strings.NewReader(in)); !errors.Is(err, ErrBadDataset) {
			t.Errorf("qrels %s: %v", name, err)
		}
	}
	// Tolerated: numeric ids, a BOM, CRLF, blank lines, invalid UTF-8, the
	// TREC four-column layout.
	docs, err := ReadCorpus(strings.NewReader("\ufeff{\"_id\": 42, \"title\": \"t\\u00e9\", \"text\": \"a\xffb\"}\r\n\r\n"))
	if err != nil || len(docs) != 1 || docs[0].ID != "42" || docs[0].Title != "té" || docs[0].Text != "a\ufffdb" {
		t.Errorf("lenient corpus: %+v %v", docs, err)
	}
	q, err := ReadQrels(strings.NewReader("1 0 d1 2\r\n1 0 d2 0\n"))
	if err != nil || q["1"]["d1"] != 2 || q["1"]["d2"] != 0 {
		t.Errorf("TREC qrels: %v %v", q, err)
	}
	long := strings.Repeat("x", maxLine+10)
	if _, err := ReadQueries(strings.NewReader(long)); !errors.Is(err, ErrBadDataset) {
		t.Errorf("over-long line: %v", err)
	}
}

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// The tiny data set is built so that BM25 ranks the judged documents first:
// q1's two relevant documents (grades 2 and 1) first and second, q2 and q3's
// first, and q4's only document, whose answer is in its last chunk.
func TestRunTiny(t *testing.T) {
	ds, err := LoadBEIR("testdata/tiny", "test")
	if err != nil {
		t.Fatal(err)
	}
	var stages []string
	tmp := t.TempDir()
	rep, err := Run(context.Background(), ds, &Options{
		Modes:    []search.Mode{search.FullText, search.Hybrid},
		Dir:      tmp,
		PerQuery: true,
		Logger:   quiet(),
		Progress: func(p Progress) {
			if len(stages) == 0 || stages[len(stages)-1] != p.Stage {
				stages = append(stages, p.Stage)
			}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Documents != 9 || rep.Skipped != 1 || rep.Queries != 4 || rep.Chunks <= rep.Documents {
		t.Errorf("documents %d skipped %d queries %d chunks %d", rep.Documents, rep.Skipped, rep.Queries, rep.Chunks)
	}
	if strings.Join(stages, ",") != "index,calibrate,search fulltext,search hybrid" {
		t.Errorf("progress stages %v", stages)
	}
	ft := rep.Results[0]
	if ft.Mode != "fulltext" || ft.Method != "bm25" {
		t.Fatalf("first result %+v", ft)
	}
	for _, q := range ft.PerQuery {
		if q.NDCG10 != 1 || q.Recall100 != 1 {
			t.Errorf("%s: nDCG@10 %v, Recall@100 %v, ranking %v", q.ID, q.NDCG10, q.Recall100, q.Ranking)
		}
		seen := map[string]bool{}
		for _, d := range q.Ranking {
			if seen[d] {
				t.Errorf("%s: document %s ranked twice: %v", q.ID, d, q.Ranking)
			}
			seen[d] = true
		}
	}
	if ft.NDCG10 != 1 || ft.MRR10 != 1 || ft.Recall10 != 1 {
		t.Errorf("fulltext averages %+v", ft)
	}
	if h := rep.Results[1]; h.Mode != "hybrid" || !strings.HasPrefix(h.Method, "rrf") && !strings.HasPrefix(h.Method, "relative") {
		t.Errorf("hybrid result %+v", h)
	}
	if rep.Calibration != nil {
		t.Errorf("calibrated a store of %d chunks: %+v", rep.Chunks, rep.Calibration)
	}
	if ft.LatencyP95Ms < ft.LatencyP50Ms || rep.IndexSeconds <= 0 {
		t.Errorf("latency %v/%v, indexing %v", ft.LatencyP50Ms, ft.LatencyP95Ms, rep.IndexSeconds)
	}
	// The temporary store is gone.
	if left, _ := filepath.Glob(filepath.Join(tmp, "*")); len(left) != 0 {
		t.Errorf("left behind: %v", left)
	}
}

// Several hybrid fusions are evaluated on one index, each a row of its own;
// per-query rankings keep Depth documents.
func TestRunHybrids(t *testing.T) {
	ds, err := LoadBEIR("testdata/tiny", "test")
	if err != nil {
		t.Fatal(err)
	}
	run := func(hs []Hybrid) *Report {
		rep, err := Run(context.Background(), ds, &Options{
			Modes: []search.Mode{search.Hybrid}, Hybrids: hs, Dir: t.TempDir(), PerQuery: true, Depth: 3, Logger: quiet(),
		})
		if err != nil {
			t.Fatal(err)
		}
		return rep
	}
	rrf := Hybrid{Label: "rrf:k=10", Search: search.Options{Fusion: search.RRF, RRFK: 10}}
	rel := Hybrid{Label: "relative:alpha=0.3", Search: search.Options{Fusion: search.Relative, Alpha: 0.3}}
	both := run([]Hybrid{rel, rrf})
	alone := run([]Hybrid{rrf})
	if len(both.Results) != 2 || both.Results[0].Fusion != rel.Label || both.Results[1].Fusion != rrf.Label ||
		both.Results[0].Method != "relative(alpha=0.30, feedback=3)" || both.Results[1].Method != "rrf(k=10, feedback=3)" {
		t.Fatalf("rows %+v", both.Results)
	}
	// The second fusion, on the first one's candidates, ranks as it does alone.
	a, b := both.Results[1], alone.Results[0]
	if a.Metrics != b.Metrics {
		t.Errorf("rrf after relative %+v, alone %+v", a.Metrics, b.Metrics)
	}
	for i, q := range a.PerQuery {
		if strings.Join(q.Ranking, " ") != strings.Join(b.PerQuery[i].Ranking, " ") || len(q.Ranking) > 3 {
			t.Errorf("%s: %v against %v", q.ID, q.Ranking, b.PerQuery[i].Ranking)
		}
	}
	if len(a.PerQuery) != len(ds.Order) || len(a.PerQuery[0].Ranking) != 3 {
		t.Errorf("per-query rankings %+v", a.PerQuery)
	}

	// Rankings are kept to the depth, beyond the 10 the metrics look at.
	dir := t.TempDir()
	var corpus, qrels strings.Builder
	qrels.WriteString("query-id\tcorpus-id\tscore\n")
	for i := 0; i < 30; i++ {
		fmt.Fprintf(&corpus, `{"_id":"d%d","title":"","text":"otters number %d swim in the kelp forest"}`+"\n", i, i)
		fmt.Fprintf(&qrels, "q1\td%d\t1\n", i)
	}
	os.MkdirAll(filepath.Join(dir, "qrels"), 0o755)
	os.WriteFile(filepath.Join(dir, "corpus.jsonl"), []byte(corpus.String()), 0o644)
	os.WriteFile(filepath.Join(dir, "queries.jsonl"), []byte(`{"_id":"q1","text":"otters kelp"}`+"\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "qrels", "test.tsv"), []byte(qrels.String()), 0o644)
	deep, err := LoadBEIR(dir, "test")
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Run(context.Background(), deep, &Options{Modes: []search.Mode{search.FullText}, Dir: t.TempDir(), PerQuery: true, Depth: 25, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	if q := rep.Results[0].PerQuery[0]; len(q.Ranking) != 25 || !approx(q.Recall25, 25.0/30) || !approx(q.Recall10, 10.0/30) {
		t.Errorf("deep ranking: %d documents, R@10 %v, R@25 %v", len(q.Ranking), q.Recall10, q.Recall25)
	}
}

// The recorder answers a repeated search of the current query from memory
// and forgets it at the next query.
func TestRecorderReusesLists(t *testing.T) {
	r := &recorder{}
	calls := 0
	search := func(_ context.Context, q string, k int, _ index.Filter) ([]driver.Hit, error) {
		calls++
		return []driver.Hit{{Record: index.Record{ID: q + strconv.Itoa(k)}}}, nil
	}
	seen := map[int][]driver.Hit{}
	r.reset("q1")
	for i := 0; i < 3; i++ {
		hs, _ := r.lookup(context.Background(), seen, search, "q1", 100, index.Filter{})
		if hs[0].Record.ID != "q1100" {
			t.Fatal(hs)
		}
	}
	r.lookup(context.Background(), seen, search, "q1", 400, index.Filter{})
	r.lookup(context.Background(), seen, search, "other", 100, index.Filter{})
	if calls != 3 {
		t.Errorf("%d searches, want 3 (q1@100, q1@400, other@100)", calls)
	}
}

// rank keeps asking for more chunks until it has depth distinct documents.
func TestRankFillsDepth(t *testing.T) {
	r := &chunky{perDoc: 5, docs: 50}
	docs, _, _, err := rank(context.Background(), r, "anything", search.Options{Mode: search.FullText, SimilarityThreshold: -1}, 20, 250, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(docs) != 20 || r.maxK < 100 {
		t.Errorf("%d documents after asking for at most %d chunks", len(docs), r.maxK)
	}
	r = &chunky{perDoc: 5, docs: 3}
	docs, _, _, _ = rank(context.Background(), r, "anything", search.Options{Mode: search.FullText, SimilarityThreshold: -1}, 20, 15, false)
	if len(docs) != 3 {
		t.Errorf("small store: %v", docs)
	}
}

// chunky is a retriever whose every document has perDoc chunks in a row.
type chunky struct {
	perDoc, docs, maxK int
}

func (c *chunky) FullText(_ context.Context, _ string, k int, _ index.Filter) ([]driver.Hit, error) {
	c.maxK = max(c.maxK, k)
	var hits []driver.Hit
	for i := 0; i < min(k, c.perDoc*c.docs); i++ {
		hits = append(hits, driver.Hit{Record: index.Record{ID: strconv.Itoa(i), SourceURL: sourcePrefix + strconv.Itoa(i/c.perDoc)}, Score: float64(1000 - i)})
	}
	return hits, nil
}

func (c *chunky) Vector(ctx context.Context, q string, k int, f index.Filter) ([]driver.Hit, error) {
	return c.FullText(ctx, q, k, f)
}

func TestRunErrors(t *testing.T) {
	if _, err := Run(context.Background(), &Dataset{}, nil); !errors.Is(err, ErrNoQueries) {
		t.Errorf("no queries: %v", err)
	}
	ds, _ := LoadBEIR("testdata/tiny", "test")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Run(ctx, ds, &Options{Dir: t.TempDir(), Logger: quiet()}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
}

func FuzzReadCorpus(f *testing.F) {
	f.Add("{\"_id\":\"a\",\"title\":\"t\",\"text\":\"x\"}\n{\"_id\":7}\n")
	f.Add("\ufeff{\"_id\":\"\\u0000\"}\r\n")
	f.Fuzz(func(t *testing.T, in string) {
		docs, err := ReadCorpus(strings.NewReader(in))
		if err != nil {
			return
		}
		seen := map[string]bool{}
		for _, d := range docs {
			if d.ID == "" || seen[d.ID] {
				t.Fatalf("id %q empty or repeated", d.ID)
			}
			seen[d.ID] = true
		}
	})
}

func FuzzReadQrels(f *testing.F) {
	f.Add("query-id\tcorpus-id\tscore\nq1\td1\t1\n")
	f.Add("1 0 d 2\n")
	f.Fuzz(func(t *testing.T, in string) {
		q, err := ReadQrels(strings.NewReader(in))
		if err == nil && len(q) == 0 {
			t.Fatal("no error and no judgements")
		}
	})
}

func FuzzReadQueries(f *testing.F) {
	f.Add("{\"_id\":\"q\",\"text\":\"why?\"}\n")
	f.Fuzz(func(t *testing.T, in string) {
		_, _ = ReadQueries(strings.NewReader(in))
	})
}

// TestFullDataset runs a whole BEIR data set when RAGMEM_EVAL_DATASET names
// one (e.g. ../shared/eval/scifact), and checks the targets of the issue:
//
//	RAGMEM_EVAL_DATASET=/work/shared/eval/scifact go test -run FullDataset -v ./internal/eval
func TestFullDataset(t *testing.T) {
	dir := os.Getenv("RAGMEM_EVAL_DATASET")
	if dir == "" {
		t.Skip("set RAGMEM_EVAL_DATASET to a BEIR folder to run")
	}
	ds, err := LoadBEIR(dir, os.Getenv("RAGMEM_EVAL_SPLIT"))
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Run(context.Background(), ds, &Options{Modes: []search.Mode{search.FullText, search.Hybrid}, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	ft, hy := rep.Results[0], rep.Results[1]
	t.Logf("%s: fulltext nDCG@10 %.4f R@100 %.4f; hybrid nDCG@10 %.4f R@100 %.4f; indexing %.1f s",
		rep.Dataset, ft.NDCG10, ft.Recall100, hy.NDCG10, hy.Recall100, rep.IndexSeconds)
	if hy.NDCG10 < ft.NDCG10 {
		t.Errorf("hybrid nDCG@10 %.4f < fulltext %.4f", hy.NDCG10, ft.NDCG10)
	}
	if rep.Dataset == "scifact" && rep.Split == "test" && (ft.NDCG10 < 0.678 || ft.Recall100 < 0.91) {
		t.Errorf("SciFact fulltext below Lucene's: nDCG@10 %.4f, Recall@100 %.4f", ft.NDCG10, ft.Recall100)
	}
}

package search

import (
	"context"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/ragmem/ragmem/index"
	"github.com/ragmem/ragmem/index/driver"
	"github.com/ragmem/ragmem/internal/index/engine"
)

// topicEmbedder maps a text to the vector of the first marker (in sorted
// order) it contains: a made-up semantic model with known geometry. A text
// with no marker gets a vector unrelated to every marker's.
type topicEmbedder map[string][]float32

func (e topicEmbedder) Embed(_ context.Context, texts []string) ([][]float32, error) {
	keys := make([]string, 0, len(e))
	for k := range e {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	out := make([][]float32, len(texts))
	for i, t := range texts {
		out[i] = []float32{0, 0, 0, 1}
		for _, k := range keys {
			if strings.Contains(t, k) {
				out[i] = append([]float32(nil), e[k]...)
				break
			}
		}
	}
	return out, nil
}
func (topicEmbedder) Identity() string { return "topic/d4" }
func (topicEmbedder) Dimension() int   { return 4 }

// The geometry: the query leans to axis 0; the passages that match its
// words lean to axis 1 ("docB" and "docC" share one vector); "cider" sits
// near them but far from the query; "banana" sits near the query but away
// from them; "mention" has the query's words and an unrelated vector;
// three fillers share neither.
var (
	fbQuery   = []float32{1, 0.2, 0, 0}
	fbA       = []float32{0.6, 0.8, 0, 0}
	fbBC      = []float32{0.5, 0.8, 0.2, 0}
	fbCider   = []float32{0.2, 1, 0, 0}
	fbBanana  = []float32{1, -0.3, 0.3, 0}
	fbMention = []float32{0.1, 0, 1, 0}
	fbFiller  = []float32{0, 0, 0.3, 1}
)

const (
	urlCider   = "https://t.test/d"
	urlBanana  = "https://t.test/e"
	urlMention = "https://t.test/m"
)

func feedbackStore(t *testing.T) *engine.Index {
	t.Helper()
	emb := topicEmbedder{
		"apple orchard": fbQuery, // the query itself; no document holds these words together
		"docA":          fbA, "docB": fbBC, "docC": fbBC,
		"cider": fbCider, "banana": fbBanana, "mention": fbMention, "filler": fbFiller,
	}
	docs := []index.Document{
		{SourceURL: "https://t.test/a", Title: "docA", Content: "docA: an apple tree in the orchard."},
		{SourceURL: "https://t.test/b", Title: "docB", Content: "docB: apple harvest at the orchard."},
		{SourceURL: "https://t.test/c", Title: "docC", Content: "docC: orchard apple varieties."},
		{SourceURL: urlCider, Title: "cider", Content: "cider pressing in autumn."},
		{SourceURL: urlBanana, Title: "banana", Content: "banana split with chocolate."},
		{SourceURL: urlMention, Title: "mention", Content: "mention: the orchard and an apple, in passing."},
		{SourceURL: "https://t.test/f1", Title: "filler one", Content: "filler text about trains."},
		{SourceURL: "https://t.test/f2", Title: "filler two", Content: "filler text about boats."},
		{SourceURL: "https://t.test/f3", Title: "filler three", Content: "filler text about planes."},
	}
	return openStore(t, t.TempDir(), emb, docs)
}

func unit64(v []float32) []float64 {
	var s float64
	for _, x := range v {
		s += float64(x) * float64(x)
	}
	out := make([]float64, len(v))
	for i, x := range v {
		out[i] = float64(x) / math.Sqrt(s)
	}
	return out
}

func cos64(a, b []float64) float64 {
	var s float64
	for i := range a {
		s += a[i] * b[i]
	}
	return s
}

func byURL(rs []Result) map[string]Result {
	m := map[string]Result{}
	for _, r := range rs {
		m[r.Record.SourceURL] = r
	}
	return m
}

// Feedback moves the query toward the centroid of the first fused results:
// a passage on their topic rises above one that only resembles the query,
// each result's explanation keeps its similarity to the query and gives the
// refined one, and the method says so. The expected similarities are
// computed here from the geometry (Rocchio with weight FeedbackWeight, the
// centroid of the first three results of plain fusion), not by search.
func TestFeedbackRefinesTheVectorSide(t *testing.T) {
	ix := feedbackStore(t)
	defer ix.Close()
	ctx := context.Background()
	opts := Options{Mode: Hybrid, Alpha: 0.5, TopK: 20, SimilarityThreshold: -1, MaxPerSource: -1, KeepDuplicates: true}
	res, err := Search(ctx, ix, "apple orchard", &opts)
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 9 {
		t.Fatalf("%d results, want all 9: %v", len(res), ids(res))
	}
	got := byURL(res)
	cider, banana := got[urlCider], got[urlBanana]
	if cider.Score <= banana.Score || cider.Explanation.VectorRank >= banana.Explanation.VectorRank {
		t.Fatalf("feedback did not lift the on-topic passage: cider %+v, banana %+v", cider.Explanation, banana.Explanation)
	}

	// The first three of plain fusion are the feedback.
	off := opts
	off.Feedback = -1
	first := off
	first.TopK = defaultFeedback
	top, err := Search(ctx, ix, "apple orchard", &first)
	if err != nil || len(top) != defaultFeedback {
		t.Fatalf("first results %v %v", ids(top), err)
	}
	fv, err := ix.Vectors(ctx, ids(top))
	if err != nil {
		t.Fatal(err)
	}
	q := unit64(fbQuery)
	c := make([]float64, 4)
	for _, v := range fv {
		for i, x := range unit64(v) {
			c[i] += x
		}
	}
	cf := make([]float32, 4)
	for i := range c {
		cf[i] = float32(c[i])
	}
	cu := unit64(cf)
	moved := make([]float32, 4)
	for i := range moved {
		moved[i] = float32(q[i] + FeedbackWeight*cu[i])
	}
	m := unit64(moved)
	vecOf := map[string][]float32{"https://t.test/a": fbA, "https://t.test/b": fbBC, "https://t.test/c": fbBC,
		urlCider: fbCider, urlBanana: fbBanana, urlMention: fbMention,
		"https://t.test/f1": fbFiller, "https://t.test/f2": fbFiller, "https://t.test/f3": fbFiller}
	for _, r := range res {
		v := unit64(vecOf[r.Record.SourceURL])
		e := r.Explanation
		if math.Abs(e.VectorSimilarity-cos64(q, v)) > 1e-5 || math.Abs(e.FeedbackSimilarity-cos64(m, v)) > 1e-5 {
			t.Errorf("%s: similarity %.4f (want %.4f), refined %.4f (want %.4f)", r.Record.SourceURL,
				e.VectorSimilarity, cos64(q, v), e.FeedbackSimilarity, cos64(m, v))
		}
		if !strings.HasSuffix(e.Method, ", feedback=3)") {
			t.Errorf("method %q does not name the feedback", e.Method)
		}
	}

	// Every candidate is scored again: the refined list ranks all nine by
	// their refined similarity, equal ones ("docB" and "docC") by id.
	ranked := slices.Clone(res)
	slices.SortFunc(ranked, func(a, b Result) int { return a.Explanation.VectorRank - b.Explanation.VectorRank })
	for i, r := range ranked {
		if r.Explanation.VectorRank != i+1 {
			t.Fatalf("vector ranks are not 1..9: %+v", ranked)
		}
		if i == 0 {
			continue
		}
		p := ranked[i-1]
		if p.Explanation.FeedbackSimilarity < r.Explanation.FeedbackSimilarity ||
			(p.Explanation.FeedbackSimilarity == r.Explanation.FeedbackSimilarity && p.Record.ID > r.Record.ID) {
			t.Errorf("vector rank %d (%.6f, %s) before %d (%.6f, %s)", i, p.Explanation.FeedbackSimilarity, p.Record.ID, i+1, r.Explanation.FeedbackSimilarity, r.Record.ID)
		}
	}

	// Without feedback, the passage that resembles the query comes first,
	// and the results are exactly plain fusion's.
	plain, err := Search(ctx, ix, "apple orchard", &off)
	if err != nil {
		t.Fatal(err)
	}
	p := byURL(plain)
	if p[urlBanana].Score <= p[urlCider].Score {
		t.Fatalf("the geometry does not test anything: without feedback %+v", plain)
	}
	text, _ := ix.FullText(ctx, "apple orchard", 100, index.Filter{DocTypes: []string{index.DocKnowledge}})
	vec, _ := ix.Vector(ctx, "apple orchard", 100, index.Filter{DocTypes: []string{index.DocKnowledge}})
	want := Fuse(text, vec, &off)
	if !eq(ids(plain), ids(want)) {
		t.Fatalf("feedback off: %v, plain fusion %v", ids(plain), ids(want))
	}
	for _, r := range plain {
		if r.Explanation.FeedbackSimilarity != 0 || strings.Contains(r.Explanation.Method, "feedback") {
			t.Fatalf("feedback off, yet %+v", r.Explanation)
		}
	}
}

// The threshold tests a result's similarity to the query itself, not to the
// refined query, or its BM25 score: "cider" is close to the refined query
// (0.70) but not to the query (0.38) and matches none of its words, so a
// threshold of 0.5 drops it; "banana" (0.85 to the query) stays, and so does
// "mention", which has the query's words and nothing of its meaning.
func TestFeedbackThresholdUsesTheQuery(t *testing.T) {
	ix := feedbackStore(t)
	defer ix.Close()
	res, err := Search(context.Background(), ix, "apple orchard", &Options{Mode: Hybrid, Alpha: 0.5, TopK: 20, SimilarityThreshold: 0.5, MaxPerSource: -1})
	if err != nil {
		t.Fatal(err)
	}
	got := byURL(res)
	if _, ok := got[urlCider]; ok {
		t.Fatalf("cider passed the threshold on its refined similarity: %+v", got[urlCider].Explanation)
	}
	for _, u := range []string{urlBanana, urlMention} {
		if _, ok := got[u]; !ok {
			t.Fatalf("%s was dropped: %v", u, ids(res))
		}
	}
}

// gone wraps a store whose record id vanishes between retrieval and
// scoring, as a concurrent delete makes it.
type gone struct {
	*engine.Index
	id string
}

func (g gone) Similarities(ctx context.Context, vecs [][]float32, ids []string) ([][]float64, error) {
	sims, err := g.Index.Similarities(ctx, vecs, ids)
	for i, id := range ids {
		if id == g.id {
			for j := range sims {
				sims[j][i] = math.NaN()
			}
		}
	}
	return sims, err
}

// A candidate deleted while the query runs is left out of the refined list
// rather than ranked on a NaN.
func TestFeedbackSkipsVanishedRecords(t *testing.T) {
	ix := feedbackStore(t)
	defer ix.Close()
	ctx := context.Background()
	vec, _ := ix.Vector(ctx, "apple orchard", 10, index.Filter{DocTypes: []string{index.DocKnowledge}})
	var cider string
	for _, h := range vec {
		if h.Record.SourceURL == urlCider {
			cider = h.Record.ID
		}
	}
	res, err := Search(ctx, gone{ix, cider}, "apple orchard", &Options{Mode: Hybrid, Alpha: 0.5, TopK: 20, SimilarityThreshold: -1, MaxPerSource: -1})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res {
		if r.Record.ID == cider || math.IsNaN(r.Score) {
			t.Fatalf("vanished record ranked: %+v", r)
		}
	}
	if len(res) != 8 {
		t.Fatalf("results %v", ids(res))
	}
}

// The refined list keeps the vector pool's length: with pools of three and
// four results asked, a result that is left with a BM25 rank alone (the
// "mention", fourth in BM25 order among four ties) carries no vector
// similarity; with pools of six (a search for six results), the candidates
// of both lists are scored again and the best six keep vector ranks 1 to 6.
func TestFeedbackKeepsThePoolSize(t *testing.T) {
	ix := feedbackStore(t)
	defer ix.Close()
	res, err := Search(context.Background(), ix, "apple orchard", &Options{Mode: Hybrid, Alpha: 0.5, TopK: 4, CandidatePool: 3, SimilarityThreshold: -1, MaxPerSource: -1, KeepDuplicates: true})
	if err != nil {
		t.Fatal(err)
	}
	var ranks []int
	for _, r := range res {
		e := r.Explanation
		if e.VectorRank > 0 {
			ranks = append(ranks, e.VectorRank)
		} else if e.VectorSimilarity != 0 || e.FeedbackSimilarity != 0 {
			t.Errorf("%s has no vector rank but similarities %+v", r.Record.SourceURL, e)
		}
	}
	if len(res) != 4 || len(ranks) == 0 || len(ranks) == 4 {
		t.Fatalf("the case does not test anything: results %+v", res)
	}
	wide, err := Search(context.Background(), ix, "apple orchard", &Options{Mode: Hybrid, Alpha: 0.5, TopK: 6, CandidatePool: 3, SimilarityThreshold: -1, MaxPerSource: -1, KeepDuplicates: true})
	if err != nil {
		t.Fatal(err)
	}
	ranks = ranks[:0]
	for _, r := range wide {
		if r.Explanation.VectorRank > 0 {
			ranks = append(ranks, r.Explanation.VectorRank)
		}
	}
	if slices.Sort(ranks); !slices.Equal(ranks, []int{1, 2, 3, 4, 5, 6}) {
		t.Fatalf("vector ranks %v in %+v", ranks, wide)
	}
}

// A question that shares no word with the store is answered by the vectors
// alone, refined by its first results, without a BM25 list to lean on.
func TestFeedbackWithoutBM25Matches(t *testing.T) {
	ix := feedbackStore(t)
	defer ix.Close()
	res, err := Search(context.Background(), ix, "quux", &Options{Mode: Hybrid, Alpha: 0.5, TopK: 20, SimilarityThreshold: 0.3, MaxPerSource: -1, KeepDuplicates: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(res) == 0 {
		t.Fatal("no results")
	}
	for _, r := range res {
		e := r.Explanation
		if e.BM25Rank != 0 || e.VectorRank == 0 || e.FeedbackSimilarity == 0 || e.VectorSimilarity < 0.3 {
			t.Fatalf("%s: %+v", r.Record.SourceURL, e)
		}
	}
}

// feedbackList scores the union of both lists against the refined query and
// keeps as many as the vector list held, the best first: with three vector
// hits and four BM25 hits (five candidates), the three best of all five.
func TestFeedbackListCutsTheUnionToThePool(t *testing.T) {
	ix := feedbackStore(t)
	defer ix.Close()
	ctx := context.Background()
	f := index.Filter{DocTypes: []string{index.DocKnowledge}}
	text, err := ix.FullText(ctx, "apple orchard", 4, f)
	if err != nil {
		t.Fatal(err)
	}
	vec, err := ix.Vector(ctx, "apple orchard", 3, f)
	if err != nil {
		t.Fatal(err)
	}
	o := (&Options{Alpha: 0.5, SimilarityThreshold: -1, TopK: 3}).withDefaults()
	top := Fuse(text, vec, &o)
	refined, orig, ok := feedbackList(ctx, ix, "apple orchard", nil, text, vec, top)
	if !ok || len(refined) != 3 {
		t.Fatalf("refined %d %v", len(refined), ok)
	}
	union := map[string]bool{}
	for _, h := range append(append([]driver.Hit(nil), text...), vec...) {
		union[h.Record.ID] = true
	}
	if len(union) <= 3 || len(orig) != len(union) {
		t.Fatalf("the case does not test the cut: union %d, scored %d", len(union), len(orig))
	}
	// The refined similarities of every candidate, from a pool as large as
	// the union: the cut keeps the three best of them.
	all, _, _ := feedbackList(ctx, ix, "apple orchard", nil, text, append(append([]driver.Hit(nil), vec...), text...), top)
	if len(all) != len(union) {
		t.Fatalf("scored %d of %d", len(all), len(union))
	}
	for i := range refined {
		if refined[i].Record.ID != all[i].Record.ID || refined[i].Score != all[i].Score {
			t.Fatalf("refined %d: %s %.4f, best of all %s %.4f", i, refined[i].Record.ID, refined[i].Score, all[i].Record.ID, all[i].Score)
		}
	}
}

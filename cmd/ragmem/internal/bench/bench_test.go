package bench

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ragmem/ragmem/internal/embed"
	"github.com/ragmem/ragmem/search"
)

// run is what `ragmem bench` does with its flags' defaults and these
// corpora and embedders (an --embedders list).
func run(t *testing.T, corpora, embedders string, queries int, edit func(*Options)) []Result {
	t.Helper()
	es, err := ParseEmbedders(embedders, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { CloseEmbedders(es) })
	o := Options{Corpora: strings.Split(corpora, ","), Queries: queries, Words: 110, WorkDir: t.TempDir(),
		ChromemMax: 200000, Batch: 1000, Writers: 2, Embedders: es, PreEmbed: true}
	if edit != nil {
		edit(&o)
	}
	rs, err := Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	return rs
}

// TestBench runs a small bench with the default embedders (lexical and
// randproj side by side), the peers and the export, and checks that every
// figure is present and plausible and that the JSON keeps its names; then
// the table output, a loopback OpenAI-compatible embedder, other fusions,
// and bad corpora and embedders.
func TestBench(t *testing.T) {
	exp := t.TempDir()
	rs := run(t, "800", strings.Join(DefaultEmbedders, ","), 30, func(o *Options) { o.Peers, o.Export = true, exp })
	if len(rs) != 2 || rs[0].EmbedderName != "lexical" || rs[1].EmbedderName != "randproj" {
		t.Fatalf("%d results, want lexical and randproj side by side: %+v", len(rs), rs)
	}
	js, err := json.Marshal(rs)
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{`"hybrid":{"p50Ms":`, `"chromemTop100":`, `"recallAt10":`, `"vectorIndexTop100Exact":`, `"embedChunksPerSecond":`, `"peers":[{"name":"chromem-go (vector)"`} {
		if !strings.Contains(string(js), key) {
			t.Errorf("the JSON lacks %s:\n%s", key, js)
		}
	}
	for i, r := range rs {
		checkFigures(t, r, []embed.Embedder{embed.Default(), embed.NewRandProj(nil)}[i], filepath.Join(exp, "800-"+r.EmbedderName))
	}
	var text strings.Builder
	Print(&text, run(t, "300", "lexical:dim=384,randproj:dim=96", 10, nil))
	for _, want := range []string{"hybrid    p50/p95/p99 ms", "cold open", "384 dimensions", "96 dimensions", "side by side, corpus 300", "embedding alone, chunks/s"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("table output lacks %q:\n%s", want, text.String())
		}
	}
	rs = run(t, "300", "loopback:randproj:dim=64", 10, nil)
	if r := rs[0]; len(rs) != 1 || !strings.HasPrefix(r.Embedder, "openai") || r.Dimension != 64 || r.EmbedMisses != 0 || r.Hybrid.N == 0 || r.Recall10 < 0.98 {
		t.Errorf("loopback bench: %+v", rs)
	}
	if r := rs[0]; !strings.Contains(r.HybridMethod, "feedback=3") {
		t.Errorf("the hybrid queries ran %q, not the default fusion with feedback", r.HybridMethod)
	}
	// Options.Fusion times another fusion: without feedback, or rrf. The
	// bench wraps the embedder (its vectors are computed beforehand) and
	// must still weigh it as search does for users: calibrated on the
	// store.
	for spec, want := range map[string]string{"relative:feedback=0": ", calibrated)", "rrf:k=20": "rrf(k=20, feedback=3)"} {
		fo, err := search.ParseFusionSpec(spec)
		if err != nil {
			t.Fatal(err)
		}
		rs = run(t, "300", "randproj:dim=32", 10, func(o *Options) { o.Fusion = fo })
		if len(rs) != 1 || !strings.Contains(rs[0].HybridMethod, want) || rs[0].CalibrateSeconds <= 0 {
			t.Errorf("fusion %s: the hybrid queries ran %q, want %q (calibration %.3f s)", spec, rs[0].HybridMethod, want, rs[0].CalibrateSeconds)
		}
	}
	if _, err := Run(context.Background(), Options{Corpora: []string{"lots"}, WorkDir: t.TempDir()}); err == nil {
		t.Error("bad corpus accepted")
	}
	if _, err := ParseEmbedders("lexical,loopback:openai:x", nil); err == nil {
		t.Error("loopback of an openai embedder accepted")
	}
}

// checkFigures checks one result of TestBench's first run: 800 documents
// with 30 queries, the peers, and the export in dir.
func checkFigures(t *testing.T, r Result, want embed.Embedder, dir string) {
	t.Helper()
	if r.Documents != 800 || r.Chunks < 800 || r.Dimension != want.Dimension() || r.Embedder != want.Identity() {
		t.Fatalf("corpus figures: %+v", r)
	}
	for name, l := range map[string]Latency{"hybrid": r.Hybrid, "vector": r.Vector, "fulltext": r.FullText, "pool": r.VectorPool} {
		if l.N == 0 || l.P50 <= 0 || l.P50 > l.P95 || l.P95 > l.P99 {
			t.Errorf("%s: %s latency %+v", r.EmbedderName, name, l)
		}
	}
	if r.Recall10 < 0.98 || r.NDCG10["fulltext"] < 0.5 || r.NDCG10["hybrid"] < 0.5 {
		t.Errorf("%s: quality: recall %.3f nDCG %v", r.EmbedderName, r.Recall10, r.NDCG10)
	}
	if r.Chromem == nil || r.HybridSpeedup <= 0 || r.ColdOpenSeconds <= 0 || r.DiskBytes <= 0 || r.ChunksPerSec <= 0 {
		t.Errorf("%s: figures missing: %+v", r.EmbedderName, r)
	}
	if !r.PreEmbedded || r.EmbedChunksPerSec <= 0 || r.EmbedMisses != 0 || !r.ColdCodesLoaded {
		t.Errorf("%s: pre-embedding %v at %.0f chunks/s with %d misses; codes loaded at open %v", r.EmbedderName, r.PreEmbedded, r.EmbedChunksPerSec, r.EmbedMisses, r.ColdCodesLoaded)
	}
	if len(r.Peers) != 2 || r.Peers[1].NDCG10 < 0.5 {
		t.Errorf("%s: peers: %+v", r.EmbedderName, r.Peers)
	}
	for _, f := range []string{"chunks.jsonl", "chunk_vectors.f32", "queries.jsonl", "query_vectors.f32", "meta.json"} {
		st, err := os.Stat(filepath.Join(dir, f))
		if err != nil || st.Size() == 0 {
			t.Errorf("export %s: %v", f, err)
		}
	}
	if st, _ := os.Stat(filepath.Join(dir, "chunk_vectors.f32")); st != nil && st.Size() != int64(r.Chunks*r.Dimension*4) {
		t.Errorf("chunk_vectors.f32 has %d bytes for %d chunks", st.Size(), r.Chunks)
	}
	q, _ := os.ReadFile(filepath.Join(dir, "queries.jsonl"))
	var first struct{ Exact10 []string }
	json.Unmarshal([]byte(strings.SplitN(string(q), "\n", 2)[0]), &first)
	if len(first.Exact10) != 10 {
		t.Errorf("%s: export lacks the exact top 10 of the queries: %q", r.EmbedderName, strings.SplitN(string(q), "\n", 2)[0])
	}
}

// BenchmarkStore runs the bench on the corpora in $RAGMEM_BENCH_CORPORA
// (default 10k) with the lexical embedder: go test -run xxx -bench Store
// ./cmd/ragmem/internal/bench. Larger ones (100k, 1m, scifact) and other embedders are
// `ragmem bench` runs; see docs/benchmarks.md.
func BenchmarkStore(b *testing.B) {
	corpora := os.Getenv("RAGMEM_BENCH_CORPORA")
	if corpora == "" {
		corpora = "10k"
	}
	for _, name := range strings.Split(corpora, ",") {
		b.Run(name, func(b *testing.B) {
			var r Result
			for b.Loop() {
				rs, err := Run(context.Background(), Options{Corpora: []string{name}, Queries: 200, Words: 110, WorkDir: b.TempDir(), Batch: 1000, Writers: 2, ChromemMax: 200000})
				if err != nil {
					b.Fatal(err)
				}
				r = rs[0]
			}
			b.ReportMetric(r.ChunksPerSec, "chunks/s")
			b.ReportMetric(r.Hybrid.P50, "hybrid-p50-ms")
			b.ReportMetric(r.Vector.P50, "vector-p50-ms")
			b.ReportMetric(r.FullText.P50, "fulltext-p50-ms")
			b.ReportMetric(r.Recall10, "recall@10")
			b.ReportMetric(r.ColdOpenSeconds*1000, "cold-open-ms")
			if r.Chromem != nil {
				b.ReportMetric(r.HybridSpeedup, "x-faster-than-chromem")
			}
		})
	}
}

package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ragmem/ragmem/embed"
)

// TestBenchCommand runs a small bench with the default embedders (lexical
// and randproj side by side), the peers and the export, and checks that
// every figure is present and plausible; then the table output, a loopback
// OpenAI-compatible embedder, and a bad corpus.
func TestBenchCommand(t *testing.T) {
	exp := t.TempDir()
	out := mustRun(t, "bench", "--corpora", "800", "--queries", "30", "--peers", "--export", exp, "--work-dir", t.TempDir(), "--json")
	var rs []benchResult
	if err := json.Unmarshal([]byte(out), &rs); err != nil {
		t.Fatalf("bench --json: %v\n%s", err, out)
	}
	if len(rs) != 2 || rs[0].EmbedderName != "lexical" || rs[1].EmbedderName != "randproj" {
		t.Fatalf("%d results, want lexical and randproj side by side: %+v", len(rs), rs)
	}
	for i, r := range rs {
		want := []embed.Embedder{embed.Default(), embed.NewRandProj(nil)}[i]
		if r.Documents != 800 || r.Chunks < 800 || r.Dimension != want.Dimension() || r.Embedder != want.Identity() {
			t.Fatalf("corpus figures: %+v", r)
		}
		for name, l := range map[string]latency{"hybrid": r.Hybrid, "vector": r.Vector, "fulltext": r.FullText, "pool": r.VectorPool} {
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
		dir := filepath.Join(exp, "800-"+r.EmbedderName)
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
	text := mustRun(t, "bench", "--corpora", "300", "--queries", "10", "--embedders", "lexical:dim=384,randproj:dim=96")
	for _, want := range []string{"hybrid    p50/p95/p99 ms", "cold open", "384 dimensions", "96 dimensions", "side by side, corpus 300", "embedding alone, chunks/s"} {
		if !strings.Contains(text, want) {
			t.Errorf("table output lacks %q:\n%s", want, text)
		}
	}
	out = mustRun(t, "bench", "--corpora", "300", "--queries", "10", "--embedders", "loopback:randproj:dim=64", "--json")
	rs = nil
	if err := json.Unmarshal([]byte(out), &rs); err != nil || len(rs) != 1 {
		t.Fatalf("loopback bench: %v\n%s", err, out)
	}
	if r := rs[0]; !strings.HasPrefix(r.Embedder, "openai") || r.Dimension != 64 || r.EmbedMisses != 0 || r.Hybrid.N == 0 || r.Recall10 < 0.98 {
		t.Errorf("loopback bench: %+v", r)
	}
	if r := rs[0]; !strings.Contains(r.HybridMethod, "feedback=3") {
		t.Errorf("the hybrid queries ran %q, not the default fusion with feedback", r.HybridMethod)
	}
	// --fusion times another fusion: without feedback, or rrf. The bench
	// wraps the embedder (its vectors are computed beforehand) and must
	// still weigh it as search does for users: calibrated on the store.
	for spec, want := range map[string]string{"relative:feedback=0": ", calibrated)", "rrf:k=20": "rrf(k=20, feedback=3)"} {
		out = mustRun(t, "bench", "--corpora", "300", "--queries", "10", "--embedders", "randproj:dim=32", "--fusion", spec, "--json")
		rs = nil
		if err := json.Unmarshal([]byte(out), &rs); err != nil || len(rs) != 1 {
			t.Fatalf("--fusion %s: %v\n%s", spec, err, out)
		}
		if !strings.Contains(rs[0].HybridMethod, want) || rs[0].CalibrateSeconds <= 0 {
			t.Errorf("--fusion %s: the hybrid queries ran %q, want %q (calibration %.3f s)", spec, rs[0].HybridMethod, want, rs[0].CalibrateSeconds)
		}
	}
	if _, _, err := runCLI(t, "bench", "--corpora", "300", "--fusion", "relative:feedback=99"); err == nil {
		t.Error("a bad --fusion accepted")
	}
	if _, _, err := runCLI(t, "bench", "--corpora", "lots"); err == nil {
		t.Error("bad corpus accepted")
	}
	if _, _, err := runCLI(t, "bench", "--corpora", "300", "--embedders", "loopback:openai:x"); err == nil {
		t.Error("loopback of an openai embedder accepted")
	}
}

// BenchmarkStore runs the bench on the corpora in $RAGMEM_BENCH_CORPORA
// (default 10k) with the lexical embedder: go test -run xxx -bench Store
// ./cmd/ragmem. Larger ones (100k, 1m, scifact) and other embedders are
// `ragmem bench` runs; see docs/benchmarks.md.
func BenchmarkStore(b *testing.B) {
	corpora := os.Getenv("RAGMEM_BENCH_CORPORA")
	if corpora == "" {
		corpora = "10k"
	}
	for _, name := range strings.Split(corpora, ",") {
		b.Run(name, func(b *testing.B) {
			var r benchResult
			for b.Loop() {
				rs, err := runBench(context.Background(), benchOptions{corpora: []string{name}, queries: 200, words: 110, workDir: b.TempDir(), batch: 1000, writers: 2, chromemTo: 200000})
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

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

// TestBenchCommand runs a small bench with the peers and the export and
// checks that every figure is present and plausible.
func TestBenchCommand(t *testing.T) {
	exp := t.TempDir()
	out := mustRun(t, "bench", "--corpora", "800", "--queries", "30", "--peers", "--export", exp, "--work-dir", t.TempDir(), "--json")
	var rs []benchResult
	if err := json.Unmarshal([]byte(out), &rs); err != nil {
		t.Fatalf("bench --json: %v\n%s", err, out)
	}
	if len(rs) != 1 {
		t.Fatalf("%d results", len(rs))
	}
	r := rs[0]
	if r.Documents != 800 || r.Chunks < 800 || r.Dimension != embed.Default().Dimension() || r.Embedder != embed.Default().Identity() {
		t.Fatalf("corpus figures: %+v", r)
	}
	for name, l := range map[string]latency{"hybrid": r.Hybrid, "vector": r.Vector, "fulltext": r.FullText, "top50": r.VectorTop50} {
		if l.N == 0 || l.P50 <= 0 || l.P50 > l.P95 || l.P95 > l.P99 {
			t.Errorf("%s latency %+v", name, l)
		}
	}
	if r.Recall10 < 0.98 || r.NDCG10["fulltext"] < 0.5 || r.NDCG10["hybrid"] < 0.5 {
		t.Errorf("quality: recall %.3f nDCG %v", r.Recall10, r.NDCG10)
	}
	if r.Chromem == nil || r.HybridSpeedup <= 0 || r.ColdOpenSeconds <= 0 || r.DiskBytes <= 0 || r.ChunksPerSec <= 0 {
		t.Errorf("figures missing: %+v", r)
	}
	if len(r.Peers) != 2 || r.Peers[1].NDCG10 < 0.5 {
		t.Errorf("peers: %+v", r.Peers)
	}
	for _, f := range []string{"chunks.jsonl", "chunk_vectors.f32", "queries.jsonl", "query_vectors.f32", "meta.json"} {
		st, err := os.Stat(filepath.Join(exp, "800", f))
		if err != nil || st.Size() == 0 {
			t.Errorf("export %s: %v", f, err)
		}
	}
	if st, _ := os.Stat(filepath.Join(exp, "800", "chunk_vectors.f32")); st != nil && st.Size() != int64(r.Chunks*r.Dimension*4) {
		t.Errorf("chunk_vectors.f32 has %d bytes for %d chunks", st.Size(), r.Chunks)
	}
	text := mustRun(t, "--embedder", "lexical:dim=384", "bench", "--corpora", "300", "--queries", "10")
	if !strings.Contains(text, "hybrid    p50/p95/p99 ms") || !strings.Contains(text, "cold open") || !strings.Contains(text, "384 dimensions") {
		t.Errorf("table output:\n%s", text)
	}
	if _, _, err := runCLI(t, "bench", "--corpora", "lots"); err == nil {
		t.Error("bad corpus accepted")
	}
}

// BenchmarkStore runs the bench on the corpora in $RAGMEM_BENCH_CORPORA
// (default 10k): go test -run xxx -bench Store ./cmd/ragmem. Larger ones
// (100k, 1m, scifact) are `ragmem bench` runs; see docs/benchmarks.md.
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

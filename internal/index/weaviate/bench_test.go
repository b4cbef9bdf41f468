package weaviate_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math/rand"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/ragmem/ragmem/index"
	"github.com/ragmem/ragmem/index/driver"
	"github.com/ragmem/ragmem/internal/index/engine"
	"github.com/ragmem/ragmem/internal/index/weaviate"
	"github.com/ragmem/ragmem/internal/wvtest"
	"github.com/ragmem/ragmem/search"
)

// benchDocs returns n single-chunk documents of about 250 words drawn from a
// Zipf distribution over a synthetic vocabulary (as search's benchmarks do).
func benchDocs(n int, seed int64) ([]index.Document, func(int) string) {
	r := rand.New(rand.NewSource(42))
	vocab := make([]string, 20000)
	for i := range vocab {
		b := make([]byte, 3+r.Intn(7))
		for j := range b {
			b[j] = byte('a' + r.Intn(26))
		}
		vocab[i] = string(b)
	}
	z := rand.NewZipf(rand.New(rand.NewSource(seed)), 1.1, 2, uint64(len(vocab)-1))
	text := func(words int) string {
		var sb strings.Builder
		for i := 0; i < words; i++ {
			sb.WriteString(vocab[z.Uint64()])
			if i%14 == 13 {
				sb.WriteString(". ")
			} else {
				sb.WriteByte(' ')
			}
		}
		return sb.String()
	}
	out := make([]index.Document, n)
	for i := range out {
		out[i] = index.Document{SourceURL: fmt.Sprintf("https://bench.example/%d", i), Title: text(5), Content: text(250)}
	}
	return out, text
}

// benchURL is the server the benchmarks use: $RAGMEM_WEAVIATE_URL itself
// when set (scripts/weaviate.sh test), so that no test proxy sits in the
// REST path, else a server started for b.
func benchURL(b *testing.B) string {
	if u := os.Getenv("RAGMEM_WEAVIATE_URL"); u != "" {
		return u
	}
	return wvtest.URL(b)
}

// BenchmarkBackendQuery runs the same queries over the same data on the
// local backend and on Weaviate, in each search mode (top 5, no threshold):
// the cost of the switch. Hybrid on Weaviate is its native fusion.
func BenchmarkBackendQuery(b *testing.B) {
	ctx := context.Background()
	url := benchURL(b)
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	for _, n := range []int{1000, 10000} {
		ds, text := benchDocs(n, 2)
		queries := make([]string, 64)
		for i := range queries {
			queries[i] = text(4)
		}
		wb, err := weaviate.Open(ctx, url, &weaviate.Options{Namespace: fmt.Sprintf("bench%d_%d", n, os.Getpid()), Logger: quiet})
		if err != nil {
			b.Fatal(err)
		}
		stores := map[string]*engine.Index{}
		for name, opts := range map[string]*engine.Options{
			"local":    {Logger: quiet},
			"weaviate": {Logger: quiet, Backend: wb},
		} {
			ix, err := engine.Open(ctx, b.TempDir(), opts)
			if err != nil {
				b.Fatal(err)
			}
			for lo := 0; lo < len(ds); lo += 500 {
				if _, err := ix.AddMany(ctx, ds[lo:min(lo+500, len(ds))]); err != nil {
					b.Fatal(err)
				}
			}
			stores[name] = ix
		}
		// Weaviate keeps fresh writes in memtables and flushes them after 60 s
		// without writes (PERSISTENCE_FLUSH_IDLE_MEMTABLES_AFTER); BM25 over
		// unflushed data is far slower. Measure the steady state.
		time.Sleep(65 * time.Second)
		for _, mode := range []search.Mode{search.Hybrid, search.FullText, search.Vector} {
			for _, name := range []string{"local", "weaviate"} {
				ix := stores[name]
				b.Run(fmt.Sprintf("chunks=%d/mode=%s/backend=%s", n, mode, name), func(b *testing.B) {
					i := 0
					for b.Loop() {
						if _, err := search.Search(ctx, ix, queries[i%len(queries)], &search.Options{Mode: mode, SimilarityThreshold: -1}); err != nil {
							b.Fatal(err)
						}
						i++
					}
				})
			}
		}
		_ = wb.Drop(ctx)
		for _, ix := range stores {
			ix.Close()
		}
	}
}

// BenchmarkApply measures what indexing a document costs on Weaviate: one
// Apply that replaces a source of 20 chunks (about 250 words and a
// 384-dimensional vector each) by a new version under new ids, as
// re-indexing an edited document does: the intent protocol's lookups, the
// batch write, the commit and the deletion of the old chunks.
func BenchmarkApply(b *testing.B) {
	ctx := context.Background()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	wb, err := weaviate.Open(ctx, benchURL(b), &weaviate.Options{Namespace: fmt.Sprintf("benchapply_%d", os.Getpid()), Logger: quiet})
	if err != nil {
		b.Fatal(err)
	}
	defer wb.Drop(ctx)
	_, text := benchDocs(0, 3)
	r := rand.New(rand.NewSource(7))
	const chunks, dim, sources = 20, 384, 16
	batch := func(i int) *driver.Batch {
		src := fmt.Sprintf("https://apply.example/%d", i%sources)
		bt := &driver.Batch{DeleteSources: []string{src}}
		for p := 0; p < chunks; p++ {
			v := make([]float32, dim)
			for j := range v {
				v[j] = float32(r.NormFloat64())
			}
			bt.Put = append(bt.Put, index.Record{ID: fmt.Sprintf("%s#%d-%d", src, i, p), SourceURL: src, Title: "Apply benchmark",
				Content: text(250), DocType: index.DocKnowledge, Position: p, Tokens: 300, CreatedAt: time.Now().UTC(), Vector: v})
		}
		return bt
	}
	for i := 0; i < sources; i++ { // every source exists: each Apply replaces one
		if err := wb.Apply(ctx, batch(i)); err != nil {
			b.Fatal(err)
		}
	}
	i := sources
	for b.Loop() {
		b.StopTimer()
		bt := batch(i)
		b.StartTimer()
		if err := wb.Apply(ctx, bt); err != nil {
			b.Fatal(err)
		}
		i++
	}
	b.ReportMetric(float64(chunks*b.N)/b.Elapsed().Seconds(), "chunks/s")
}

// BenchmarkQueryLatency measures Weaviate's query latency alone, in each
// search mode (top 5, no threshold), over the 1,000 documents of
// BenchmarkBackendQuery. The collection (namespace benchlat_1000) is kept
// on the server, so that a second run, or a run of another build of the
// backend against the same server, measures the same data without loading
// it again: the way to compare two builds is to alternate them on one
// server (scripts/weaviate.sh start, then RAGMEM_WEAVIATE_URL=...).
func BenchmarkQueryLatency(b *testing.B) {
	ctx := context.Background()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	const n = 1000
	wb, err := weaviate.Open(ctx, benchURL(b), &weaviate.Options{Namespace: fmt.Sprintf("benchlat_%d", n), Logger: quiet})
	if err != nil {
		b.Fatal(err)
	}
	ix, err := engine.Open(ctx, b.TempDir(), &engine.Options{Logger: quiet, Backend: wb})
	if err != nil {
		b.Fatal(err)
	}
	defer ix.Close()
	ds, text := benchDocs(n, 2)
	if st, err := wb.Stats(ctx); err != nil {
		b.Fatal(err)
	} else if st.Records < n {
		for lo := 0; lo < len(ds); lo += 500 {
			if _, err := ix.AddMany(ctx, ds[lo:min(lo+500, len(ds))]); err != nil {
				b.Fatal(err)
			}
		}
		time.Sleep(65 * time.Second) // the memtable flush: see BenchmarkBackendQuery
	}
	queries := make([]string, 64)
	for i := range queries {
		queries[i] = text(4)
	}
	for _, mode := range []search.Mode{search.Hybrid, search.FullText, search.Vector} {
		b.Run(fmt.Sprintf("mode=%s", mode), func(b *testing.B) {
			i := 0
			for b.Loop() {
				if _, err := search.Search(ctx, ix, queries[i%len(queries)], &search.Options{Mode: mode, SimilarityThreshold: -1}); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
	}
}

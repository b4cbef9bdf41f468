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
	"github.com/ragmem/ragmem/index/weaviate"
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

// BenchmarkBackendQuery runs the same queries over the same data on the
// local backend and on Weaviate, in each search mode (top 5, no threshold):
// the cost of the switch. Hybrid on Weaviate is its native fusion.
func BenchmarkBackendQuery(b *testing.B) {
	ctx := context.Background()
	url := wvtest.URL(b)
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
		stores := map[string]*index.Index{}
		for name, opts := range map[string]*index.Options{
			"local":    {Logger: quiet},
			"weaviate": {Logger: quiet, Backend: wb},
		} {
			ix, err := index.Open(ctx, b.TempDir(), opts)
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

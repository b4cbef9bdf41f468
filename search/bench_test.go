package search_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math/rand"
	"strings"
	"sync"
	"testing"

	"github.com/ragmem/ragmem/index"
	"github.com/ragmem/ragmem/internal/index/engine"
	"github.com/ragmem/ragmem/search"
)

var bctx = context.Background()

// zipfWords draws words from a synthetic vocabulary with a Zipf distribution,
// so that term statistics look like natural text.
type zipfWords struct {
	z     *rand.Zipf
	vocab []string
}

// newZipf draws with seed from the one shared vocabulary, so that queries
// and documents made with different seeds share their words.
func newZipf(seed int64) *zipfWords {
	r := rand.New(rand.NewSource(42))
	vocab := make([]string, 20000)
	for i := range vocab {
		n := 3 + r.Intn(7)
		b := make([]byte, n)
		for j := range b {
			b[j] = byte('a' + r.Intn(26))
		}
		vocab[i] = string(b)
	}
	draw := rand.New(rand.NewSource(seed))
	return &zipfWords{z: rand.NewZipf(draw, 1.1, 2, uint64(len(vocab)-1)), vocab: vocab}
}

func (z *zipfWords) text(words int) string {
	var b strings.Builder
	for i := 0; i < words; i++ {
		b.WriteString(z.vocab[z.z.Uint64()])
		if i%14 == 13 {
			b.WriteString(". ")
		} else {
			b.WriteByte(' ')
		}
	}
	return b.String()
}

// docs returns n single-chunk documents of about 250 words.
func docs(n int, seed int64) []index.Document {
	z := newZipf(seed)
	out := make([]index.Document, n)
	for i := range out {
		out[i] = index.Document{SourceURL: fmt.Sprintf("https://bench.example/%d", i), Title: z.text(5), Content: z.text(250)}
	}
	return out
}

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func indexAll(tb testing.TB, dir string, ds []index.Document) *engine.Index {
	ix, err := engine.Open(bctx, dir, &engine.Options{Logger: quiet()})
	if err != nil {
		tb.Fatal(err)
	}
	for lo := 0; lo < len(ds); lo += 500 {
		if _, err := ix.AddMany(bctx, ds[lo:min(lo+500, len(ds))]); err != nil {
			tb.Fatal(err)
		}
	}
	return ix
}

// BenchmarkIndex measures indexing throughput (chunk, embed, write both
// indexes durably) in batches of 500 documents.
func BenchmarkIndex(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		ds := docs(n, 1)
		b.Run(fmt.Sprintf("chunks=%d", n), func(b *testing.B) {
			for b.Loop() {
				ix := indexAll(b, b.TempDir(), ds)
				ix.Close()
			}
			b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "chunks/s")
		})
	}
}

var (
	stores   = map[int]*engine.Index{}
	storesMu sync.Mutex
)

func store(b *testing.B, n int) *engine.Index {
	storesMu.Lock()
	defer storesMu.Unlock()
	if ix, ok := stores[n]; ok {
		return ix
	}
	ix := indexAll(b, b.TempDir(), docs(n, 2))
	stores[n] = ix
	b.Cleanup(func() {})
	return ix
}

// BenchmarkQuery measures one query in each mode over stores of 1k and 10k
// chunks (top 5; hybrid over candidate pools of 100), and hybrid without
// feedback (mode=hybrid-nofeedback) for what feedback costs.
func BenchmarkQuery(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		ix := store(b, n)
		z := newZipf(3)
		queries := make([]string, 64)
		for i := range queries {
			queries[i] = z.text(4)
		}
		for _, mode := range []search.Mode{search.Hybrid, "hybrid-nofeedback", search.FullText, search.Vector} {
			opts := search.Options{Mode: mode, SimilarityThreshold: -1}
			if mode == "hybrid-nofeedback" {
				opts.Mode, opts.Feedback = search.Hybrid, -1
			}
			b.Run(fmt.Sprintf("mode=%s/chunks=%d", mode, n), func(b *testing.B) {
				i := 0
				for b.Loop() {
					o := opts
					if _, err := search.Search(bctx, ix, queries[i%len(queries)], &o); err != nil {
						b.Fatal(err)
					}
					i++
				}
			})
		}
	}
}

// BenchmarkCalibrate measures one calibration of a store of 10k chunks
// (200 pseudo-questions, both rankings, the weight grid and the feedback
// pass), which the store runs once and again when it has grown by a quarter.
func BenchmarkCalibrate(b *testing.B) {
	ix := store(b, 10000)
	for b.Loop() {
		if _, err := search.Calibrate(bctx, ix, &search.CalibrateOptions{DocTypes: []string{index.DocKnowledge}}); err != nil {
			b.Fatal(err)
		}
	}
}

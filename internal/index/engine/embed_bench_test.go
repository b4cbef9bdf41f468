package engine

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/ragmem/ragmem/index"

	"github.com/ragmem/ragmem/internal/benchdata"
	"github.com/ragmem/ragmem/internal/embed"
)

// newDenseServer is an OpenAI-compatible server that answers with
// 768-dimensional randproj vectors after delay per request.
func newDenseServer(tb testing.TB, delay time.Duration) *openAIServer {
	return startOpenAIServer(tb, &openAIServer{emb: embed.NewRandProj(nil), delay: delay})
}

// timedEmbedder adds up the time spent in Embed. It unwraps, so that the
// index still sees an embedder that parallelises itself.
type timedEmbedder struct {
	embed.Embedder
	took time.Duration
}

func (t *timedEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	t0 := time.Now()
	defer func() { t.took += time.Since(t0) }()
	return t.Embedder.Embed(ctx, texts)
}

func (t *timedEmbedder) Unwrap() embed.Embedder { return t.Embedder }

// benchDelay is the server's time per request: $RAGMEM_BENCH_EMBED_DELAY,
// else 50 ms.
func benchDelay(b *testing.B) time.Duration {
	d := 50 * time.Millisecond
	if v := os.Getenv("RAGMEM_BENCH_EMBED_DELAY"); v != "" {
		var err error
		if d, err = time.ParseDuration(v); err != nil {
			b.Fatal(err)
		}
	}
	return d
}

func sciFactDocs(b *testing.B) []index.Document {
	dir := benchdata.SciFactDir()
	if dir == "" {
		b.Skip("no SciFact collection (shared/eval/scifact or $RAGMEM_SCIFACT_DIR)")
	}
	docs, _, err := benchdata.LoadBEIR(dir)
	if err != nil {
		b.Fatal(err)
	}
	out := make([]index.Document, len(docs))
	for i, d := range docs {
		out[i] = index.Document{SourceURL: "scifact://" + d.ID, Title: d.Title, Content: d.Text}
	}
	return out
}

// BenchmarkIndexSciFactOpenAI indexes SciFact through an OpenAI-compatible
// loopback server that takes a fixed time per request, with one request at
// a time and with several in flight:
//
//	go test ./index -run XXX -bench IndexSciFactOpenAI -benchtime 1x
func BenchmarkIndexSciFactOpenAI(b *testing.B) {
	docs := sciFactDocs(b)
	srv := newDenseServer(b, benchDelay(b))
	quiet := slog.New(slog.DiscardHandler)
	index := func(b *testing.B, conc int) (chunks int, took, embedding time.Duration) {
		o, err := embed.NewOpenAI(embed.OpenAIOptions{Model: "dense", BaseURL: srv.URL + "/v1", APIKey: "k", Concurrency: conc, Dimensions: 768})
		if err != nil {
			b.Fatal(err)
		}
		emb := &timedEmbedder{Embedder: o}
		defer func() { embedding = emb.took }()
		ix, err := Open(ctx, b.TempDir(), &Options{Embedder: emb, Logger: quiet})
		if err != nil {
			b.Fatal(err)
		}
		defer ix.Close()
		t0 := time.Now()
		res, err := ix.AddMany(ctx, docs)
		took = time.Since(t0)
		if err != nil {
			b.Fatal(err)
		}
		for _, r := range res {
			chunks += r.Chunks
		}
		return chunks, took, 0
	}
	index(b, 8) // fills the server's memo: its own CPU time is not measured
	for _, conc := range []int{1, 2, 4, 8} {
		b.Run(fmt.Sprintf("concurrency=%d", conc), func(b *testing.B) {
			var chunks int
			var took, embedding time.Duration
			srv.peak.Store(0)
			before := srv.calls.Load()
			for b.Loop() {
				c, d, e := index(b, conc)
				chunks += c
				took += d
				embedding += e
			}
			b.ReportMetric(float64(chunks)/took.Seconds(), "chunks/s")
			b.ReportMetric(embedding.Seconds()/float64(b.N), "embed-s/op")
			b.ReportMetric(float64(srv.calls.Load()-before)/float64(b.N), "requests/op")
			b.ReportMetric(float64(srv.peak.Load()), "peak-inflight")
		})
	}
}

// BenchmarkRepeatedQuery asks one question again and again through an
// OpenAI-compatible embedder whose server takes a fixed time per request,
// with the query cache and without:
//
//	go test ./index -run XXX -bench RepeatedQuery
func BenchmarkRepeatedQuery(b *testing.B) {
	srv := newDenseServer(b, benchDelay(b))
	quiet := slog.New(slog.DiscardHandler)
	for _, cached := range []bool{true, false} {
		b.Run(fmt.Sprintf("cache=%v", cached), func(b *testing.B) {
			emb, err := embed.NewOpenAI(embed.OpenAIOptions{Model: "dense", BaseURL: srv.URL + "/v1", APIKey: "k", Dimensions: 768})
			if err != nil {
				b.Fatal(err)
			}
			opts := &Options{Embedder: emb, Logger: quiet}
			if !cached {
				opts.QueryCache = embed.NewQueryCache(&embed.QueryCacheOptions{MaxEntries: -1})
			}
			ix, err := Open(ctx, b.TempDir(), opts)
			if err != nil {
				b.Fatal(err)
			}
			defer ix.Close()
			for i := range 200 {
				if _, err := ix.Add(ctx, index.Document{SourceURL: fmt.Sprint("doc://", i), Content: longDoc(120, fmt.Sprint("topic ", i))}); err != nil {
					b.Fatal(err)
				}
			}
			before := srv.calls.Load()
			for b.Loop() {
				if _, err := ix.Vector(ctx, "which documents talk about topic 42", 10, index.Filter{}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(srv.calls.Load()-before)/float64(b.N), "requests/op")
		})
	}
}

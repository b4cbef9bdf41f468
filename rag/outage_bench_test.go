package rag

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/ragmem/ragmem/index"
	"github.com/ragmem/ragmem/internal/embed"
	"github.com/ragmem/ragmem/internal/embed/embedtest"
	"github.com/ragmem/ragmem/search"
)

// BenchmarkSearchDuringOutage measures a hybrid search against an
// OpenAI-compatible embedding server (a loopback test server) when it
// works, and when it is gone and the circuit breaker is open: the search
// then answers from BM25 alone, without waiting for the embedder.
//
//	go test -run xxx -bench SearchDuringOutage -benchtime 200x ./rag
func BenchmarkSearchDuringOutage(b *testing.B) {
	ctx := context.Background()
	emb := embedtest.New(b, 256)
	eng, err := Open(ctx, b.TempDir(), &Options{Embedder: emb.Embedder(b, -1), Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Breaker: &embed.BreakerOptions{OpenFor: time.Hour}})
	if err != nil {
		b.Fatal(err)
	}
	defer eng.Close()
	var docs []index.Document
	for i := 0; i < 2000; i++ {
		docs = append(docs, index.Document{SourceURL: fmt.Sprintf("https://birds.example/%d", i),
			Content: fmt.Sprintf("Bird %d: the heron number %d wades in water %d and eats fish %d near the reeds.", i, i%97, i%31, i%13)})
	}
	if _, err := eng.IndexDocuments(ctx, docs); err != nil {
		b.Fatal(err)
	}
	// Every query is new: one embedded before is answered from the query
	// cache, embedder or not.
	n := 0
	run := func(b *testing.B, want search.Mode) {
		for i := 0; i < b.N; i++ {
			n++
			_, rep, err := eng.RetrieveReport(ctx, fmt.Sprintf("heron %d fish reeds %d", n%97, n), nil)
			if err != nil || rep.Mode != want {
				b.Fatalf("%+v %v", rep, err)
			}
		}
	}
	b.Run("healthy", func(b *testing.B) { run(b, search.Hybrid) })
	emb.Set(embedtest.Refused)
	for i := 0; i < embed.DefaultBreakerFailures; i++ {
		eng.Retrieve(ctx, "open the breaker", nil)
	}
	if eng.Store().EmbedderState().State != "open" {
		b.Fatalf("breaker: %+v", eng.Store().EmbedderState())
	}
	b.Run("embedder-down", func(b *testing.B) { run(b, search.FullText) })
}

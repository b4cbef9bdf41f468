package ragmemtest

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/ragmem/ragmem/chunk"
	"github.com/ragmem/ragmem/internal/embed"
	"github.com/ragmem/ragmem/internal/index/local"
	"github.com/ragmem/ragmem/rag"
)

// EngineOptions configure NewEngine. A nil *EngineOptions means all
// defaults.
type EngineOptions struct {
	// Embedder embeds chunks and queries. Default the offline lexical
	// embedder, as rag.Open.
	Embedder embed.Embedder
	// Config is the RAG configuration. Zero fields: rag.DefaultConfig.
	Config rag.Config
	// Chunking sizes the chunks. Default chunk defaults.
	Chunking *chunk.Options
	// Now is the engine's clock. Default time.Now.
	Now func() time.Time
	// Logger receives the engine's logs. Default: discarded.
	Logger *slog.Logger
	// QueryCache caches query embeddings. Default: a cache of the engine's
	// own, as rag.Open.
	QueryCache *embed.QueryCache
}

// OpenEngine opens an engine whose store lives in memory only: the local
// backend (records and vectors in its snapshots and journal, the vector
// index and a bleve BM25 index, all on an in-memory file system), no file written, no lock taken,
// background indexing queued in memory. It opens in milliseconds and Close
// discards it. The caller closes it.
func OpenEngine(ctx context.Context, opts *EngineOptions) (*rag.Engine, error) {
	var o EngineOptions
	if opts != nil {
		o = *opts
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	lb, err := local.Open(ctx, "ragmemtest", &local.Options{InMemory: true, Logger: o.Logger})
	if err != nil {
		return nil, fmt.Errorf("ragmemtest: open an in-memory store: %w", err)
	}
	e, err := rag.Open(ctx, "", &rag.Options{Backend: lb, Embedder: o.Embedder, Config: o.Config, Chunking: o.Chunking, Now: o.Now, Logger: o.Logger, QueryCache: o.QueryCache})
	if err != nil {
		_ = lb.Close()
		return nil, fmt.Errorf("ragmemtest: open the engine: %w", err)
	}
	return e, nil
}

// NewEngine is OpenEngine for a test: it fails the test if the engine
// cannot be opened, and closes it when the test ends.
func NewEngine(tb testing.TB, opts *EngineOptions) *rag.Engine {
	tb.Helper()
	e, err := OpenEngine(context.Background(), opts)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = e.Close() })
	return e
}

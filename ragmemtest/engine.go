package ragmemtest

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/ragmem/ragmem/chunk"
	"github.com/ragmem/ragmem/embed"
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
}

// NewEngine opens an engine for a test and closes it when the test ends.
func NewEngine(tb testing.TB, opts *EngineOptions) *rag.Engine {
	tb.Helper()
	var o EngineOptions
	if opts != nil {
		o = *opts
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	e, err := rag.Open(context.Background(), tb.TempDir(), &rag.Options{Embedder: o.Embedder, Config: o.Config, Chunking: o.Chunking, Now: o.Now, Logger: o.Logger})
	if err != nil {
		tb.Fatalf("ragmemtest: open engine: %v", err)
	}
	tb.Cleanup(func() { _ = e.Close() })
	return e
}

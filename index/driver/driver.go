// Package driver defines the storage backend interface behind the engine
// (internal/index/engine). The records it stores are the data model of
// package index (index.Record, index.Filter, index.SourceInfo).
//
// A backend stores chunk records (text, metadata and vector) and answers
// BM25 and vector queries over them. The local backend (index/local: its own
// snapshots and journal, index/vecindex and bleve) is the default; other backends (for example a Weaviate cluster)
// implement the same interface and must pass the conformance suite in
// index/indextest.
//
// Backends are used by one engine.Index at a time but must be safe for
// concurrent use by many goroutines: searches may run while Apply runs.
package driver

import (
	"context"
	"errors"
	"time"

	"github.com/ragmem/ragmem/index"
)

// Errors shared by every backend. Backends wrap them with %w.
var (
	ErrClosed   = errors.New("index: store is closed")
	ErrNotFound = errors.New("index: not found")
	ErrInvalid  = errors.New("index: invalid record")
	ErrCorrupt  = errors.New("index: corrupt data")
)

// Batch is one atomic mutation: every record of DeleteSources and every id in
// DeleteIDs is removed, then Put is stored (overwriting equal ids). A backend
// applies a Batch entirely or not at all, and it is durable once Apply returns nil.
type Batch struct {
	DeleteSources []string
	DeleteIDs     []string
	Put           []index.Record
}

// Empty reports whether the batch changes nothing.
func (b *Batch) Empty() bool {
	return b == nil || len(b.DeleteSources) == 0 && len(b.DeleteIDs) == 0 && len(b.Put) == 0
}

// Hit is one search result. Record.Vector is nil.
type Hit struct {
	Record index.Record `json:"record"`
	Score  float64      `json:"score"` // BM25 score (full text) or cosine similarity (vector)
}

// Stats describes a store.
type Stats struct {
	Records   int       `json:"records"`           // chunks stored
	Sources   int       `json:"sources"`           // distinct sources
	SizeBytes int64     `json:"sizeBytes"`         // bytes on disk (or reported by the server)
	LastSync  time.Time `json:"lastSync,omitzero"` // when the last mutation became durable; zero if none since open
}

// Backend is a storage backend. See the package comment for concurrency.
type Backend interface {
	// Apply performs b atomically and durably.
	Apply(ctx context.Context, b *Batch) error
	// Get returns the records with the given ids that exist, in the order asked.
	Get(ctx context.Context, ids []string) ([]index.Record, error)
	// Source returns every record of a source ordered by Position; none is not an error.
	Source(ctx context.Context, sourceURL string) ([]index.Record, error)
	// Sources lists sources matching f ordered by SourceURL, with the total count before paging.
	Sources(ctx context.Context, f index.Filter, offset, limit int) ([]index.SourceInfo, int, error)
	// Records returns all records matching f (vectors included), ordered by SourceURL then Position.
	Records(ctx context.Context, f index.Filter) ([]index.Record, error)
	// SearchText runs a BM25 query and returns at most k hits in descending score.
	SearchText(ctx context.Context, query string, k int, f index.Filter) ([]Hit, error)
	// SearchVector returns at most k hits with the highest cosine similarity to vec, descending.
	SearchVector(ctx context.Context, vec []float32, k int, f index.Filter) ([]Hit, error)
	// Meta reads a store-level setting (such as the embedder identity).
	Meta(ctx context.Context, key string) (string, bool, error)
	// SetMeta writes a store-level setting durably.
	SetMeta(ctx context.Context, key, value string) error
	// Stats describes the store.
	Stats(ctx context.Context) (Stats, error)
	// Close releases the store. Further calls return ErrClosed.
	Close() error
}

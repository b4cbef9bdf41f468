package rag

import (
	"context"
	"slices"

	"github.com/ragmem/ragmem/index"
	"github.com/ragmem/ragmem/index/driver"
	"github.com/ragmem/ragmem/internal/index/engine"
	"github.com/ragmem/ragmem/internal/index/local"
)

// The vocabulary of the store, as the adapters (server, mcpserver, agent,
// owner, the CLI) speak it. These are the index's own types, values and
// errors under the facade's name: an adapter that holds a rag.Document
// holds an index.Document, and errors.Is works across both names. The
// adapters import rag, never index (layout_test.go holds them to that), so
// that what they may do with the store is what the Engine offers.
//
// The plain values among them are shared read-only and copied to be
// changed.

// Documents, results and listings.
type (
	// Document is a source to index (see index.Document).
	Document = index.Document
	// Result reports what indexing one document did.
	Result = index.Result
	// Record is one stored chunk.
	Record = index.Record
	// SourceInfo summarises one stored source.
	SourceInfo = index.SourceInfo
	// Stats describes the store.
	Stats = index.Stats
	// Removal reports what ForgetPage removed and cancelled.
	Removal = index.Removal
	// URLRules are the rules by which the store canonicalises source
	// URLs.
	URLRules = index.URLRules
	// EmbedderRecord is the embedder a store records (see
	// Options.EmbedderFor).
	EmbedderRecord = index.EmbedderRecord
	// Backend is a storage backend (see Options.Backend).
	// Implementations are safe for concurrent use.
	Backend = driver.Backend
)

// The kinds of source (Document.DocType).
const (
	DocKnowledge  = index.DocKnowledge  // a page or a file
	DocPreference = index.DocPreference // a preference of the user's profile
	DocMemory     = index.DocMemory     // an agent memory
)

// Filters.
type (
	// Filter restricts searches and listings; the zero Filter matches
	// everything.
	Filter = index.Filter
	// Expr is a filter expression (see ParseFilter).
	Expr = index.Expr
)

// ParseFilter parses a filter expression (see index.ParseFilter); the
// error wraps ErrBadFilter.
func ParseFilter(s string) (*Expr, error) { return index.ParseFilter(s) }

// CheckAttrs checks a document's attributes; the error wraps ErrBadAttrs.
func CheckAttrs(attrs map[string]string) error { return index.CheckAttrs(attrs) }

// ParseAttrs parses key=value pairs into attributes; the error wraps
// ErrBadAttrs.
func ParseAttrs(pairs []string) (map[string]string, error) { return index.ParseAttrs(pairs) }

// CanonicalURL is a URL as the store keys it under the default URL rules
// (an open store's own rules: Engine.CanonicalURL).
func CanonicalURL(raw string) string { return index.CanonicalURL(raw) }

// SourceIs is the expression "the source URL is u".
func SourceIs(u string) *Expr {
	return &Expr{Op: index.OpEq, Field: index.FieldSource, Values: []string{u}}
}

// SourceUnder is the expression "the source URL starts with prefix".
func SourceUnder(prefix string) *Expr {
	return &Expr{Op: index.OpPrefix, Field: index.FieldSource, Values: []string{prefix}}
}

// AllOf is the conjunction of parts, nil ones left out: nil when none is
// left, the one part when one is.
func AllOf(parts ...*Expr) *Expr {
	parts = slices.DeleteFunc(slices.Clone(parts), func(e *Expr) bool { return e == nil })
	switch len(parts) {
	case 0:
		return nil
	case 1:
		return parts[0]
	}
	return &Expr{Op: index.OpAnd, Args: parts}
}

// Background indexing (IndexPageAsync).
type (
	// Job is a background indexing job.
	Job = index.Job
	// JobState is a job's state.
	JobState = index.JobState
	// QueueStats counts the auto-indexer's work.
	QueueStats = index.QueueStats
	// QueueCheck is what CheckQueue found in a store's queue.
	QueueCheck = engine.QueueCheck
)

// The states of a job.
const (
	JobQueued    = index.JobQueued
	JobRunning   = index.JobRunning
	JobDone      = index.JobDone
	JobFailed    = index.JobFailed
	JobDead      = index.JobDead
	JobCancelled = index.JobCancelled
)

// DefaultMaxChunksPerDocument is the default of Options.MaxChunksPerDocument.
const DefaultMaxChunksPerDocument = engine.DefaultMaxChunksPerDocument

// Errors of the store, for errors.Is.
var (
	ErrClosed           = engine.ErrClosed           // the engine is closed
	ErrLocked           = local.ErrLocked            // another process holds the store
	ErrQueueLocked      = engine.ErrQueueLocked      // another process holds the store's indexing queue
	ErrEmptyDocument    = engine.ErrEmptyDocument    // a document with no text to index
	ErrBinaryContent    = engine.ErrBinaryContent    // a document that is binary data
	ErrTooManyChunks    = engine.ErrTooManyChunks    // a document past Options.MaxChunksPerDocument
	ErrQuotaExceeded    = engine.ErrQuotaExceeded    // the store's chunk or byte quota is full
	ErrBadAttrs         = index.ErrBadAttrs          // invalid document attributes
	ErrBadFilter        = index.ErrBadFilter         // an invalid filter expression
	ErrNoJob            = engine.ErrNoJob            // no such dead letter (RetryJob, DropJob)
	ErrEmbedderMismatch = engine.ErrEmbedderMismatch // the embedder is not the one the store was built with
	ErrReserved         = engine.ErrReserved         // what belongs to the memory or preference store (see reserved.go)
)

// CheckQueue inspects the indexing queue persisted in dir without changing
// it, or with repair mends it as opening the store would (see
// engine.CheckQueue). It fails with ErrQueueLocked while a process has the
// store open.
func CheckQueue(ctx context.Context, dir string, repair bool) (QueueCheck, error) {
	return engine.CheckQueue(ctx, dir, repair)
}

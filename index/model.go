// Package index is ragmem's data model: what is indexed (Document, and
// what indexing it did, Result), what is stored (Record, one chunk;
// SourceInfo, one source), how a search or a listing is restricted
// (Filter, and Expr, a filter expression: ParseFilter), the rules by which
// source URLs are canonicalised (URLRules), background jobs (Job, QueueStats)
// and the store's figures (Stats). rag.Engine and rag.Client take and return
// these types; a storage backend (index/driver) stores Records. The engine
// that indexes and searches is behind the door, in internal/index/engine.
package index

import (
	"time"

	"github.com/ragmem/ragmem/chunk"
	"github.com/ragmem/ragmem/internal/embed"
)

// Document is one source to index.
type Document struct {
	SourceURL string            // required: identifies the source (a URL, a file URL, "memory://...")
	Title     string            // title; for HTML, the page's (see extract.HTML) when empty
	Content   string            // the source text, Markdown or HTML
	Format    chunk.Format      // how to read Content; default chunk.Text
	DocType   string            // DocKnowledge (default), DocMemory, ...
	Attrs     map[string]string // extra metadata stored on every chunk
	// Extracted says that HTML Content is already a page's main content
	// (from extract.HTML or a document reader such as extract.PDF): it is
	// chunked as it is. Default false: HTML is first reduced to its main
	// content by extract.HTML, the one HTML path of every surface, so that
	// navigation, menus, footers and help text are not indexed.
	Extracted bool
}

// Result describes what indexing a document did.
type Result struct {
	SourceURL   string
	ContentHash string
	Chunks      int  // chunks now stored for the source
	Removed     int  // chunks of an earlier version that were replaced
	Unchanged   bool // same content was already indexed: nothing was written
	Superseded  bool // a later document in the same AddMany call had the same source URL
	Err         error
}

// EmbedderRecord is what a store records about the embedder that built it.
// It is a plain value, safe to read from several goroutines.
type EmbedderRecord struct {
	// Identity is the embedder's identity (embed.Embedder.Identity).
	Identity string
	// Spec is how to rebuild the embedder: kind, model, base URL and
	// options, never an API key or header. nil when the store records only
	// an identity that cannot be turned into a spec (a model2vec store
	// created before specs were recorded).
	Spec *embed.Spec
	// FromIdentity is set when the store was created before specs were
	// recorded and Spec was derived from the identity; an openai spec so
	// derived has no base URL. The next open with a matching embedder
	// records the full spec.
	FromIdentity bool
	// Omitted names the credentials left out of the recorded base URL
	// (its password, secret-looking query parameters): they must come
	// from the configuration when the embedder is rebuilt.
	Omitted []string
}

// Removal reports what removing one source did (rag.Engine.Forget).
type Removal struct {
	Chunks    int      // chunks deleted
	Cancelled []string // ids of the source's background jobs that were cancelled
}

// Stats describes the store.
type Stats struct {
	DocumentCount        int       `json:"documentCount"` // knowledge sources
	ChunkCount           int       `json:"chunkCount"`    // all records
	PreferenceCount      int       `json:"preferenceCount"`
	MemoryCount          int       `json:"memoryCount"`
	IndexSizeBytes       int64     `json:"indexSizeBytes"`
	LastSyncTime         time.Time `json:"lastSyncTime,omitzero"`
	EmbeddingModelLoaded bool      `json:"embeddingModelLoaded"`
	Embedder             string    `json:"embedder"`
	// EmbedderSpec is the embedder configuration the store records (no
	// credentials), "" for a store that records none.
	EmbedderSpec string                `json:"embedderSpec,omitempty"`
	Dimension    int                   `json:"dimension"`
	Queue        QueueStats            `json:"queue"`
	QueryCache   embed.QueryCacheStats `json:"queryCache"`
}

// JobState is the state of an IndexPageAsync job.
type JobState string

const (
	JobQueued  JobState = "queued"  // waiting (Attempts > 0: waiting to be tried again)
	JobRunning JobState = "running" // being indexed
	JobDone    JobState = "done"    // indexed, or found unchanged
	JobFailed  JobState = "failed"  // refused when queued: queue full, index closed, page not persisted
	JobDead    JobState = "dead"    // given up on and kept in the dead letters: see RetryJob, DropJob
	// JobCancelled: its source was removed (RemoveSource) before the page
	// was indexed; it is not indexed, now or after a restart.
	JobCancelled JobState = "cancelled"
)

// Job reports one IndexPageAsync call.
type Job struct {
	ID        string    `json:"id"`
	SourceURL string    `json:"sourceUrl"`
	State     JobState  `json:"state"`
	Chunks    int       `json:"chunks,omitempty"`
	Unchanged bool      `json:"unchanged,omitempty"` // same content was already indexed, or newer content since the page was queued
	Error     string    `json:"error,omitempty"`     // why it failed (for a job waiting again: why the last attempt failed)
	Attempts  int       `json:"attempts,omitempty"`  // attempts that failed, or that the end of the process interrupted
	Queued    time.Time `json:"queued"`
	Finished  time.Time `json:"finished,omitzero"`  // done, failed or moved to the dead letters
	RetryAt   time.Time `json:"retryAt,omitzero"`   // a job waiting after a failure is tried again from then
	Replayed  bool      `json:"replayed,omitempty"` // queued before the last restart and indexed after it
}

// QueueStats counts IndexPageAsync work since the store was opened.
type QueueStats struct {
	Depth     int   `json:"depth"`     // jobs waiting, Waiting included
	Waiting   int   `json:"waiting"`   // of Depth, jobs waiting to be tried again after a failure (an embedder outage, ...)
	Bytes     int64 `json:"bytes"`     // text bytes of the jobs waiting
	Enqueued  int64 `json:"enqueued"`  // jobs accepted
	Done      int64 `json:"done"`      // jobs indexed (or found unchanged)
	Unchanged int64 `json:"unchanged"` // of Done, those that were no-ops
	Failed    int64 `json:"failed"`    // jobs given up on: moved to the dead letters
	Retries   int64 `json:"retries"`   // attempts that failed and were tried again
	Dead      int   `json:"dead"`      // dead letters kept now (ListJobs(JobDead))
	Dropped   int64 `json:"dropped"`   // jobs refused: queue full, index closed, or the page could not be persisted
	Cancelled int64 `json:"cancelled"` // jobs cancelled because their source was removed (RemoveSource)
	Replayed  int64 `json:"replayed"`  // jobs queued before the last restart and replayed at Open
	Durable   bool  `json:"durable"`   // queued pages survive a crash (a queue directory is in use)
}

// WhereRemoval reports what rag.Engine.RemoveWhere removed (or, in a dry run, would
// remove).
type WhereRemoval struct {
	// Sources are the sources removed, ordered by URL.
	Sources []SourceInfo
	// Chunks is how many chunks they held.
	Chunks int
	// Kept are the sources that passed the filter but belong to the
	// memory or preference store (reserved): never removed here.
	Kept []SourceInfo
	// Cancelled are the ids of background jobs of the removed sources
	// that were cancelled (none in a dry run).
	Cancelled []string
}

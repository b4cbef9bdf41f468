package rag

import (
	"context"

	"github.com/ragmem/ragmem/index"

	"github.com/ragmem/ragmem/internal/index/local"
)

// What the adapters ask of the store, through the engine. Each method is
// the index's own (see engine.Index); it is here so that an adapter needs
// nothing but the engine.

// ListSources lists the sources that pass f, ordered by URL, from offset on (at
// most limit of them; 0 means all), with how many pass f in all.
func (e *Engine) ListSources(ctx context.Context, f index.Filter, offset, limit int) ([]index.SourceInfo, int, error) {
	return e.ix.Sources(ctx, f, offset, limit)
}

// Source returns the chunks of one source, in order (none when it is not
// stored).
func (e *Engine) Source(ctx context.Context, sourceURL string) ([]index.Record, error) {
	return e.ix.Source(ctx, sourceURL)
}

// CanonicalURL is u as the store keys it, under the store's URL rules:
// variants of one URL are one source.
func (e *Engine) CanonicalURL(u string) string { return e.ix.CanonicalURL(u) }

// SetURLRules sets and records the rules by which the store canonicalises
// source URLs.
func (e *Engine) SetURLRules(ctx context.Context, r index.URLRules) error {
	return e.ix.SetURLRules(ctx, r)
}

// CheckDocument tells, without writing anything, whether indexing d would
// be accepted: the chunks it makes, or the error indexing would fail with
// (ErrTooManyChunks, ErrEmptyDocument, ErrBinaryContent, ErrQuotaExceeded,
// ErrReserved). A surface that queues pages with IndexPageAsync calls it
// first, to refuse at once what the background worker would give up on.
func (e *Engine) CheckDocument(ctx context.Context, d index.Document) (int, error) {
	if err := checkWritable(&d); err != nil {
		return 0, err
	}
	return e.ix.Check(ctx, d)
}

// ListJobs lists the background indexing jobs in the given states (all when
// none is given).
func (e *Engine) ListJobs(states ...index.JobState) []index.Job { return e.ix.ListJobs(states...) }

// QueueStats counts the background indexer's work.
func (e *Engine) QueueStats() index.QueueStats { return e.ix.QueueStats() }

// RetryDeadJob queues a dead job again; ErrNoJob when there is none with that
// id.
func (e *Engine) RetryDeadJob(ctx context.Context, id string) (index.Job, error) {
	return e.ix.RetryJob(ctx, id)
}

// Chunks returns the number of chunks stored: cheaper than Stats, for
// gauges.
func (e *Engine) Chunks(ctx context.Context) (int, error) {
	st, err := e.ix.Backend().Stats(ctx)
	return st.Records, err
}

// EmbedderRecord returns the embedder the store records (ok false when it
// records none, or holds no records and so is not bound to one yet),
// without the cost of Stats.
func (e *Engine) EmbedderRecord(ctx context.Context) (*index.EmbedderRecord, bool, error) {
	return e.ix.EmbedderRecord(ctx)
}

// StoreExists reports whether dir holds a store of the local backend (the
// data directory's own), without opening or creating anything.
func StoreExists(dir string) bool { return local.Exists(dir) }

// Package rag is ragmem's facade: rag.Engine wires the store (index), the
// retriever (search), token budgets (budget) and the user profile (prefs)
// into what an agent needs before each model call: a <knowledge_context>
// block, sized to the model's window, delivered as its own untrusted-data
// message and never inside the system prompt.
//
// Memory (memory.go) is the contract every surface binds: the HTTP API,
// the MCP tools and the CLI call it, with its wire types. *Engine
// implements it in process; *Client implements it over the /v1 API of a
// `ragmem serve` or of a data directory's owner. The engine's own methods
// take and return the data model of package index (index.Document,
// index.Filter, index.Job, ...); the store's errors are rag's
// (rag.ErrTooManyChunks, ...), and layout_test.go keeps the bindings from
// importing the engine beneath (internal/index/engine).
//
//	mem, err := rag.Open(ctx, dir, nil) // or rag.Dial("http://127.0.0.1:7070", token, nil)
//	...
//	mem.Index(ctx, rag.DocumentsRequest{Documents: []rag.DocumentRequest{{URL: url, Title: title, Content: html, Format: "html"}}})
//	c, err := mem.BuildContext(ctx, rag.ContextRequest{Query: question, Model: "gpt-4o", SystemPrompt: sys})
//	messages := []rag.MessageJSON{{Role: "system", Content: sys + "\n" + rag.ReferenceRule}, c.Message, {Role: "user", Content: question}}
package rag

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ragmem/ragmem/index"

	"github.com/ragmem/ragmem/chunk"
	"github.com/ragmem/ragmem/index/driver"
	"github.com/ragmem/ragmem/internal/embed"
	"github.com/ragmem/ragmem/internal/extract"
	"github.com/ragmem/ragmem/internal/index/engine"
	"github.com/ragmem/ragmem/prefs"
	"github.com/ragmem/ragmem/search"
)

// Options configure Open. A nil *Options means all defaults. It is a plain
// value, copied by Open; the embedder, backend and cache it names must be
// safe for concurrent use.
type Options struct {
	Embedder  embed.Embedder // default: EmbedderFor, else the embedder the store records, else embed.Default()
	Backend   driver.Backend // default the local store in dir
	Chunking  *chunk.Options // default chunk defaults
	Config    Config         // zero fields: DefaultConfig
	Logger    *slog.Logger   // default slog.Default()
	QueueSize int            // IndexPageAsync queue bound; default 1024
	QueueDir  string         // where IndexPageAsync persists queued pages; default dir (see engine.Options.QueueDir)
	Now       func() time.Time

	// EmbedderFor builds the embedder from what the store records when
	// Embedder is nil (see engine.Options.EmbedderFor).
	EmbedderFor func(ctx context.Context, rec *index.EmbedderRecord) (embed.Embedder, error)
	// QueryCache caches query embeddings; default a cache of the store's own
	// (see engine.Options.QueryCache).
	QueryCache           *embed.QueryCache
	MaxChunksPerDocument int                   // see engine.Options; default engine.DefaultMaxChunksPerDocument
	QuotaChunks          int                   // see engine.Options; default 0, no quota
	QuotaBytes           int64                 // see engine.Options; default 0, no quota
	Breaker              *embed.BreakerOptions // the embedder's circuit breaker; default embed defaults
	// Extract bounds the extraction of a page's HTML (IndexPage); default
	// package extract's limits.
	Extract *extract.Options
}

func (opts *Options) withDefaults() Options {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return o
}

// Engine is the RAG memory. It is safe for concurrent use.
type Engine struct {
	degradedLog atomic.Int64 // when a degraded search was last logged (Unix ns)
	rerankLog   atomic.Int64 // when a skipped rerank was last logged (Unix ns)
	rerankers   sync.Map     // RerankConfig -> search.Reranker (rerank.go)

	ix      *engine.Index
	cal     *search.Calibrator // keeps the hybrid fusion weight measured on the store
	prefs   *prefs.Store
	cfg     Config
	extract extract.Options // IndexPage's extraction limits
	log     *slog.Logger
	now     func() time.Time
}

// Open opens (or creates) the memory in dir.
func Open(ctx context.Context, dir string, opts *Options) (*Engine, error) {
	o := opts.withDefaults()
	if err := o.Config.Rerank.check(); err != nil {
		return nil, err
	}
	ix, err := engine.Open(ctx, dir, &engine.Options{
		Embedder: o.Embedder, EmbedderFor: o.EmbedderFor, QueryCache: o.QueryCache, Backend: o.Backend, Chunking: o.Chunking,
		Logger: o.Logger, QueueSize: o.QueueSize, QueueDir: o.QueueDir, Now: o.Now,
		MaxChunksPerDocument: o.MaxChunksPerDocument, QuotaChunks: o.QuotaChunks, QuotaBytes: o.QuotaBytes, Breaker: o.Breaker,
	})
	if err != nil {
		return nil, err
	}
	return newEngine(ix, &o), nil
}

// newEngine wraps an open index. The engine owns it: Close closes it. With a
// semantic embedder the engine keeps the store's hybrid fusion weight
// calibrated in the background (search.Calibrator): at open when the store
// has no calibration, and again as it grows.
func newEngine(ix *engine.Index, opts *Options) *Engine {
	o := opts.withDefaults()
	e := &Engine{ix: ix, cal: search.NewCalibrator(ix, o.Logger), prefs: prefs.NewStore(ix), cfg: o.Config.withDefaults(), log: o.Logger, now: o.Now}
	if o.Extract != nil {
		e.extract = *o.Extract
	}
	return e
}

// changed tells the calibrator what indexing did.
func (e *Engine) changed(rs ...index.Result) {
	n := 0
	for _, r := range rs {
		if r.Err == nil && !r.Unchanged {
			n += r.Chunks + r.Removed
		}
	}
	e.cal.Changed(n)
}

// Store returns the underlying index (the engine behind the door,
// internal/index/engine), for the composition root and admin tools (wiring
// agent memory over the same store, checking its files). Adapters use the
// engine's own methods, which speak the data model of package index.
func (e *Engine) Store() *engine.Index { return e.ix }

// PreferenceStore returns the preference store.
func (e *Engine) PreferenceStore() *prefs.Store { return e.prefs }

// Config returns the engine's RAG configuration.
func (e *Engine) Config() Config { return e.cfg }

// IndexDocument indexes one document, replacing an earlier version of its source
// and doing nothing when its content is unchanged (Property 6). It writes
// knowledge: a memory, a preference or what belongs to them is refused
// with ErrReserved (reserved.go).
func (e *Engine) IndexDocument(ctx context.Context, d index.Document) (index.Result, error) {
	if err := checkWritable(&d); err != nil {
		return index.Result{SourceURL: d.SourceURL}, err
	}
	r, err := e.ix.Add(ctx, d)
	if err == nil {
		e.changed(r)
	}
	return r, err
}

// IndexDocuments indexes several documents in one atomic batch. A batch that
// holds a document Index refuses with ErrReserved is refused whole, before
// anything is written; a document that would replace a memory or a
// preference gets ErrReserved as its own Result.Err.
func (e *Engine) IndexDocuments(ctx context.Context, docs []index.Document) ([]index.Result, error) {
	for i := range docs {
		if err := checkWritable(&docs[i]); err != nil {
			return nil, err
		}
	}
	rs, err := e.ix.AddMany(ctx, docs)
	e.changed(rs...)
	return rs, err
}

// IndexPageAsync queues a page for background indexing and returns its job
// id at once (fire-and-forget; see engine.Index.IndexPageAsync). What Index
// refuses with ErrReserved is refused here, and not queued.
func (e *Engine) IndexPageAsync(d index.Document) (string, error) {
	if err := checkWritable(&d); err != nil {
		return "", err
	}
	id := e.ix.IndexPageAsync(d)
	e.cal.Changed(1) // its chunks are not known yet; a page counts as one
	return id, nil
}

// LookupJob reports an IndexPageAsync job.
func (e *Engine) LookupJob(id string) (index.Job, bool) { return e.ix.Job(id) }

// Remove deletes every chunk of a source. A source of the memory or
// preference store is refused with ErrReserved: preferences are removed
// through Preferences, memories through the memory store.
func (e *Engine) Remove(ctx context.Context, sourceURL string) (int, error) {
	if err := e.checkRemovable(ctx, sourceURL); err != nil {
		return 0, err
	}
	n, err := e.ix.Remove(ctx, sourceURL)
	e.cal.Changed(n)
	return n, err
}

// Retrieve retrieves chunks. What opts leaves zero comes from the engine's
// configuration (Config.SearchOptions).
// When the embedder is unavailable, a hybrid or vector search answers from
// BM25 alone (search.SearchReport says so; SearchReport returns that report).
func (e *Engine) Retrieve(ctx context.Context, query string, opts *search.Options) ([]search.Result, error) {
	res, _, err := e.RetrieveReport(ctx, query, opts)
	return res, err
}

// RetrieveReport is Search that also reports the mode actually used and, when
// it is not the one asked for, why: search.Report{Mode: "fulltext",
// Degraded: "embedder unavailable: ..."}. A degraded search is logged (at
// most once a minute), with the embedder's error. With a reranker
// configured (Config.Rerank) and none in opts, the engine's reranks the
// fused top results; the report says how many, or why it was skipped
// (logged at most once a minute too).
func (e *Engine) RetrieveReport(ctx context.Context, query string, opts *search.Options) ([]search.Result, search.Report, error) {
	o := e.cfg.SearchOptions(opts)
	if o.Reranker == nil {
		o.Reranker = e.reranker(e.cfg.Rerank)
		if o.RerankTop <= 0 {
			o.RerankTop = e.cfg.Rerank.Top
		}
	}
	res, rep, err := search.SearchReport(ctx, e.ix, query, &o)
	if rep.RerankSkipped != "" {
		now := e.now()
		if last := e.rerankLog.Load(); last == 0 || now.Sub(time.Unix(0, last)) > time.Minute {
			e.rerankLog.Store(now.UnixNano())
			e.log.Warn("rag: the reranker failed; results keep their fused order", "err", rep.RerankErr)
		}
	}
	if rep.Degraded != "" {
		now := e.now()
		if last := e.degradedLog.Load(); last == 0 || now.Sub(time.Unix(0, last)) > time.Minute {
			e.degradedLog.Store(now.UnixNano())
			st := e.ix.EmbedderState()
			e.log.Warn("rag: the embedder is unavailable; searches answer from BM25 alone until it is back",
				"asked", o.Mode, "err", rep.Err, "breaker", st.State, "retryAt", st.RetryAt)
		}
	}
	return res, rep, err
}

// Stats returns the store's statistics.
func (e *Engine) Stats(ctx context.Context) (index.Stats, error) { return e.ix.Stats(ctx) }

// Flush waits for queued background indexing.
func (e *Engine) Flush(ctx context.Context) error { return e.ix.Flush(ctx) }

// Close finishes queued indexing and a fusion calibration under way, then
// closes the store.
func (e *Engine) Close() error {
	e.cal.Close()
	return e.ix.Close()
}

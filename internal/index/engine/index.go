// Package engine is ragmem's persistent store, the machinery behind
// rag.Engine: it chunks documents (index.Document), embeds the chunks and
// writes them as records (index.Record) to a storage backend (by default
// internal/index/local:
// records and vectors in its own snapshots and journal, answered by the
// vector index and a bleve BM25 index, in a data directory).
//
// Indexing a source is idempotent (P6 in docs/spec.md): the same source
// URL with the same content is a no-op, and changed content replaces every
// chunk of the source in one atomic batch. The store remembers which embedder
// built it and refuses to open with another one, because vectors from two
// models are not comparable. It also records how to rebuild that embedder
// (kind, model, base URL and options, never an API key or header; see
// index.EmbedderRecord), so that opening it later needs no embedder at all.
//
// Query embeddings are cached ([embed.QueryCache]): a repeated question costs
// no embedder call.
//
// IndexPageAsync is the fire-and-forget path for agents and the browser
// extension: it returns a job id at once and indexes in the background
// through a bounded queue; errors are logged and counted, never returned to
// the caller. The queue is durable by default: a page is persisted before
// IndexPageAsync returns, a crash before it is indexed loses nothing (the
// next Open indexes it), and job ids stay valid across restarts. Flush and
// Close wait for the queue.
package engine

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/ragmem/ragmem/index"

	"github.com/ragmem/ragmem/chunk"
	"github.com/ragmem/ragmem/index/driver"
	"github.com/ragmem/ragmem/internal/embed"
	"github.com/ragmem/ragmem/internal/extract"
	"github.com/ragmem/ragmem/internal/index/local"
	"github.com/ragmem/ragmem/internal/reserved"
	"github.com/ragmem/ragmem/internal/wal"
)

// Errors returned by the index. Backend errors (driver.ErrClosed, ...) pass through wrapped.
var (
	ErrEmbedderMismatch = errors.New("index: embedder mismatch")
	ErrEmptyDocument    = errors.New("index: document has no text to index")
	ErrEmbedding        = errors.New("index: embedder failed")
	ErrNoSource         = errors.New("index: document has no source URL")
	// ErrTooManyChunks: a document would yield more than
	// Options.MaxChunksPerDocument chunks (or has too much structure for
	// that many; see chunk.Options.MaxChunks).
	ErrTooManyChunks = errors.New("index: document has too many chunks")
	// ErrQuotaExceeded: a write would take the store past
	// Options.QuotaChunks or Options.QuotaBytes.
	ErrQuotaExceeded = errors.New("index: quota exceeded")
	// ErrBinaryContent: a text or Markdown document whose content looks
	// like binary data (chunk.Binary), not text.
	ErrBinaryContent = errors.New("index: document is binary data, not text")
	// ErrReserved: a write or a removal of what belongs to the memory or
	// preference store (their document types, attributes, URL schemes or
	// sources; see internal/reserved). The index itself refuses a document
	// of another type that would replace one of their sources; rag.Engine
	// refuses the rest.
	ErrReserved = errors.New("index: reserved for memories and preferences")
	ErrClosed   = driver.ErrClosed
	ErrNotFound = driver.ErrNotFound
)

// Meta keys the index keeps in the backend.
const (
	metaEmbedder     = "embedder"
	metaDimension    = "dimension"
	metaEmbedderSpec = "embedder_spec" // an embedderRecordV1, as JSON
)

// Options configure Open. A nil *Options means all defaults.
type Options struct {
	// Embedder embeds chunks and queries. When nil, EmbedderFor builds it.
	// It is called through a circuit breaker (embed.Breaker; one given here
	// is used as it is).
	Embedder embed.Embedder
	// Breaker configures the circuit breaker around the embedder. Default
	// embed.BreakerOptions defaults.
	Breaker *embed.BreakerOptions
	// EmbedderFor builds the embedder when Embedder is nil, given what the
	// store records about the embedder that built it (nil for a new store,
	// or one that records nothing). Default: embed.New of the recorded spec
	// (with the API key from the environment), else embed.Default(), the
	// offline lexical embedder.
	EmbedderFor func(ctx context.Context, rec *index.EmbedderRecord) (embed.Embedder, error)
	// QueryCache caches query embeddings. Default: a cache of this index's
	// own with the embed.QueryCacheOptions defaults (1024 queries, 16 MiB).
	// Share one between stores to bound them together; a cache made with a
	// negative MaxEntries caches nothing.
	QueryCache *embed.QueryCache
	// Backend stores the records. Default: the local backend (index/local)
	// in dir. When set, dir is ignored and Close closes the backend.
	Backend driver.Backend
	// Chunking sizes the chunks. Default chunk defaults (about 400 tokens,
	// 50 tokens of overlap).
	Chunking *chunk.Options
	// Logger receives background errors and recovery reports. Default slog.Default().
	Logger *slog.Logger
	// QueueSize bounds the IndexPageAsync queue; pages beyond it are dropped
	// and counted. Default 1024.
	QueueSize int
	// QueueBytes bounds the text of the pages waiting in the IndexPageAsync
	// queue (they are held in memory); pages beyond it are dropped and
	// counted, but a page is always accepted by an empty queue. Default
	// DefaultQueueBytes (64 MiB).
	QueueBytes int64
	// MaxAttempts is how many times a background page whose indexing
	// fails (or is interrupted by the end of the process) is tried before
	// it is moved to the dead letters. Attempts during an embedder outage
	// (embed.ErrUnavailable) do not count. Default DefaultMaxAttempts (3).
	MaxAttempts int
	// RetryDelay is the wait before a failed background page is tried
	// again; it doubles with each attempt (at most 5 minutes). Default
	// DefaultRetryDelay (1 s).
	RetryDelay time.Duration
	// MaxChunksPerDocument is the most chunks one document may have;
	// larger documents fail with ErrTooManyChunks, in memory and time
	// bounded by the limit rather than by the document. Default
	// DefaultMaxChunksPerDocument (4096, about 6 MiB of prose); negative
	// means no limit.
	MaxChunksPerDocument int
	// QuotaChunks is the most chunks the store may hold; a write past it
	// fails with ErrQuotaExceeded (removals always work). Default 0, no
	// quota.
	QuotaChunks int
	// QuotaBytes is the most bytes the store may take on disk (its own
	// files; stores nested in its directory are not counted); a write that
	// would pass it, by the new chunks' text and vectors, fails with
	// ErrQuotaExceeded. Default 0, no quota.
	QuotaBytes int64
	// QueueDir is where IndexPageAsync persists the pages it has not indexed
	// yet, so that they survive a crash. Default: dir, the local store's own
	// directory. With another Backend, the default "" keeps the queue in
	// memory only: pages not yet indexed are lost in a crash.
	QueueDir string
	// EmbedBatch is the number of chunks per Embed call. Default 128. An
	// embedder that batches and parallelises its own requests (see
	// embed.Concurrency: the OpenAI-compatible one) is given all the chunks
	// of a write in one call instead.
	EmbedBatch int
	// EmbedConcurrency is the number of Embed calls in flight while indexing
	// many documents. Default runtime.GOMAXPROCS(0).
	EmbedConcurrency int
	// Now returns the current time (tests). Default time.Now.
	Now func() time.Time
	// Extract bounds the main-content extraction of HTML documents (see
	// Document.Extracted). Default nil: extract.Options defaults.
	Extract *extract.Options
	// URLRules set how source URLs are canonicalised (CanonicalURL); the
	// store remembers them, so that every process names a page alike.
	// Default nil: the rules the store remembers (the default rules for a
	// new store).
	URLRules *index.URLRules
}

// Index is the persistent store. See the package comment. An *Index is
// safe for concurrent use.
type Index struct {
	dir      string                         // the local store's directory; "" with Options.Backend
	urls     atomic.Pointer[index.URLRules] // how source URLs are canonicalised
	extract  *extract.Options
	be       driver.Backend
	emb      embed.Embedder // as configured, for Embedder and identity checks
	call     *embed.Breaker // emb behind its circuit breaker: every embedding goes through it
	qcache   *embed.QueryCache
	chunking chunk.Options
	log      *slog.Logger
	now      func() time.Time
	batch    int
	conc     int

	embedHealthy atomic.Bool

	// unbound: the store holds no record and records no embedder, or one
	// it holds no vectors of: the first write records this index's
	// embedder (bind), so that a store nothing was written to accepts any.
	unbound atomic.Bool
	bindMu  sync.Mutex

	settingsMu sync.RWMutex
	settings   map[string]setting // store-level settings of other packages, read once

	maxChunks   int
	quotaChunks int
	quotaBytes  int64

	// commitMu orders the write of a background batch against RemoveSource:
	// a page is either written before a removal of its source (which then
	// deletes it) or cancelled by it (and never written). Foreground writes
	// of sources take it too, so that RemoveWhere and SetSourceAttrs see
	// no write between what they read and what they write. Taken before
	// qmu.
	commitMu sync.Mutex

	qmu         sync.Mutex // guards the fields below, and closing, against Close
	closing     bool
	ready       []*job                     // pages to index, in order
	waiting     []*job                     // pages waiting to be tried again
	queuedBytes int64                      // text of ready and waiting
	running     int                        // pages in the batch being indexed
	inBatch     []*job                     // those pages, until each one's outcome is recorded
	deadDocs    map[string]*index.Document // dead letters' pages when the queue is not durable
	wake        chan struct{}              // tells the worker there is work (or Close)
	queueSize   int
	queueBytes  int64
	maxAttempts int
	retryDelay  time.Duration
	q           *queueLog // the persisted queue; nil when it lives in memory only
	jobsMu      sync.Mutex
	jobs        map[string]*index.Job
	jobList     []string // job ids, oldest first, for bounded retention
	worker      sync.WaitGroup
	stats       asyncCounters

	closeOnce sync.Once
	closed    atomic.Bool
	closeErr  error
}

// Open opens (or creates) the store in dir.
func Open(ctx context.Context, dir string, opts *Options) (*Index, error) {
	o := opts.withDefaults()
	ix := &Index{
		emb:       o.Embedder,
		qcache:    o.QueryCache,
		log:       o.Logger,
		now:       o.Now,
		batch:     o.EmbedBatch,
		conc:      o.EmbedConcurrency,
		queueSize: o.QueueSize,
		jobs:      map[string]*index.Job{},

		maxChunks: o.MaxChunksPerDocument, quotaChunks: max(o.QuotaChunks, 0), quotaBytes: max(o.QuotaBytes, 0),
		queueBytes: o.QueueBytes, maxAttempts: o.MaxAttempts, retryDelay: o.RetryDelay,
		deadDocs: map[string]*index.Document{}, wake: make(chan struct{}, 1),
	}
	ix.extract = o.Extract
	if o.Chunking != nil {
		ix.chunking = *o.Chunking
	}
	ix.embedHealthy.Store(true)
	if err := ix.openBackend(ctx, dir, &o); err != nil {
		return nil, err
	}
	if err := ix.openRest(ctx, dir, &o); err != nil {
		_ = ix.be.Close()
		return nil, err
	}
	ix.worker.Add(1)
	go ix.run()
	return ix, nil
}

// withDefaults returns the options with what is not set filled in.
func (opts *Options) withDefaults() Options {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.QueueSize <= 0 {
		o.QueueSize = 1024
	}
	if o.QueueBytes <= 0 {
		o.QueueBytes = DefaultQueueBytes
	}
	if o.MaxAttempts <= 0 {
		o.MaxAttempts = DefaultMaxAttempts
	}
	if o.RetryDelay <= 0 {
		o.RetryDelay = DefaultRetryDelay
	}
	switch {
	case o.MaxChunksPerDocument == 0:
		o.MaxChunksPerDocument = DefaultMaxChunksPerDocument
	case o.MaxChunksPerDocument < 0:
		o.MaxChunksPerDocument = 0
	}
	if o.EmbedBatch <= 0 {
		o.EmbedBatch = 128
	}
	if o.EmbedConcurrency <= 0 {
		o.EmbedConcurrency = runtime.GOMAXPROCS(0)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.QueryCache == nil {
		o.QueryCache = embed.NewQueryCache(nil)
	}
	return o
}

// openBackend takes the backend of the options, or opens the local store
// in dir.
func (ix *Index) openBackend(ctx context.Context, dir string, o *Options) error {
	if o.Backend != nil {
		ix.be = o.Backend
		return nil
	}
	if dir == "" {
		return errors.New("index: no data directory given")
	}
	lb, err := local.Open(ctx, dir, &local.Options{Logger: o.Logger})
	if err != nil {
		return err
	}
	ix.be, ix.dir = lb, dir
	if r := lb.Recovery(); len(r.Problems) > 0 {
		o.Logger.Warn("index: recovered store", "dir", dir, "problems", len(r.Problems), "journalOps", r.JournalOps, "quarantined", len(r.Quarantined))
	}
	return nil
}

// openRest binds the embedder to the open backend (checked against the
// one the store was built with, its vectors' length expected), loads the
// URL rules, and opens the queue (in QueueDir, else in dir for a local
// store) and replays what it holds. The caller closes the backend when it
// fails.
func (ix *Index) openRest(ctx context.Context, dir string, o *Options) error {
	if ix.emb == nil {
		emb, err := ix.buildEmbedder(ctx, o.EmbedderFor)
		if err != nil {
			return err
		}
		ix.emb = emb
	}
	ix.call = embed.NewBreaker(ix.emb, o.Breaker) // the same one when the embedder is a *embed.Breaker
	ix.emb = ix.call.Unwrap()
	if err := ix.checkEmbedder(ctx); err != nil {
		return err
	}
	if sd, ok, err := ix.be.Meta(ctx, metaDimension); err == nil && ok && !ix.unbound.Load() {
		if d, err := strconv.Atoi(sd); err == nil {
			// Vectors of another length are an outage, never records.
			ix.call.ExpectDimension(d)
		}
	}
	if err := ix.loadURLRules(ctx, o.URLRules); err != nil {
		return err
	}
	queueDir := o.QueueDir
	if queueDir == "" && o.Backend == nil {
		queueDir = dir
	}
	if queueDir == "" {
		return nil
	}
	q, qs, err := openQueue(wal.OS{}, queueDir, o.Logger, o.MaxAttempts)
	if err != nil {
		return err
	}
	ix.q = q
	if qs != nil {
		ix.qmu.Lock()
		ix.replayQueue(qs)
		ix.qmu.Unlock()
	}
	return nil
}

// VerifyEmbedder reports, without changing anything, whether the store in be
// was built with emb: nil when it was or when the store records no embedder
// yet, an error wrapping ErrEmbedderMismatch that names both when not.
func VerifyEmbedder(ctx context.Context, be driver.Backend, emb embed.Embedder) error {
	id := emb.Identity()
	stored, ok, err := be.Meta(ctx, metaEmbedder)
	if err != nil || !ok {
		return err
	}
	if !SameEmbedder(stored, id) {
		return fmt.Errorf("%w: the store was built with embedder %q but %q was given; "+
			"open it with the same embedder (--embedder) or index into a new data directory (--dir)",
			ErrEmbedderMismatch, stored, id)
	}
	if d := emb.Dimension(); d > 0 {
		sd, ok, err := be.Meta(ctx, metaDimension)
		if err != nil {
			return err
		}
		if ok && sd != strconv.Itoa(d) {
			return fmt.Errorf("%w: the store holds %s-dimensional vectors but embedder %q gives %d", ErrEmbedderMismatch, sd, id, d)
		}
	}
	return nil
}

// embedderRecordV1 is the JSON kept under metaEmbedderSpec.
type embedderRecordV1 struct {
	Version int        `json:"v"`
	Spec    embed.Spec `json:"spec"`
	Omitted []string   `json:"omitted,omitempty"`
}

// ErrBadEmbedderRecord: the embedder record in a store cannot be read.
var ErrBadEmbedderRecord = errors.New("index: unreadable embedder record")

// ReadEmbedderRecord returns what the store in be records about its
// embedder, and false when it records nothing (a new store). It changes
// nothing.
func ReadEmbedderRecord(ctx context.Context, be driver.Backend) (*index.EmbedderRecord, bool, error) {
	id, ok, err := be.Meta(ctx, metaEmbedder)
	if err != nil || !ok {
		return nil, false, err
	}
	rec := &index.EmbedderRecord{Identity: id}
	raw, ok, err := be.Meta(ctx, metaEmbedderSpec)
	if err != nil {
		return nil, false, err
	}
	if ok {
		var v embedderRecordV1
		if err := json.Unmarshal([]byte(raw), &v); err != nil || v.Version != 1 {
			return nil, false, fmt.Errorf("%w: %q", ErrBadEmbedderRecord, truncate(raw, 200))
		}
		if err := v.Spec.Validate(); err != nil {
			return nil, false, fmt.Errorf("%w: %w", ErrBadEmbedderRecord, err)
		}
		rec.Spec, rec.Omitted = &v.Spec, v.Omitted
		return rec, true, nil
	}
	if sp, ok := embed.SpecFromIdentity(id); ok {
		rec.Spec, rec.FromIdentity = &sp, true
	}
	return rec, true, nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "") + "..."
}

// buildEmbedder builds the embedder of a store opened without one.
func (ix *Index) buildEmbedder(ctx context.Context, embedderFor func(context.Context, *index.EmbedderRecord) (embed.Embedder, error)) (embed.Embedder, error) {
	rec, ok, err := ReadEmbedderRecord(ctx, ix.be)
	if err != nil {
		return nil, err
	}
	if !ok {
		rec = nil
	}
	if embedderFor != nil {
		emb, err := embedderFor(ctx, rec)
		if err != nil {
			return nil, err
		}
		if emb == nil {
			return nil, errors.New("index: Options.EmbedderFor returned no embedder")
		}
		return emb, nil
	}
	if rec == nil || rec.Spec == nil {
		return embed.Default(), nil
	}
	emb, err := embed.New(*rec.Spec, nil)
	if err != nil {
		return nil, fmt.Errorf("index: rebuild the embedder the store records (%s): %w", rec.Spec, err)
	}
	return emb, nil
}

// recordSpec writes the embedder's spec to the store, without credentials.
func (ix *Index) recordSpec(ctx context.Context) error {
	sp, ok := embed.SpecOf(ix.emb)
	if !ok {
		return nil
	}
	pub, omitted := sp.Public()
	raw, err := json.Marshal(embedderRecordV1{Version: 1, Spec: pub, Omitted: omitted})
	if err != nil {
		return err
	}
	if len(omitted) > 0 {
		ix.log.Warn("index: the store does not record credentials; give them in the configuration when you open it again",
			"embedder", pub.String(), "omitted", strings.Join(omitted, "; "))
	}
	return ix.be.SetMeta(ctx, metaEmbedderSpec, string(raw))
}

// checkEmbedder refuses an embedder other than the one the store records
// while the store holds records of it. A store without records is not
// bound to an embedder: it records none (or an earlier one whose records
// are all gone), and the first write records this one (see bind). A store
// with records but no embedder recorded (written before embedders were)
// adopts this one.
func (ix *Index) checkEmbedder(ctx context.Context) error {
	id := ix.emb.Identity()
	stored, ok, err := ix.be.Meta(ctx, metaEmbedder)
	if err != nil {
		return err
	}
	empty := func() (bool, error) {
		st, err := ix.be.Stats(ctx)
		return st.Records == 0, err
	}
	if !ok {
		none, err := empty()
		if err != nil {
			return err
		}
		if none {
			ix.unbound.Store(true)
			return nil
		}
		ix.log.Warn("index: store has records but no embedder recorded; adopting the current one", "embedder", id)
		return ix.recordEmbedder(ctx)
	}
	if err := VerifyEmbedder(ctx, ix.be, ix.emb); err != nil {
		if !errors.Is(err, ErrEmbedderMismatch) {
			return err
		}
		none, serr := empty()
		if serr != nil {
			return serr
		}
		if !none || !ix.takesDimension() {
			return err
		}
		ix.log.Info("index: the store holds no records; the first write records the embedder given", "embedder", id, "recorded", stored)
		ix.unbound.Store(true)
		return nil
	}
	// A store created before specs were recorded learns its embedder's now.
	if _, ok, err := ix.be.Meta(ctx, metaEmbedderSpec); err != nil {
		return err
	} else if !ok {
		if err := ix.recordSpec(ctx); err != nil {
			return err
		}
	}
	if d := ix.emb.Dimension(); d > 0 {
		if _, ok, err := ix.be.Meta(ctx, metaDimension); err != nil {
			return err
		} else if !ok {
			return ix.be.SetMeta(ctx, metaDimension, strconv.Itoa(d))
		}
	}
	return nil
}

// takesDimension reports whether the backend accepts vectors of the
// embedder's dimension: it has never held vectors, or held ones of that
// length (a backend that has held others keeps their length after its
// records are removed).
func (ix *Index) takesDimension() bool {
	d, ok := ix.be.(interface{ VectorDimension() int })
	if !ok {
		return true
	}
	have, want := d.VectorDimension(), ix.emb.Dimension()
	return have == 0 || want == 0 || have == want
}

// recordEmbedder records the index's embedder: identity, spec and, when
// known, dimension.
func (ix *Index) recordEmbedder(ctx context.Context) error {
	if err := ix.be.SetMeta(ctx, metaEmbedder, ix.emb.Identity()); err != nil {
		return err
	}
	if err := ix.recordSpec(ctx); err != nil {
		return err
	}
	if d := ix.emb.Dimension(); d > 0 {
		if err := ix.be.SetMeta(ctx, metaDimension, strconv.Itoa(d)); err != nil {
			return err
		}
		ix.call.ExpectDimension(d)
	}
	return nil
}

// BindEmbedder records the index's embedder in a store that holds no
// records yet, as the index's own first write does (see Open); a store
// bound already is left as it is. Callers that write records to the
// backend directly (an import) call it first.
func (ix *Index) BindEmbedder(ctx context.Context) error { return ix.bind(ctx) }

// bind records the embedder of an unbound store before its first records
// are written (a write that then fails leaves a store bound and still
// empty, which the next open takes for unbound again).
func (ix *Index) bind(ctx context.Context) error {
	if !ix.unbound.Load() {
		return nil
	}
	ix.bindMu.Lock()
	defer ix.bindMu.Unlock()
	if !ix.unbound.Load() {
		return nil
	}
	if err := ix.recordEmbedder(ctx); err != nil {
		return fmt.Errorf("index: record the store's embedder: %w", err)
	}
	ix.unbound.Store(false)
	return nil
}

// EmbedderRecord returns what the store records about its embedder, and
// false when it records nothing that binds it: a new store, or one that
// holds no records (see Open).
func (ix *Index) EmbedderRecord(ctx context.Context) (*index.EmbedderRecord, bool, error) {
	if ix.unbound.Load() {
		return nil, false, nil
	}
	return ReadEmbedderRecord(ctx, ix.be)
}

// unknownDim matches the "/d0" of an embedder that learns its dimension on
// first use (an OpenAI-compatible server without a configured dimension).
var (
	unknownDim = regexp.MustCompile(`/d0(/|$)`)
	dimPart    = regexp.MustCompile(`/d[0-9]+(/|$)`)
)

// SameEmbedder reports whether vectors of the stored embedder identity and
// the current one are comparable: equal identities, or equal but for a
// dimension one of them does not know yet.
func SameEmbedder(stored, current string) bool {
	if stored == current {
		return true
	}
	if !unknownDim.MatchString(stored) && !unknownDim.MatchString(current) {
		return false
	}
	return dimPart.ReplaceAllString(stored, "/d?$1") == dimPart.ReplaceAllString(current, "/d?$1")
}

// Backend returns the storage backend (for tools such as check and migrate).
func (ix *Index) Backend() driver.Backend { return ix.be }

// Embedder returns the embedder the index uses.
func (ix *Index) Embedder() embed.Embedder { return ix.emb }

// EmbedderState reports the circuit breaker around the embedder: "closed"
// while it works, "open" while it is taken for down.
func (ix *Index) EmbedderState() embed.BreakerState { return ix.call.State() }

// ContentHash is the hash that decides whether a source changed: it covers
// the content, the title, the format and the doc type.
func ContentHash(d *index.Document) string {
	h := sha256.New()
	h.Write([]byte(d.Format.String()))
	h.Write([]byte{0})
	h.Write([]byte(d.DocType))
	h.Write([]byte{0})
	h.Write([]byte(d.Title))
	h.Write([]byte{0})
	h.Write([]byte(d.Content))
	if len(d.Attrs) > 0 {
		// Attributes are part of what is stored: new ones are a change.
		keys := make([]string, 0, len(d.Attrs))
		for k := range d.Attrs {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			h.Write([]byte{0, 1})
			h.Write([]byte(k))
			h.Write([]byte{0})
			h.Write([]byte(d.Attrs[k]))
		}
	}
	return hex.EncodeToString(h.Sum(nil)[:16])
}

// Unchanged reports whether Add would find d unchanged: the store holds its
// source (under the canonical URL, after the normalisation Add applies)
// with the same content hash. It returns what the store holds under that
// URL, if anything. It changes nothing.
func (ix *Index) Unchanged(ctx context.Context, d index.Document) (index.SourceInfo, bool, error) {
	normalize(&d)
	d.SourceURL = ix.CanonicalURL(d.SourceURL)
	srcs, _, err := ix.be.Sources(ctx, index.Filter{SourceURL: d.SourceURL}, 0, 1)
	if err != nil || len(srcs) == 0 {
		return index.SourceInfo{}, false, err
	}
	return srcs[0], srcs[0].ContentHash == ContentHash(&d), nil
}

// ChunkID derives a chunk id from its source, the source's content hash and
// its position, so replacing a source never reuses the ids of its old chunks.
func ChunkID(sourceURL, contentHash string, position int) string {
	h := sha256.New()
	h.Write([]byte(sourceURL))
	h.Write([]byte{0})
	h.Write([]byte(contentHash))
	h.Write([]byte{0})
	h.Write([]byte(strconv.Itoa(position)))
	return hex.EncodeToString(h.Sum(nil)[:12])
}

func normalize(d *index.Document) {
	d.Content = strings.TrimPrefix(d.Content, "\uFEFF") // a byte-order mark is no text
	if !utf8.ValidString(d.Content) {
		d.Content = strings.ToValidUTF8(d.Content, "\uFFFD")
	}
	if !utf8.ValidString(d.Title) {
		d.Title = strings.ToValidUTF8(d.Title, "\uFFFD")
	}
	d.Title = strings.TrimSpace(d.Title)
	d.SourceURL = strings.TrimSpace(d.SourceURL)
	if d.DocType == "" {
		d.DocType = index.DocKnowledge
	}
}

// prepared is a document chunked and ready to embed.
type prepared struct {
	doc     index.Document
	hash    string
	records []index.Record
	res     *index.Result
}

// prepare chunks d; it returns nil records when d is unchanged.
func (ix *Index) prepare(ctx context.Context, d index.Document, now time.Time) (*prepared, error) {
	if d.Format != chunk.HTML && chunk.Binary(d.Content) {
		return nil, ErrBinaryContent
	}
	normalize(&d)
	d.SourceURL = ix.CanonicalURL(d.SourceURL)
	if d.SourceURL == "" {
		return nil, ErrNoSource
	}
	if !utf8.ValidString(d.SourceURL) {
		return nil, fmt.Errorf("%w: source URL is not valid UTF-8", ErrNoSource)
	}
	p := &prepared{doc: d, hash: ContentHash(&d), res: &index.Result{SourceURL: d.SourceURL}}
	p.res.ContentHash = p.hash
	existing, _, err := ix.be.Sources(ctx, index.Filter{SourceURL: d.SourceURL}, 0, 1)
	if err != nil {
		return nil, err
	}
	if !reserved.DocType(d.DocType) {
		// Only the store a source belongs to replaces it: a page or a file
		// indexed under a memory file's URL (a folder holding the memory
		// directory, say) must not overwrite the memory, nor sit under its
		// patterns' URL (#whenToUse).
		ex := ""
		if len(existing) == 1 && reserved.DocType(existing[0].DocType) {
			ex = existing[0].DocType
		} else if strings.Contains(d.SourceURL, "#") {
			if ex, err = ix.ReservedSource(ctx, d.SourceURL); err != nil {
				return nil, err
			}
		}
		if ex != "" {
			return nil, fmt.Errorf("%w: %s holds %s", ErrReserved, truncate(d.SourceURL, 200), reserved.Owner(ex))
		}
	}
	if len(existing) == 1 {
		p.res.Removed = existing[0].Chunks
		if existing[0].ContentHash == p.hash {
			p.res.Unchanged = true
			p.res.Chunks = existing[0].Chunks
			p.res.Removed = 0
			return p, nil
		}
	}
	if d.Format == chunk.HTML && !d.Extracted {
		if err := tooManyHeadings(d.Content, ix.maxChunks); err != nil {
			return nil, err
		}
		pg, err := extract.HTMLContext(ctx, d.Content, d.SourceURL, ix.extract)
		switch {
		case errors.Is(err, extract.ErrNoContent):
			return nil, ErrEmptyDocument
		case err != nil:
			return nil, err
		}
		d.Content = pg.HTML
		if d.Title == "" {
			d.Title = pg.Title
		}
	}
	co := ix.chunking
	co.MaxChunks = ix.maxChunks
	chunks, err := chunk.SplitLimit(d.Content, d.Format, &co)
	if err != nil {
		return nil, fmt.Errorf("%w: %s; the limit is %d chunks per document", ErrTooManyChunks,
			strings.TrimPrefix(err.Error(), chunk.ErrTooManyChunks.Error()+": "), ix.maxChunks)
	}
	if len(chunks) == 0 {
		return nil, ErrEmptyDocument
	}
	title := d.Title
	if title == "" {
		title = d.SourceURL
	}
	p.records = make([]index.Record, len(chunks))
	for i, c := range chunks {
		p.records[i] = index.Record{
			ID:          ChunkID(d.SourceURL, p.hash, c.Index),
			SourceURL:   d.SourceURL,
			Title:       title,
			HeadingPath: c.HeadingPath,
			Content:     c.Text,
			DocType:     d.DocType,
			Position:    c.Index,
			Start:       c.Start,
			End:         c.End,
			Tokens:      c.Tokens,
			CreatedAt:   now,
			ContentHash: p.hash,
			Attrs:       cloneAttrs(d.Attrs),
		}
	}
	p.res.Chunks = len(chunks)
	return p, nil
}

// ReservedSource returns the document type of the memory or preference
// store's source under the (canonical) URL u, or under u without its
// fragment (a memory's patterns are stored under its file's URL and
// "#whenToUse"): "" when the store holds none there. Such sources are
// written and removed only by their stores (ErrReserved).
func (ix *Index) ReservedSource(ctx context.Context, u string) (string, error) {
	cands := []string{ix.CanonicalURL(u), strings.TrimSpace(u)}
	if base, _, ok := strings.Cut(cands[1], "#"); ok {
		cands = append(cands, base, ix.CanonicalURL(base))
	}
	seen := map[string]bool{}
	for _, c := range cands {
		if c == "" || seen[c] {
			continue
		}
		seen[c] = true
		srcs, _, err := ix.be.Sources(ctx, index.Filter{SourceURL: c}, 0, 1)
		if err != nil {
			return "", err
		}
		if len(srcs) > 0 && reserved.DocType(srcs[0].DocType) {
			return srcs[0].DocType, nil
		}
	}
	return "", nil
}

func cloneAttrs(a map[string]string) map[string]string {
	if len(a) == 0 {
		return nil
	}
	c := make(map[string]string, len(a))
	for k, v := range a {
		c[k] = v
	}
	return c
}

// Add indexes one document, replacing any earlier version of its source.
func (ix *Index) Add(ctx context.Context, d index.Document) (index.Result, error) {
	res, err := ix.AddMany(ctx, []index.Document{d})
	if err != nil {
		return index.Result{SourceURL: d.SourceURL}, err
	}
	return res[0], res[0].Err
}

// AddMany indexes several documents and writes all that could be prepared in
// one atomic batch. A document that cannot be indexed (no text, no URL) gets
// its own Result.Err and does not stop the others; the returned error is for
// failures of the whole batch (embedding, storage). When a source URL appears
// more than once, the last document wins.
func (ix *Index) AddMany(ctx context.Context, docs []index.Document) ([]index.Result, error) {
	return ix.addMany(ctx, docs, nil)
}

// addMany is AddMany. With jobs (the background worker's, one per
// document), the batch is written holding commitMu, without the pages a
// RemoveSource cancelled meanwhile (their Result.Err is errCancelled), and
// the pages written are marked committed.
func (ix *Index) addMany(ctx context.Context, docs []index.Document, jobs []*job) ([]index.Result, error) {
	if ix.closed.Load() {
		return nil, ErrClosed
	}
	now := ix.now().UTC()
	results := make([]index.Result, len(docs))
	last := map[string]int{}
	for i := range docs {
		last[ix.CanonicalURL(docs[i].SourceURL)] = i
	}
	// Chunk the documents in parallel (chunking is CPU-bound), then
	// collect them in input order.
	preps := make([]*prepared, len(docs))
	errs := make([]error, len(docs))
	next := atomic.Int64{}
	var wg sync.WaitGroup
	for w := 0; w < min(ix.conc, len(docs)); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= len(docs) {
					return
				}
				if last[ix.CanonicalURL(docs[i].SourceURL)] != i {
					continue
				}
				preps[i], errs[i] = ix.prepare(ctx, docs[i], now)
			}
		}()
	}
	wg.Wait()
	var work []*prepared
	var workIdx []int // the document of each work item
	var recs []*index.Record
	for i, d := range docs {
		if last[ix.CanonicalURL(d.SourceURL)] != i {
			results[i] = index.Result{SourceURL: d.SourceURL, Superseded: true}
			continue
		}
		p, err := preps[i], errs[i]
		if err != nil {
			results[i] = index.Result{SourceURL: d.SourceURL, Err: err}
			continue
		}
		results[i] = *p.res
		if p.res.Unchanged {
			continue
		}
		work = append(work, p)
		workIdx = append(workIdx, i)
		for j := range p.records {
			recs = append(recs, &p.records[j])
		}
	}
	if len(work) == 0 {
		return results, nil
	}
	if err := ix.checkQuota(ctx, work); err != nil {
		return nil, err
	}
	if err := ix.embedRecords(ctx, recs); err != nil {
		return nil, err
	}
	bt := &driver.Batch{}
	// Every write of sources holds commitMu around its Apply: RemoveWhere
	// and SetSourceAttrs read and write under it, and no write may land
	// between their read and their write.
	ix.commitMu.Lock()
	defer ix.commitMu.Unlock()
	var written []*job
	for k, p := range work {
		if jobs != nil {
			jb := jobs[workIdx[k]]
			if jb.cancelled {
				results[workIdx[k]] = index.Result{SourceURL: p.doc.SourceURL, Err: errCancelled}
				continue
			}
			written = append(written, jb)
		}
		bt.DeleteSources = append(bt.DeleteSources, p.doc.SourceURL)
		bt.Put = append(bt.Put, p.records...)
	}
	if len(bt.DeleteSources) == 0 {
		return results, nil
	}
	if len(bt.Put) > 0 {
		if err := ix.bind(ctx); err != nil {
			return nil, err
		}
	}
	if err := ix.be.Apply(ctx, bt); err != nil {
		return nil, err
	}
	for _, jb := range written {
		jb.committed = true
	}
	return results, nil
}

// embedRecords fills in the vectors of recs, EmbedBatch at a time with up to
// EmbedConcurrency calls in flight, or in one call to an embedder that
// batches and parallelises its requests itself.
func (ix *Index) embedRecords(ctx context.Context, recs []*index.Record) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	type span struct{ lo, hi int }
	var spans []span
	batch := ix.batch
	if embed.Concurrency(ix.emb) > 0 {
		batch = max(len(recs), 1)
	}
	for lo := 0; lo < len(recs); lo += batch {
		spans = append(spans, span{lo, min(lo+batch, len(recs))})
	}
	errs := make([]error, len(spans))
	sem := make(chan struct{}, ix.conc)
	var wg sync.WaitGroup
	for si, sp := range spans {
		wg.Add(1)
		sem <- struct{}{}
		go func(si int, sp span) {
			defer wg.Done()
			defer func() { <-sem }()
			texts := make([]string, sp.hi-sp.lo)
			for i := range texts {
				texts[i] = driver.SearchText(recs[sp.lo+i]) // what BM25 indexes too
			}
			vecs, err := ix.call.Embed(ctx, texts)
			if err == nil && len(vecs) != len(texts) {
				err = fmt.Errorf("%w: embedder returned %d vectors for %d texts", embed.ErrDimensionMismatch, len(vecs), len(texts))
			}
			if err != nil {
				errs[si] = err
				cancel()
				return
			}
			for i, v := range vecs {
				recs[sp.lo+i].Vector = v
			}
		}(si, sp)
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		ix.embedHealthy.Store(false)
		return fmt.Errorf("%w: embed chunks: %w", ErrEmbedding, firstErr(errs))
	}
	ix.embedHealthy.Store(true)
	ix.learnDimension(ctx)
	return nil
}

// learnDimension records the dimension and full identity of an embedder
// that learned its dimension on first use (OpenAI-compatible servers).
func (ix *Index) learnDimension(ctx context.Context) {
	d := ix.emb.Dimension()
	if d <= 0 || ix.unbound.Load() { // an unbound store records it when it binds
		return
	}
	if _, ok, err := ix.be.Meta(ctx, metaDimension); err == nil && !ok {
		_ = ix.be.SetMeta(ctx, metaDimension, strconv.Itoa(d))
		ix.call.ExpectDimension(d)
	}
	if stored, ok, err := ix.be.Meta(ctx, metaEmbedder); err == nil && ok && unknownDim.MatchString(stored) {
		if ix.be.SetMeta(ctx, metaEmbedder, ix.emb.Identity()) == nil {
			_ = ix.recordSpec(ctx) // with the dimension now known
		}
	}
}

func firstErr(errs []error) error {
	for _, e := range errs {
		if e != nil && !errors.Is(e, context.Canceled) {
			return e
		}
	}
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}

// Put stores records as they are (embedding those without a vector), in one
// atomic batch. It is the primitive for preferences and memories, which are
// single records rather than chunked sources.
func (ix *Index) Put(ctx context.Context, recs []index.Record) error {
	if ix.closed.Load() {
		return ErrClosed
	}
	var need []*index.Record
	now := ix.now().UTC()
	for i := range recs {
		r := &recs[i]
		if r.DocType == "" {
			r.DocType = index.DocKnowledge
		}
		if r.CreatedAt.IsZero() {
			r.CreatedAt = now
		}
		if !utf8.ValidString(r.Content) {
			r.Content = strings.ToValidUTF8(r.Content, "\uFFFD")
		}
		if len(r.Vector) == 0 {
			need = append(need, r)
		}
	}
	if len(need) > 0 {
		if err := ix.embedRecords(ctx, need); err != nil {
			return err
		}
	}
	if len(recs) > 0 {
		if err := ix.bind(ctx); err != nil {
			return err
		}
	}
	return ix.be.Apply(ctx, &driver.Batch{Put: recs})
}

// Delete removes records by id in one atomic batch.
func (ix *Index) Delete(ctx context.Context, ids []string) error {
	if ix.closed.Load() {
		return ErrClosed
	}
	return ix.be.Apply(ctx, &driver.Batch{DeleteIDs: ids})
}

// Remove deletes every chunk of a source and returns how many there were.
// The source's pages queued for background indexing are cancelled, as
// RemoveSource says.
func (ix *Index) Remove(ctx context.Context, sourceURL string) (int, error) {
	r, err := ix.RemoveSource(ctx, sourceURL)
	return r.Chunks, err
}

// RemoveSource deletes every chunk of a source and cancels its pages queued
// for background indexing (IndexPageAsync): those waiting, those waiting
// to be tried again after a failure, and one being indexed whose chunks are
// not written yet. Their jobs end JobCancelled, durably: a restart does not
// index them again. A page whose chunks were written before the call is
// deleted with the rest. So once RemoveSource returns, the source is gone
// and no job queued before the call brings it back; only a new write does.
// Dead letters of the source stay until they are dropped (DropJob).
func (ix *Index) RemoveSource(ctx context.Context, sourceURL string) (index.Removal, error) {
	var out index.Removal
	if ix.closed.Load() {
		return out, ErrClosed
	}
	ix.commitMu.Lock()
	defer ix.commitMu.Unlock()
	ids, err := ix.cancelSource(sourceURL)
	if err != nil {
		return out, err
	}
	out.Cancelled = ids
	ex, err := ix.findSource(ctx, &sourceURL)
	if err != nil || len(ex) == 0 {
		return out, err
	}
	if err := ix.be.Apply(ctx, &driver.Batch{DeleteSources: []string{sourceURL}}); err != nil {
		return out, err
	}
	out.Chunks = ex[0].Chunks
	return out, nil
}

// Source returns the chunks of one source in order (searchBySourceUrl).
func (ix *Index) Source(ctx context.Context, sourceURL string) ([]index.Record, error) {
	rs, err := ix.be.Source(ctx, ix.CanonicalURL(sourceURL))
	if err == nil && len(rs) == 0 && ix.CanonicalURL(sourceURL) != sourceURL {
		return ix.be.Source(ctx, sourceURL) // stored before canonicalisation
	}
	return rs, err
}

// Sources lists sources matching f, with the total before paging.
func (ix *Index) Sources(ctx context.Context, f index.Filter, offset, limit int) ([]index.SourceInfo, int, error) {
	return ix.be.Sources(ctx, ix.canonFilter(f), offset, limit)
}

// Records returns every record matching f.
func (ix *Index) Records(ctx context.Context, f index.Filter) ([]index.Record, error) {
	return ix.be.Records(ctx, ix.canonFilter(f))
}

// FullText runs a BM25 query.
func (ix *Index) FullText(ctx context.Context, query string, k int, f index.Filter) ([]driver.Hit, error) {
	if !utf8.ValidString(query) {
		query = strings.ToValidUTF8(query, " ")
	}
	return ix.be.SearchText(ctx, query, k, ix.canonFilter(f))
}

// EmbedQuery embeds a query (with the embedder's query form when it has
// one), through the query cache: a query embedded before costs no embedder
// call. The caller owns the returned vector.
func (ix *Index) EmbedQuery(ctx context.Context, query string) ([]float32, error) {
	if !utf8.ValidString(query) {
		query = strings.ToValidUTF8(query, " ")
	}
	v, err := ix.qcache.Embed(ctx, ix.call, query)
	if err != nil {
		ix.embedHealthy.Store(false)
		return nil, fmt.Errorf("%w: embed query: %w", ErrEmbedding, err)
	}
	ix.embedHealthy.Store(true)
	ix.learnDimension(ctx)
	return v, nil
}

// Vector runs a vector query for the text of query.
func (ix *Index) Vector(ctx context.Context, query string, k int, f index.Filter) ([]driver.Hit, error) {
	v, err := ix.EmbedQuery(ctx, query)
	if err != nil {
		return nil, err
	}
	return ix.be.SearchVector(ctx, v, k, ix.canonFilter(f))
}

// VectorByEmbedding runs a vector query for a vector the caller already has.
func (ix *Index) VectorByEmbedding(ctx context.Context, vec []float32, k int, f index.Filter) ([]driver.Hit, error) {
	return ix.be.SearchVector(ctx, vec, k, ix.canonFilter(f))
}

// Stats returns the store's statistics.
func (ix *Index) Stats(ctx context.Context) (index.Stats, error) {
	bs, err := ix.be.Stats(ctx)
	if err != nil {
		return index.Stats{}, err
	}
	_, docs, err := ix.be.Sources(ctx, index.Filter{DocTypes: []string{index.DocKnowledge}}, 0, 1)
	if err != nil {
		return index.Stats{}, err
	}
	prefSources, _, err := ix.be.Sources(ctx, index.Filter{DocTypes: []string{index.DocPreference}}, 0, 0)
	if err != nil {
		return index.Stats{}, err
	}
	prefCount := 0
	for _, s := range prefSources {
		prefCount += s.Chunks
	}
	_, mems, err := ix.be.Sources(ctx, index.Filter{DocTypes: []string{index.DocMemory}}, 0, 1)
	if err != nil {
		return index.Stats{}, err
	}
	dim := ix.emb.Dimension()
	if dim == 0 && !ix.unbound.Load() {
		if s, ok, _ := ix.be.Meta(ctx, metaDimension); ok {
			dim, _ = strconv.Atoi(s)
		}
	}
	spec := ""
	if rec, ok, err := ix.EmbedderRecord(ctx); err == nil && ok && rec.Spec != nil && !rec.FromIdentity {
		spec = rec.Spec.String()
	}
	return index.Stats{
		EmbedderSpec:         spec,
		QueryCache:           ix.qcache.Stats(),
		DocumentCount:        docs,
		ChunkCount:           bs.Records,
		PreferenceCount:      prefCount,
		MemoryCount:          mems,
		IndexSizeBytes:       bs.SizeBytes,
		LastSyncTime:         bs.LastSync,
		EmbeddingModelLoaded: ix.embedHealthy.Load(),
		Embedder:             ix.emb.Identity(),
		Dimension:            dim,
		Queue:                ix.QueueStats(),
	}, nil
}

// ErrBadSetting is returned for a setting key that is not namespaced.
var ErrBadSetting = errors.New("index: bad setting key")

type setting struct {
	value string
	ok    bool
}

// Setting returns a store-level setting that another package keeps with the
// store (search keeps its fusion calibration as "search.fusion"), and whether
// it is set. The backend is asked once per key; later calls are answered from
// memory, so a search may consult a setting cheaply.
func (ix *Index) Setting(ctx context.Context, key string) (string, bool, error) {
	if err := checkSettingKey(key); err != nil {
		return "", false, err
	}
	ix.settingsMu.RLock()
	s, cached := ix.settings[key]
	ix.settingsMu.RUnlock()
	if cached {
		return s.value, s.ok, nil
	}
	ix.settingsMu.Lock()
	defer ix.settingsMu.Unlock()
	if s, ok := ix.settings[key]; ok {
		return s.value, s.ok, nil
	}
	v, ok, err := ix.be.Meta(ctx, key)
	if err != nil {
		return "", false, err
	}
	if ix.settings == nil {
		ix.settings = map[string]setting{}
	}
	ix.settings[key] = setting{v, ok}
	return v, ok, nil
}

// SetSetting records a store-level setting durably (see Setting). Keys are
// namespaced by the package that owns them, "pkg.name", so that they never
// clash with the index's own settings.
func (ix *Index) SetSetting(ctx context.Context, key, value string) error {
	if err := checkSettingKey(key); err != nil {
		return err
	}
	ix.settingsMu.Lock()
	defer ix.settingsMu.Unlock()
	if err := ix.be.SetMeta(ctx, key, value); err != nil {
		return err
	}
	if ix.settings == nil {
		ix.settings = map[string]setting{}
	}
	ix.settings[key] = setting{value, true}
	return nil
}

func checkSettingKey(key string) error {
	pkg, name, ok := strings.Cut(key, ".")
	if !ok || pkg == "" || name == "" || pkg == "index" {
		return fmt.Errorf("%w %q: want \"package.name\"", ErrBadSetting, key)
	}
	return nil
}

// Close waits for queued pages (those waiting to be tried again after a
// failure get one more attempt; with a durable queue, one that fails again
// stays queued for the next Open), then closes the backend. It is safe to
// call more than once.
func (ix *Index) Close() error {
	ix.closeOnce.Do(func() {
		ix.qmu.Lock()
		ix.closing = true // refuse new pages; queued ones still get indexed
		ix.wakeWorker()
		ix.qmu.Unlock()
		ix.worker.Wait()
		ix.closed.Store(true)
		var qerr error
		if ix.q != nil {
			qerr = ix.q.close()
		}
		ix.closeErr = errors.Join(ix.be.Close(), qerr)
	})
	return ix.closeErr
}

// Package local is ragmem's default storage backend: records and their
// vectors live in ragmem's own snapshot + write-ahead journal, vector queries
// are answered by index/vecindex, and bleve holds the BM25 index on disk; the
// three are kept consistent by the journal.
//
// # Files
//
// ragmem persists the records itself rather than in a vector library's own
// files (chromem-go, which this backend once used, writes one file per
// document in place without fsync, and a half-written file stops the whole
// store from opening):
//
//	dir/LOCK                   advisory lock holding the owner's pid
//	dir/snap-<seq>.rgs         every record (text, metadata) at <seq>, with a
//	                           page-aligned section of their vectors that open
//	                           maps instead of decoding (snapshot.go)
//	dir/vidx-<seq>.rgx         the vector index's codes for that snapshot's
//	                           rows (derived; rebuilt when missing or damaged)
//	dir/journal-<seq>.rgj      every mutation after <seq>, one checksummed frame each
//	dir/closed.rgm             the sequence at the last clean Close (detects lost journal data)
//	dir/bleve/                 the BM25 index; remembers the last sequence it applied
//	dir/quarantine/            damaged files moved aside on open, never deleted
//
// # Memory
//
// The float32 vectors of the records in the newest snapshot are not in the
// Go heap: they are mapped from its vector section, and a query touches only
// the few it rescores (the vector index scans its own compact codes). The
// vectors written since stay in memory until the next checkpoint maps them.
//
// # Writes
//
// A mutation (a driver.Batch, or a meta setting) is appended to the journal
// and fsynced; concurrent mutations share one fsync (group commit). Only then
// is it applied to bleve, to memory and to the vector index, and
// acknowledged: a chunk is searchable through the vector index's fast path
// as soon as its write returns. The journal is the commit point: bleve and the
// vector index's codes are derived data, brought forward from the journal on
// open. If applying a mutation to bleve fails, its journal entry is cut off
// again, so a failed call changes nothing. Once the journal grows past
// Options.CheckpointBytes a new snapshot and its codes file are written (temp
// file, fsync, rename, fsync of the directory) and a new journal started; the
// previous generation is kept as a fallback, and so are older journals bleve
// has not yet persisted.
//
// # Recovery
//
// On open the newest readable snapshot is loaded (its vector checksums
// verified, its vectors mapped), journals are replayed (a torn last frame,
// the mark of a crash during an unacknowledged write, is cut off), the
// vector index is loaded from the snapshot's codes (or rebuilt from its
// vectors when the codes file is missing, stale or damaged) and brought
// forward over the journal, and bleve, whose files are verified first, is
// brought up to the same sequence: by re-indexing the documents the journal
// entries it missed touched, or by reconciling it against the records when it
// is unreadable or too far behind. Damaged files are quarantined with a logged
// message instead of failing the open. Data known to be lost (a journal that
// ends before the sequence a clean Close or bleve recorded) is reported in
// Recovery.Lost.
//
// Open with Options.ReadOnly changes nothing on disk: it reports what a normal
// open would repair, for Check.
package local

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"path/filepath"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/blevesearch/bleve/v2"

	"github.com/ragmem/ragmem/index"
	"github.com/ragmem/ragmem/index/driver"
	"github.com/ragmem/ragmem/internal/index/vecindex"
	"github.com/ragmem/ragmem/internal/perm"
	"github.com/ragmem/ragmem/internal/wal"
)

// Errors of the local backend.
var (
	// ErrLocked is returned by Open when another process holds the store.
	ErrLocked = errors.New("index: store is locked")
	// ErrReadOnly is returned by writes to a store opened with ReadOnly.
	ErrReadOnly = errors.New("index: store is open read-only")
)

// Options configure a local backend. A nil *Options means all defaults.
type Options struct {
	// Logger receives recovery and checkpoint reports. Default slog.Default().
	Logger *slog.Logger
	// CheckpointBytes is the journal size that triggers a new snapshot.
	// Default 64 MiB.
	CheckpointBytes int64
	// CheckpointRatio defers a checkpoint until the journal has also reached
	// this fraction of the last snapshot's size, so that the bytes
	// checkpoints write grow with the store instead of with its square (a
	// snapshot rewrites every record). Default 0.5: a crash recovery replays
	// at most half a snapshot's worth of journal. Negative: checkpoint at
	// CheckpointBytes whatever the store's size.
	CheckpointRatio float64
	// ReadOnly opens the store without changing anything on disk: no torn
	// tail is cut, no file quarantined, bleve is not brought forward, and
	// writes fail with ErrReadOnly. What a normal open would repair is
	// reported by Check. Default false.
	ReadOnly bool
	// FullText configures the BM25 index (analysis and scoring). Default
	// nil: the FullTextOptions defaults. A store whose index was built with
	// other analysis settings has its index rebuilt on open.
	FullText *FullTextOptions
	// Vectors configures the vector index (vector.go). Default: vecindex defaults.
	Vectors *vecindex.Options
	// InMemory keeps the store in memory only (memory.go): no file is
	// written and Close discards everything. dir only names the store.
	// Default false.
	InMemory bool

	fs         wal.FS // file layer for the store's own files; default wal.OS (tests inject faults)
	groupLimit int    // most mutations per group commit; default unlimited (benchmarks set 1)
}

// Backend is the local store. It is safe for concurrent
// use: mutations are committed in groups by one goroutine at a time, and
// searches run concurrently with them.
type Backend struct {
	dir      string
	fs       wal.FS
	log      *slog.Logger
	ckpt     int64
	ckptRate float64 // Options.CheckpointRatio
	readOnly bool
	memory   bool // Options.InMemory
	lock     *wal.Lock
	ft       *fullText // BM25 analysis and scoring

	cmu        sync.Mutex // guards pending and leading (group commit)
	pending    []*commitReq
	leading    bool
	groupLimit int

	wmu          sync.Mutex // serialises commit groups, checkpoints, Check, Repair and Close
	journal      *journal
	broken       error // set when the journal state is unknown; refuses writes
	seq          uint64
	snapSeq      uint64        // sequence of the newest snapshot on disk
	bleveSeq     uint64        // sequence of the last batch applied to bleve
	nextCkpt     int64         // journal size at which the next checkpoint is tried
	snapBytes    int64         // size of the newest snapshot (written or opened)
	bleveDurable atomic.Uint64 // highest sequence whose bleve batch scorch has persisted
	bleveBatches uint64        // bleve batches submitted since open
	blevePersist atomic.Uint64 // highest such batch number scorch has persisted
	pendingFix   []Problem     // read-only: what a normal open would repair

	mu       sync.RWMutex // guards the fields below
	records  map[string]*index.Record
	bySource map[string]map[string]struct{}
	byType   map[string]map[string]struct{} // doc type -> ids
	meta     map[string]string
	dim      int
	lastSync time.Time
	closed   bool

	bl      bleve.Index
	vx      *vecindex.Index // answers vector queries (vector.go)
	vecOpts *vecindex.Options
	// vecs is the newest snapshot's mapped vector section, which the
	// records' vectors (and the vector index's) point into; replaced under
	// mu by a checkpoint, unmapped by Close.
	vecs          *vecSection
	snapVersion   int                 // format of the snapshot loaded or last written
	snapTag       []byte              // that snapshot's codes tag (format 2)
	replayTouched map[string]struct{} // during recovery: ids the journal replay touched

	report Recovery
}

// Recovery reports what Open had to do to bring the store back.
type Recovery struct {
	Snapshot      string   // snapshot loaded ("" for a new or snapshot-less store)
	JournalOps    int      // journal operations replayed into memory
	TornTailBytes int64    // bytes of an unfinished write cut from the journal
	Quarantined   []string // files or directories moved to dir/quarantine
	BleveReplayed int      // journal operations bleve had missed, re-applied
	BleveRebuilt  bool     // bleve was rebuilt from the records
	BleveRemoved  int      // documents bleve had that the records do not
	BleveAdded    int      // documents (re-)indexed into bleve to match the records
	// VectorIndexRebuilt is set when the vector index's codes had to be
	// computed from the vectors (their file was missing, stale or damaged).
	VectorIndexRebuilt bool
	// Lost is set when acknowledged operations are known to be lost: the
	// journal ends before the sequence a clean Close or bleve recorded.
	Lost            string
	Problems        []string // human-readable notes, also logged
	SequenceOnOpen  uint64
	BleveSeqOnOpen  uint64
	RecordsOnOpen   int
	OpenedCleanShut bool // bleve was already at the journal's sequence
}

// Open opens or creates the store in dir, recovering as described in the
// package comment. It fails with an error wrapping ErrLocked if another
// process holds the store.
func Open(ctx context.Context, dir string, opts *Options) (*Backend, error) {
	if opts == nil {
		opts = &Options{}
	}
	b := &Backend{
		dir:        dir,
		fs:         opts.fs,
		log:        opts.Logger,
		ckpt:       opts.CheckpointBytes,
		ckptRate:   opts.CheckpointRatio,
		readOnly:   opts.ReadOnly,
		groupLimit: opts.groupLimit,
		ft:         newFullText(opts.FullText),
		vecOpts:    opts.Vectors,
		records:    map[string]*index.Record{},
		bySource:   map[string]map[string]struct{}{},
		byType:     map[string]map[string]struct{}{},
		meta:       map[string]string{},
	}
	if b.fs == nil {
		b.fs = wal.OS{}
	}
	if b.log == nil {
		b.log = slog.Default()
	}
	if b.ckpt <= 0 {
		b.ckpt = 64 << 20
	}
	if b.ckptRate == 0 || b.ckptRate != b.ckptRate {
		b.ckptRate = 0.5
	}
	b.nextCkpt = b.ckpt
	if opts.InMemory && !b.readOnly {
		return openMemory(ctx, b)
	}
	if b.readOnly {
		if _, err := b.fs.Stat(dir); err != nil {
			return nil, fmt.Errorf("index: open store read-only: %w", err)
		}
	} else if err := b.beforeCreate(dir); err != nil {
		return nil, err
	} else if err := b.fs.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("index: create store directory: %w", err)
	}
	if _, ok := b.fs.(wal.OS); ok {
		// The store is the user's (internal/perm: ssh's rule): a
		// directory another user owns or may write is refused.
		note, err := perm.Dir(dir)
		if err != nil {
			return nil, fmt.Errorf("index: the store directory: %w", err)
		}
		if note != "" {
			b.log.Info(note)
		}
	}
	lock, err := wal.TryLock(filepath.Join(dir, "LOCK"))
	if err != nil {
		var le *wal.LockedError
		if errors.As(err, &le) {
			return nil, fmt.Errorf("%w by pid %s (another ragmem process is using %s; stop it or use another --dir)", ErrLocked, le.PID, dir)
		}
		return nil, fmt.Errorf("index: lock store: %w", err)
	}
	b.lock = lock
	if err := b.recover(ctx); err != nil {
		if b.bl != nil {
			_ = b.bl.Close()
		}
		_ = b.journal.close()
		_ = lock.Unlock()
		return nil, err
	}
	return b, nil
}

// Recovery returns what Open did.
func (b *Backend) Recovery() Recovery { return b.report }

// Dir returns the store directory.
func (b *Backend) Dir() string { return b.dir }

// ReadOnly reports whether the store was opened with Options.ReadOnly.
func (b *Backend) ReadOnly() bool { return b.readOnly }

func (b *Backend) readable() error {
	if b.closed {
		return driver.ErrClosed
	}
	return nil
}

// copyRecord copies r for a caller; the vector, when asked for, is copied
// too (it may be mapped from a snapshot that a checkpoint unmaps).
func copyRecord(r *index.Record, withVector bool) index.Record {
	c := *r
	c.Vector = nil
	if withVector && r.Vector != nil {
		c.Vector = append([]float32(nil), r.Vector...)
	}
	if r.HeadingPath != nil {
		c.HeadingPath = append([]string(nil), r.HeadingPath...)
	}
	if r.Attrs != nil {
		c.Attrs = make(map[string]string, len(r.Attrs))
		for k, v := range r.Attrs {
			c.Attrs[k] = v
		}
	}
	return c
}

// Get implements driver.Backend.
func (b *Backend) Get(ctx context.Context, ids []string) ([]index.Record, error) {
	b.mu.RLock()
	defer b.mu.RUnlock()
	if err := b.readable(); err != nil {
		return nil, err
	}
	out := make([]index.Record, 0, len(ids))
	for _, id := range ids {
		if r, ok := b.records[id]; ok {
			out = append(out, copyRecord(r, true))
		}
	}
	return out, nil
}

// Source implements driver.Backend.
func (b *Backend) Source(ctx context.Context, sourceURL string) ([]index.Record, error) {
	b.mu.RLock()
	defer b.mu.RUnlock()
	if err := b.readable(); err != nil {
		return nil, err
	}
	ids := b.bySource[sourceURL]
	out := make([]index.Record, 0, len(ids))
	for id := range ids {
		out = append(out, copyRecord(b.records[id], false))
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Position != out[j].Position {
			return out[i].Position < out[j].Position
		}
		return out[i].ID < out[j].ID
	})
	return out, nil
}

// Sources implements driver.Backend.
func (b *Backend) Sources(ctx context.Context, f index.Filter, offset, limit int) ([]index.SourceInfo, int, error) {
	b.mu.RLock()
	defer b.mu.RUnlock()
	if err := b.readable(); err != nil {
		return nil, 0, err
	}
	var all []index.SourceInfo
	sources := b.bySource
	if f.SourceURL != "" {
		sources = map[string]map[string]struct{}{}
		if ids, ok := b.bySource[f.SourceURL]; ok {
			sources[f.SourceURL] = ids
		}
	}
	for _, ids := range sources {
		var si index.SourceInfo
		for id := range ids {
			r := b.records[id]
			if !f.Match(r) {
				continue
			}
			if si.Chunks == 0 || r.Position < 0 || r.CreatedAt.Before(si.CreatedAt) {
				si.CreatedAt = r.CreatedAt
			}
			si.SourceURL, si.Title, si.DocType, si.ContentHash = r.SourceURL, r.Title, r.DocType, r.ContentHash
			si.Chunks++
			si.Tokens += r.Tokens
		}
		if si.Chunks > 0 {
			all = append(all, si)
		}
	}
	sort.Slice(all, func(i, j int) bool { return all[i].SourceURL < all[j].SourceURL })
	total := len(all)
	if offset < 0 {
		offset = 0
	}
	if offset > total {
		offset = total
	}
	end := total
	if limit > 0 && offset+limit < total {
		end = offset + limit
	}
	return all[offset:end], total, nil
}

// Records implements driver.Backend.
func (b *Backend) Records(ctx context.Context, f index.Filter) ([]index.Record, error) {
	b.mu.RLock()
	defer b.mu.RUnlock()
	if err := b.readable(); err != nil {
		return nil, err
	}
	var out []index.Record
	if sets, all := b.candidates(f); all {
		for _, r := range b.records {
			if f.Match(r) {
				out = append(out, copyRecord(r, true))
			}
		}
	} else {
		for _, ids := range sets {
			for id := range ids {
				if r := b.records[id]; r != nil && f.Match(r) {
					out = append(out, copyRecord(r, true))
				}
			}
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].SourceURL != out[j].SourceURL {
			return out[i].SourceURL < out[j].SourceURL
		}
		if out[i].Position != out[j].Position {
			return out[i].Position < out[j].Position
		}
		return out[i].ID < out[j].ID
	})
	return out, nil
}

// SearchText implements driver.Backend.
func (b *Backend) SearchText(ctx context.Context, text string, k int, f index.Filter) ([]driver.Hit, error) {
	if err := b.readableLocked(); err != nil {
		return nil, err
	}
	if b.bl == nil { // read-only open of a damaged index
		return nil, fmt.Errorf("%w: the full-text index is unreadable; open the store normally to rebuild it", driver.ErrCorrupt)
	}
	if k <= 0 {
		return nil, nil
	}
	// Attribute filters are applied here, so ask for more when there are any.
	want := k
	if f.RecordLevel() {
		want = k * 4
	}
	for {
		ids, scores, err := b.ft.search(ctx, b.bl, text, want, &f, b.bodyText)
		if err != nil {
			return nil, err
		}
		hits := make([]driver.Hit, 0, min(k, len(ids)))
		b.mu.RLock()
		for i, id := range ids {
			r, ok := b.records[id]
			if !ok || !f.Match(r) {
				continue // a mutation in flight, or filtered by attributes
			}
			hits = append(hits, driver.Hit{Record: copyRecord(r, false), Score: scores[i]})
			if len(hits) == k {
				break
			}
		}
		b.mu.RUnlock()
		if len(hits) == k || len(ids) < want || want >= 1<<20 {
			return hits, nil
		}
		want *= 4
	}
}

func (b *Backend) readableLocked() error {
	b.mu.RLock()
	defer b.mu.RUnlock()
	return b.readable()
}

// SearchVector implements driver.Backend; the vector index answers it.
func (b *Backend) SearchVector(ctx context.Context, vec []float32, k int, f index.Filter) ([]driver.Hit, error) {
	if k <= 0 || len(vec) == 0 {
		return nil, b.readableLocked()
	}
	return b.searchVectors(ctx, vec, k, f)
}

// Meta implements driver.Backend.
func (b *Backend) Meta(ctx context.Context, key string) (string, bool, error) {
	b.mu.RLock()
	defer b.mu.RUnlock()
	if err := b.readable(); err != nil {
		return "", false, err
	}
	v, ok := b.meta[key]
	return v, ok, nil
}

// Stats implements driver.Backend.
func (b *Backend) Stats(ctx context.Context) (driver.Stats, error) {
	b.mu.RLock()
	st := driver.Stats{Records: len(b.records), Sources: len(b.bySource), LastSync: b.lastSync}
	err := b.readable()
	b.mu.RUnlock()
	if err != nil {
		return st, err
	}
	_ = filepath.WalkDir(b.dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if info, ierr := d.Info(); ierr == nil {
				st.SizeBytes += info.Size()
			}
		}
		return nil
	})
	return st, nil
}

// bleveWait bounds how long Close waits for bleve to persist its last batches.
const bleveWait = 10 * time.Second

// Close waits for bleve to persist what it was given, checkpoints the store
// when its journal has grown, records the sequence it closed at, closes bleve
// and releases the lock. It is safe to call more than once.
func (b *Backend) Close() error {
	b.wmu.Lock()
	defer b.wmu.Unlock()
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return nil
	}
	b.closed = true
	b.mu.Unlock()
	var errs []error
	if !b.readOnly {
		b.waitBleveDurable(bleveWait)
		// A store opened from a format-1 snapshot is rewritten in format 2,
		// so that the next open maps its vectors.
		upgrade := b.snapVersion == 1 && len(b.records) > 0
		if b.broken == nil && b.journal != nil && (b.journal.Size() >= b.ckpt/8 || upgrade) {
			if err := b.checkpointLocked(upgrade); err != nil {
				errs = append(errs, err)
			}
		}
		if b.broken == nil {
			if err := writeClosedMarker(b.fs, b.dir, b.seq); err != nil {
				b.log.Warn("index: could not record the clean close; the next open checks less", "err", err)
			}
		}
	}
	if err := b.journal.close(); err != nil {
		errs = append(errs, err)
	}
	if b.bl != nil {
		if err := b.bl.Close(); err != nil {
			errs = append(errs, fmt.Errorf("index: close full-text index: %w", err))
		}
	}
	if b.vx != nil {
		b.vx.Close()
	}
	if err := b.vecs.close(); err != nil {
		errs = append(errs, fmt.Errorf("index: unmap vectors: %w", err))
	}
	if err := b.lock.Unlock(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// waitBleveDurable waits until scorch has persisted every batch it was given,
// or until d has passed (the next open then replays what is missing).
func (b *Backend) waitBleveDurable(d time.Duration) bool {
	deadline := time.Now().Add(d)
	for b.blevePersist.Load() < b.bleveBatches {
		if time.Now().After(deadline) {
			b.log.Warn("index: full-text index has not persisted its last writes; the next open replays them from the journal",
				"persisted", b.bleveDurable.Load(), "applied", b.bleveSeq)
			return false
		}
		time.Sleep(time.Millisecond)
	}
	return true
}

// markDurable records that scorch persisted batch number n, which recorded
// sequence seq.
func (b *Backend) markDurable(n, seq uint64) {
	raise(&b.blevePersist, n)
	raise(&b.bleveDurable, seq)
}

func raise(v *atomic.Uint64, to uint64) {
	for {
		cur := v.Load()
		if to <= cur || v.CompareAndSwap(cur, to) {
			return
		}
	}
}

var _ driver.Backend = (*Backend)(nil)

// beforeCreate applies internal/perm's rule to where the store's directory
// will be created (on the real file system).
func (b *Backend) beforeCreate(dir string) error {
	if _, ok := b.fs.(wal.OS); !ok {
		return nil
	}
	if err := perm.BeforeCreate(dir); err != nil {
		return fmt.Errorf("index: the store directory: %w", err)
	}
	return nil
}

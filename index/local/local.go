// Package local is ragmem's default storage backend: chromem-go holds the
// vectors in memory, bleve holds the BM25 index on disk, and ragmem's own
// snapshot + write-ahead journal make the pair durable and consistent.
//
// # Why ragmem persists chromem-go itself
//
// chromem-go's own persistence writes one file per document in place, without
// fsync; a half-written file stops the whole store from opening, and its
// in-memory state can drift from its files after a failed write. So the
// chromem-go collection here is purely in memory and is rebuilt on open from
// ragmem's files:
//
//	dir/LOCK                   advisory lock holding the owner's pid
//	dir/snap-<seq>.rgs         every record (text, metadata, vector) at <seq>
//	dir/journal-<seq>.rgj      every mutation after <seq>, one checksummed frame each
//	dir/bleve/                 the BM25 index; remembers the last sequence it applied
//	dir/quarantine/            damaged files moved aside on open, never deleted
//
// A mutation (a driver.Batch) is appended to the journal and fsynced before
// it is applied to bleve and to memory, and it is acknowledged only then. If
// applying it to bleve fails, the journal entry is cut off again, so a failed
// call changes nothing. Once the journal grows past Options.CheckpointBytes a
// new snapshot is written (temp file, fsync, rename, fsync of the directory)
// and a new journal started; the previous generation is kept as a fallback.
//
// On open the newest readable snapshot is loaded, journals are replayed (a torn
// last frame, the mark of a crash during an unacknowledged write, is cut off),
// and bleve is brought up to the same sequence: by replaying journal entries it
// missed, or by rebuilding it from the records when it is unreadable or too far
// behind. Damaged files are quarantined with a logged message instead of
// failing the open.
package local

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/blevesearch/bleve/v2"
	chromem "github.com/philippgille/chromem-go"

	"github.com/ragmem/ragmem/index/driver"
	"github.com/ragmem/ragmem/index/vecindex"
)

// Options configure a local backend. A nil *Options means all defaults.
type Options struct {
	// Logger receives recovery and checkpoint reports. Default slog.Default().
	Logger *slog.Logger
	// CheckpointBytes is the journal size that triggers a new snapshot.
	// Default 64 MiB.
	CheckpointBytes int64
	// Vectors configures the vector index (vector.go). Default: vecindex defaults.
	Vectors *vecindex.Options

	fs vfs // file layer for the store's own files; default the OS (tests inject faults)
}

// Backend is the local chromem-go + bleve store. It is safe for concurrent
// use; mutations are serialised, searches run concurrently with them.
type Backend struct {
	dir  string
	fs   vfs
	log  *slog.Logger
	ckpt int64
	lock *dirLock

	wmu     sync.Mutex // serialises mutations, checkpoints and Close
	journal *journal
	broken  error // set when the journal state is unknown; refuses writes
	seq     uint64
	snapSeq uint64 // sequence of the newest snapshot on disk

	mu       sync.RWMutex // guards the fields below
	records  map[string]*driver.Record
	bySource map[string]map[string]struct{}
	meta     map[string]string
	dim      int
	lastSync time.Time
	closed   bool

	coll    *chromem.Collection
	bl      bleve.Index
	vx      *vecindex.Index // answers vector queries (vector.go)
	vecOpts *vecindex.Options

	report Recovery
}

// Recovery reports what Open had to do to bring the store back.
type Recovery struct {
	Snapshot        string   // snapshot loaded ("" for a new or snapshot-less store)
	JournalOps      int      // journal operations replayed
	TornTailBytes   int64    // bytes of an unfinished write cut from the journal
	Quarantined     []string // files or directories moved to dir/quarantine
	BleveReplayed   int      // journal operations re-applied to bleve
	BleveRebuilt    bool     // bleve was rebuilt from the records
	BleveRemoved    int      // documents bleve had that the records do not
	BleveAdded      int      // records bleve lacked
	Problems        []string // human-readable notes, also logged
	SequenceOnOpen  uint64
	BleveSeqOnOpen  uint64
	RecordsOnOpen   int
	OpenedCleanShut bool
}

// Open opens or creates the store in dir, recovering as described in the
// package comment. It fails with an error wrapping ErrLocked if another
// process holds the store.
func Open(ctx context.Context, dir string, opts *Options) (*Backend, error) {
	if opts == nil {
		opts = &Options{}
	}
	b := &Backend{
		dir:      dir,
		fs:       opts.fs,
		log:      opts.Logger,
		ckpt:     opts.CheckpointBytes,
		vecOpts:  opts.Vectors,
		records:  map[string]*driver.Record{},
		bySource: map[string]map[string]struct{}{},
		meta:     map[string]string{},
	}
	if b.fs == nil {
		b.fs = osFS{}
	}
	if b.log == nil {
		b.log = slog.Default()
	}
	if b.ckpt <= 0 {
		b.ckpt = 64 << 20
	}
	if err := b.fs.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("index: create store directory: %w", err)
	}
	lock, err := lockDir(filepath.Join(dir, "LOCK"))
	if err != nil {
		return nil, err
	}
	b.lock = lock
	if err := b.recover(ctx); err != nil {
		if b.bl != nil {
			_ = b.bl.Close()
		}
		_ = b.journal.close()
		_ = lock.unlock()
		return nil, err
	}
	return b, nil
}

// Recovery returns what Open did.
func (b *Backend) Recovery() Recovery { return b.report }

// Dir returns the store directory.
func (b *Backend) Dir() string { return b.dir }

func (b *Backend) note(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	b.report.Problems = append(b.report.Problems, msg)
	b.log.Warn("index recovery: "+msg, "dir", b.dir)
}

// quarantine moves a damaged file or directory into dir/quarantine.
func (b *Backend) quarantine(path, why string) {
	qdir := filepath.Join(b.dir, "quarantine")
	_ = b.fs.MkdirAll(qdir, 0o700)
	dst := filepath.Join(qdir, filepath.Base(path)+"."+strconv.FormatInt(time.Now().UnixNano(), 10))
	if err := b.fs.Rename(path, dst); err != nil {
		b.note("could not quarantine %s (%s): %v", filepath.Base(path), why, err)
		return
	}
	_ = b.fs.SyncDir(b.dir)
	b.report.Quarantined = append(b.report.Quarantined, dst)
	b.note("moved %s to %s: %s", filepath.Base(path), dst, why)
}

func (b *Backend) recover(ctx context.Context) error {
	// 1. The newest readable snapshot.
	snaps, err := listGenerations(b.fs, b.dir, snapPrefix, snapSuffix)
	if err != nil {
		return fmt.Errorf("index: read store directory: %w", err)
	}
	for i := len(snaps) - 1; i >= 0; i-- {
		path := filepath.Join(b.dir, snapName(snaps[i]))
		sd, err := readSnapshot(b.fs, path)
		if err != nil {
			b.quarantine(path, err.Error())
			continue
		}
		for k, v := range sd.meta {
			b.meta[k] = v
		}
		for j := range sd.records {
			b.putMem(&sd.records[j])
		}
		b.seq, b.snapSeq = sd.seq, sd.seq
		b.report.Snapshot = filepath.Base(path)
		break
	}
	if b.report.Snapshot == "" && len(snaps) > 0 && b.report.Quarantined != nil {
		b.note("no readable snapshot; recovering from journals only")
	}

	// 2. Journals after it, in order.
	jbases, err := listGenerations(b.fs, b.dir, journalPrefix, journalSuffix)
	if err != nil {
		return fmt.Errorf("index: read store directory: %w", err)
	}
	var ops []batchOp // operations replayed, kept for bleve catch-up
	active := -1
	activeEnd := int64(0)
	for i, base := range jbases {
		path := filepath.Join(b.dir, journalName(base))
		if base > b.seq {
			b.quarantine(path, fmt.Sprintf("journal starts after sequence %d but the store is at %d; the operations in between are missing", base, b.seq))
			continue
		}
		js, err := scanJournal(b.fs, path, func(o *batchOp) error {
			if o.Seq <= b.seq {
				return nil // already in the snapshot
			}
			b.applyMem(o)
			b.seq = o.Seq
			b.report.JournalOps++
			ops = append(ops, *o)
			return nil
		})
		if err != nil {
			b.quarantine(path, err.Error())
			continue
		}
		last := i == len(jbases)-1
		if js.tail != nil {
			st, _ := b.fs.Stat(path)
			var size int64
			if st != nil {
				size = st.Size()
			}
			if last && errors.Is(js.tail, errTorn) {
				b.report.TornTailBytes = size - js.validEnd
				b.note("cut %d bytes of an unfinished write from %s", size-js.validEnd, filepath.Base(path))
			} else if last {
				b.report.TornTailBytes = size - js.validEnd
				b.note("journal %s is damaged after byte %d (%v); later operations are lost", filepath.Base(path), js.validEnd, js.tail)
				b.quarantineCopy(path)
			} else {
				b.note("journal %s is damaged after byte %d (%v)", filepath.Base(path), js.validEnd, js.tail)
			}
		}
		if last {
			active, activeEnd = i, js.validEnd
		}
	}
	if active >= 0 && jbases[active] >= b.snapSeq {
		b.journal, err = openJournalForAppend(b.fs, filepath.Join(b.dir, journalName(jbases[active])), jbases[active], activeEnd)
		if err != nil {
			return err
		}
	} else {
		if b.journal, err = createJournal(b.fs, b.dir, b.seq); err != nil {
			return err
		}
	}
	b.report.SequenceOnOpen = b.seq
	b.report.RecordsOnOpen = len(b.records)

	// 3. The vector side, in memory.
	if err := b.buildVectors(ctx); err != nil {
		return err
	}

	// 4. The BM25 side, brought to the same sequence.
	return b.recoverBleve(ctx, ops)
}

// quarantineCopy keeps a copy of a damaged journal before its tail is cut.
func (b *Backend) quarantineCopy(path string) {
	data, err := os.ReadFile(path)
	if err != nil {
		return
	}
	qdir := filepath.Join(b.dir, "quarantine")
	_ = os.MkdirAll(qdir, 0o700)
	dst := filepath.Join(qdir, filepath.Base(path)+"."+strconv.FormatInt(time.Now().UnixNano(), 10))
	if os.WriteFile(dst, data, 0o600) == nil {
		b.report.Quarantined = append(b.report.Quarantined, dst)
	}
}

func (b *Backend) buildVectors(ctx context.Context) error {
	db := chromem.NewDB()
	coll, err := db.CreateCollection("chunks", nil, refuseEmbedding)
	if err != nil {
		return fmt.Errorf("index: create vector collection: %w", err)
	}
	b.coll = coll
	for _, r := range b.records {
		if err := coll.AddDocument(ctx, chromemDoc(r)); err != nil {
			return fmt.Errorf("index: load vector of %s: %w", r.ID, err)
		}
	}
	return b.loadVectors()
}

func (b *Backend) recoverBleve(ctx context.Context, ops []batchOp) error {
	path := filepath.Join(b.dir, "bleve")
	bi, created, err := openBleve(path)
	if err != nil && !created {
		b.quarantine(path, "bleve index unreadable: "+err.Error())
		bi, created, err = openBleve(path)
	}
	if err != nil {
		return fmt.Errorf("index: create full-text index: %w", err)
	}
	b.bl = bi
	bseq, err := bleveSeq(bi)
	if err != nil {
		b.note("bleve sequence unreadable (%v); rebuilding it", err)
		return b.rebuildBleve(ctx)
	}
	b.report.BleveSeqOnOpen = bseq
	if created && len(b.records) > 0 {
		b.note("bleve index missing; rebuilding it from %d records", len(b.records))
		return b.rebuildBleve(ctx)
	}
	switch {
	case bseq == b.seq:
		b.report.OpenedCleanShut = true
		return nil
	case bseq < b.seq && len(ops) > 0 && ops[0].Seq <= bseq+1:
		// Replay what bleve missed, in order.
		for i := range ops {
			if ops[i].Seq <= bseq {
				continue
			}
			if err := b.applyBleveOp(&ops[i], b.idsBefore(ops, i)); err != nil {
				b.note("replaying into bleve failed (%v); rebuilding it", err)
				return b.rebuildBleve(ctx)
			}
			b.report.BleveReplayed++
		}
		return nil
	default:
		b.note("bleve is at sequence %d but the records at %d; reconciling", bseq, b.seq)
		return b.reconcileBleve(ctx)
	}
}

// idsBefore is used during replay: deletes by source need the ids the source
// had just before op i, which the final in-memory state no longer knows. The
// ids are recomputed by walking the replayed operations backwards from the
// final state; since ids are unique per source and content, it is enough to
// delete every id that any earlier or the current state had for the source.
func (b *Backend) idsBefore(ops []batchOp, i int) map[string][]string {
	o := &ops[i]
	if len(o.Batch.DeleteSources) == 0 {
		return nil
	}
	want := map[string]bool{}
	for _, s := range o.Batch.DeleteSources {
		want[s] = true
	}
	out := map[string][]string{}
	for j := 0; j < i; j++ {
		for _, r := range ops[j].Batch.Put {
			if want[r.SourceURL] {
				out[r.SourceURL] = append(out[r.SourceURL], r.ID)
			}
		}
	}
	b.mu.RLock()
	for s := range want {
		for id := range b.bySource[s] {
			out[s] = append(out[s], id)
		}
	}
	b.mu.RUnlock()
	return out
}

func (b *Backend) applyBleveOp(o *batchOp, sourceIDs map[string][]string) error {
	bb := b.bl.NewBatch()
	if o.Meta == nil {
		for _, ids := range sourceIDs {
			for _, id := range ids {
				bb.Delete(id)
			}
		}
		for _, id := range o.Batch.DeleteIDs {
			bb.Delete(id)
		}
		for i := range o.Batch.Put {
			if err := bb.Index(o.Batch.Put[i].ID, bleveDoc(&o.Batch.Put[i])); err != nil {
				return err
			}
		}
	}
	bb.SetInternal([]byte(seqKey), []byte(strconv.FormatUint(o.Seq, 10)))
	return b.bl.Batch(bb)
}

// rebuildBleve replaces the bleve index by one built from the records.
func (b *Backend) rebuildBleve(ctx context.Context) error {
	path := filepath.Join(b.dir, "bleve")
	if b.bl != nil {
		_ = b.bl.Close()
		b.bl = nil
	}
	if err := os.RemoveAll(path); err != nil {
		return fmt.Errorf("index: remove damaged full-text index: %w", err)
	}
	bi, err := bleve.New(path, newMapping())
	if err != nil {
		return fmt.Errorf("index: create full-text index: %w", err)
	}
	b.bl = bi
	b.report.BleveRebuilt = true
	ids := make([]string, 0, len(b.records))
	for id := range b.records {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	if err := b.indexBleve(ctx, ids); err != nil {
		return err
	}
	b.report.BleveAdded = len(ids)
	b.note("rebuilt the full-text index from %d records", len(ids))
	return nil
}

// indexBleve indexes the given records in batches and finally records the
// current sequence.
func (b *Backend) indexBleve(ctx context.Context, ids []string) error {
	const batchSize = 2000
	for start := 0; start < len(ids) || start == 0; start += batchSize {
		if err := ctx.Err(); err != nil {
			return err
		}
		end := min(start+batchSize, len(ids))
		bb := b.bl.NewBatch()
		for _, id := range ids[start:end] {
			if err := bb.Index(id, bleveDoc(b.records[id])); err != nil {
				return fmt.Errorf("index: full-text index %s: %w", id, err)
			}
		}
		if end == len(ids) {
			bb.SetInternal([]byte(seqKey), []byte(strconv.FormatUint(b.seq, 10)))
		}
		if err := b.bl.Batch(bb); err != nil {
			return fmt.Errorf("index: full-text index: %w", err)
		}
		if end == len(ids) {
			break
		}
	}
	return nil
}

// bleveIDs lists every document id in bleve.
func (b *Backend) bleveIDs(ctx context.Context) (map[string]struct{}, error) {
	n, err := b.bl.DocCount()
	if err != nil {
		return nil, err
	}
	ids := make(map[string]struct{}, n)
	const page = 10000
	q := bleve.NewMatchAllQuery()
	for from := 0; ; from += page {
		req := bleve.NewSearchRequestOptions(q, page, from, false)
		req.Score = "none"
		res, err := b.bl.SearchInContext(ctx, req)
		if err != nil {
			return nil, err
		}
		for _, h := range res.Hits {
			ids[h.ID] = struct{}{}
		}
		if len(res.Hits) < page {
			return ids, nil
		}
	}
}

// reconcileBleve makes bleve hold exactly the records: documents it has that
// the records do not are deleted; records it lacks are indexed. Records whose
// content may differ (the same id overwritten while bleve lagged) are
// re-indexed too, which is why every record is re-indexed when the gap cannot
// be replayed.
func (b *Backend) reconcileBleve(ctx context.Context) error {
	have, err := b.bleveIDs(ctx)
	if err != nil {
		b.note("listing bleve documents failed (%v); rebuilding it", err)
		return b.rebuildBleve(ctx)
	}
	bb := b.bl.NewBatch()
	for id := range have {
		if _, ok := b.records[id]; !ok {
			bb.Delete(id)
			b.report.BleveRemoved++
		}
	}
	if err := b.bl.Batch(bb); err != nil {
		return fmt.Errorf("index: reconcile full-text index: %w", err)
	}
	ids := make([]string, 0, len(b.records))
	for id := range b.records {
		ids = append(ids, id)
		if _, ok := have[id]; !ok {
			b.report.BleveAdded++
		}
	}
	sort.Strings(ids)
	if err := b.indexBleve(ctx, ids); err != nil {
		return err
	}
	b.note("reconciled the full-text index: removed %d stale documents, added %d missing ones", b.report.BleveRemoved, b.report.BleveAdded)
	return nil
}

// refuseEmbedding is the chromem-go embedding function: every record arrives
// with its vector, so chromem-go must never compute one.
func refuseEmbedding(context.Context, string) ([]float32, error) {
	return nil, errors.New("index: record without vector")
}

func chromemDoc(r *driver.Record) chromem.Document {
	md := make(map[string]string, 2+len(r.Attrs))
	md[fieldDocType] = r.DocType
	md[fieldSource] = r.SourceURL
	for k, v := range r.Attrs {
		md["attr."+k] = v
	}
	return chromem.Document{ID: r.ID, Metadata: md, Embedding: r.Vector, Content: r.Content}
}

// putMem stores r in the in-memory maps (not the vector collection).
func (b *Backend) putMem(r *driver.Record) {
	if old, ok := b.records[r.ID]; ok && old.SourceURL != r.SourceURL {
		b.unindexSource(old)
	}
	b.records[r.ID] = r
	s := b.bySource[r.SourceURL]
	if s == nil {
		s = map[string]struct{}{}
		b.bySource[r.SourceURL] = s
	}
	s[r.ID] = struct{}{}
	if b.dim == 0 && len(r.Vector) > 0 {
		b.dim = len(r.Vector)
	}
}

func (b *Backend) unindexSource(r *driver.Record) {
	if s := b.bySource[r.SourceURL]; s != nil {
		delete(s, r.ID)
		if len(s) == 0 {
			delete(b.bySource, r.SourceURL)
		}
	}
}

func (b *Backend) deleteMem(id string) {
	if r, ok := b.records[id]; ok {
		b.unindexSource(r)
		delete(b.records, id)
	}
}

// plan resolves a batch against the current records: the ids it deletes.
func (b *Backend) plan(bt *driver.Batch) []string {
	var del []string
	seen := map[string]bool{}
	for _, s := range bt.DeleteSources {
		for id := range b.bySource[s] {
			if !seen[id] {
				seen[id] = true
				del = append(del, id)
			}
		}
	}
	for _, id := range bt.DeleteIDs {
		if _, ok := b.records[id]; ok && !seen[id] {
			seen[id] = true
			del = append(del, id)
		}
	}
	sort.Strings(del)
	return del
}

// applyMem applies an operation to the in-memory maps only (used on replay,
// before the vector collection exists).
func (b *Backend) applyMem(o *batchOp) {
	if o.Meta != nil {
		for k, v := range o.Meta {
			b.meta[k] = v
		}
		return
	}
	for _, id := range b.plan(&o.Batch) {
		b.deleteMem(id)
	}
	for i := range o.Batch.Put {
		r := o.Batch.Put[i]
		b.putMem(&r)
	}
}

func (b *Backend) validate(bt *driver.Batch) error {
	dim := b.dim
	seen := make(map[string]bool, len(bt.Put))
	for i := range bt.Put {
		r := &bt.Put[i]
		switch {
		case r.ID == "":
			return fmt.Errorf("%w: record %d has no id", driver.ErrInvalid, i)
		case seen[r.ID]:
			return fmt.Errorf("%w: id %q appears twice in one batch", driver.ErrInvalid, r.ID)
		case r.SourceURL == "":
			return fmt.Errorf("%w: record %q has no source URL", driver.ErrInvalid, r.ID)
		case len(r.Vector) == 0:
			return fmt.Errorf("%w: record %q has no vector", driver.ErrInvalid, r.ID)
		}
		seen[r.ID] = true
		if dim == 0 {
			dim = len(r.Vector)
		}
		if len(r.Vector) != dim {
			return fmt.Errorf("%w: record %q has a %d-dimensional vector, the store holds %d-dimensional ones", driver.ErrInvalid, r.ID, len(r.Vector), dim)
		}
		for _, f := range r.Vector {
			if f != f || f > 1e30 || f < -1e30 {
				return fmt.Errorf("%w: record %q has a non-finite vector", driver.ErrInvalid, r.ID)
			}
		}
	}
	return nil
}

// Apply implements driver.Backend.
func (b *Backend) Apply(ctx context.Context, bt *driver.Batch) error {
	if bt.Empty() {
		return nil
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	b.wmu.Lock()
	defer b.wmu.Unlock()
	if err := b.writable(); err != nil {
		return err
	}
	b.mu.RLock()
	err := b.validate(bt)
	del := b.plan(bt)
	b.mu.RUnlock()
	if err != nil {
		return err
	}
	// Records are copied so that callers may reuse their slices.
	put := make([]driver.Record, len(bt.Put))
	copy(put, bt.Put)
	for i := range put {
		put[i].CreatedAt = put[i].CreatedAt.UTC()
		if len(put[i].Attrs) == 0 {
			put[i].Attrs = nil
		}
	}
	op := batchOp{Seq: b.seq + 1, Batch: driver.Batch{DeleteSources: bt.DeleteSources, DeleteIDs: bt.DeleteIDs, Put: put}}
	prev := b.journal.size
	if err := b.journal.append(&op); err != nil {
		if errors.Is(err, errJournalUnknown) {
			b.broken = err
		}
		return err
	}
	// Durable from here on. Apply to bleve; if that fails, take the journal
	// entry back so that the call has no effect.
	bb := b.bl.NewBatch()
	for _, id := range del {
		bb.Delete(id)
	}
	for i := range put {
		if err := bb.Index(put[i].ID, bleveDoc(&put[i])); err != nil {
			return b.undo(prev, fmt.Errorf("index: full-text index %s: %w", put[i].ID, err))
		}
	}
	bb.SetInternal([]byte(seqKey), []byte(strconv.FormatUint(op.Seq, 10)))
	if err := b.bl.Batch(bb); err != nil {
		return b.undo(prev, fmt.Errorf("index: write full-text index: %w", err))
	}

	b.mu.Lock()
	for _, id := range del {
		b.deleteMem(id)
	}
	for i := range put {
		b.putMem(&put[i])
	}
	b.seq = op.Seq
	b.lastSync = time.Now()
	b.mu.Unlock()
	if len(del) > 0 {
		_ = b.coll.Delete(ctx, nil, nil, del...)
	}
	for i := range put {
		if err := b.coll.AddDocument(context.WithoutCancel(ctx), chromemDoc(&put[i])); err != nil {
			// Cannot happen for validated records; the data is durable and
			// the next open rebuilds the collection from it.
			b.log.Error("index: vector collection rejected a record", "id", put[i].ID, "err", err)
		}
	}
	b.applyVectors(del, put)
	if b.journal.size >= b.ckpt {
		if err := b.checkpointLocked(); err != nil {
			b.log.Warn("index: checkpoint failed; the journal keeps growing until one succeeds", "err", err)
		}
	}
	return nil
}

// undo takes back the journal entry of a mutation that could not be applied.
// bleve may have applied part of it; its documents are put back to match the
// records by the next reconcile, which is forced by leaving its sequence behind.
func (b *Backend) undo(prev int64, cause error) error {
	if err := b.journal.rollback(prev); err != nil {
		b.broken = err
		return fmt.Errorf("%w; %w", cause, err)
	}
	return cause
}

func (b *Backend) writable() error {
	if b.closed {
		return driver.ErrClosed
	}
	if b.broken != nil {
		return b.broken
	}
	return nil
}

// Checkpoint writes a snapshot of the whole store and starts a new journal.
func (b *Backend) Checkpoint(ctx context.Context) error {
	b.wmu.Lock()
	defer b.wmu.Unlock()
	if err := b.writable(); err != nil {
		return err
	}
	return b.checkpointLocked()
}

func (b *Backend) checkpointLocked() error {
	if b.seq == b.snapSeq && b.journal.base == b.seq {
		return nil
	}
	b.mu.RLock()
	recs := make([]*driver.Record, 0, len(b.records))
	for _, r := range b.records {
		recs = append(recs, r)
	}
	meta := make(map[string]string, len(b.meta))
	for k, v := range b.meta {
		meta[k] = v
	}
	b.mu.RUnlock()
	sort.Slice(recs, func(i, j int) bool { return recs[i].ID < recs[j].ID })
	start := time.Now()
	if err := writeSnapshot(b.fs, b.dir, b.seq, meta, recs); err != nil {
		return fmt.Errorf("index: write snapshot: %w", err)
	}
	nj, err := createJournal(b.fs, b.dir, b.seq)
	if err != nil {
		return err
	}
	old := b.journal
	b.journal = nj
	_ = old.close()
	prevSnap := b.snapSeq
	b.snapSeq = b.seq
	b.log.Debug("index: checkpoint", "seq", b.seq, "records", len(recs), "took", time.Since(start))
	b.pruneGenerations(prevSnap)
	return nil
}

// pruneGenerations removes snapshots and journals older than keep, which is
// the previous snapshot: it and the journals from it onwards stay as a fallback.
func (b *Backend) pruneGenerations(keep uint64) {
	if snaps, err := listGenerations(b.fs, b.dir, snapPrefix, snapSuffix); err == nil {
		for _, s := range snaps {
			if s < keep {
				_ = b.fs.Remove(filepath.Join(b.dir, snapName(s)))
			}
		}
	}
	if js, err := listGenerations(b.fs, b.dir, journalPrefix, journalSuffix); err == nil {
		for _, j := range js {
			if j < keep {
				_ = b.fs.Remove(filepath.Join(b.dir, journalName(j)))
			}
		}
	}
	_ = b.fs.SyncDir(b.dir)
}

func (b *Backend) readable() error {
	if b.closed {
		return driver.ErrClosed
	}
	return nil
}

func copyRecord(r *driver.Record, withVector bool) driver.Record {
	c := *r
	if !withVector {
		c.Vector = nil
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
func (b *Backend) Get(ctx context.Context, ids []string) ([]driver.Record, error) {
	b.mu.RLock()
	defer b.mu.RUnlock()
	if err := b.readable(); err != nil {
		return nil, err
	}
	out := make([]driver.Record, 0, len(ids))
	for _, id := range ids {
		if r, ok := b.records[id]; ok {
			out = append(out, copyRecord(r, true))
		}
	}
	return out, nil
}

// Source implements driver.Backend.
func (b *Backend) Source(ctx context.Context, sourceURL string) ([]driver.Record, error) {
	b.mu.RLock()
	defer b.mu.RUnlock()
	if err := b.readable(); err != nil {
		return nil, err
	}
	ids := b.bySource[sourceURL]
	out := make([]driver.Record, 0, len(ids))
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
func (b *Backend) Sources(ctx context.Context, f driver.Filter, offset, limit int) ([]driver.SourceInfo, int, error) {
	b.mu.RLock()
	defer b.mu.RUnlock()
	if err := b.readable(); err != nil {
		return nil, 0, err
	}
	var all []driver.SourceInfo
	sources := b.bySource
	if f.SourceURL != "" {
		sources = map[string]map[string]struct{}{}
		if ids, ok := b.bySource[f.SourceURL]; ok {
			sources[f.SourceURL] = ids
		}
	}
	for _, ids := range sources {
		var si driver.SourceInfo
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
func (b *Backend) Records(ctx context.Context, f driver.Filter) ([]driver.Record, error) {
	b.mu.RLock()
	defer b.mu.RUnlock()
	if err := b.readable(); err != nil {
		return nil, err
	}
	var out []driver.Record
	for _, r := range b.records {
		if f.Match(r) {
			out = append(out, copyRecord(r, true))
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
func (b *Backend) SearchText(ctx context.Context, text string, k int, f driver.Filter) ([]driver.Hit, error) {
	if err := b.readableLocked(); err != nil {
		return nil, err
	}
	if k <= 0 {
		return nil, nil
	}
	// Attribute filters are applied here, so ask for more when there are any.
	want := k
	if len(f.Attrs) > 0 {
		want = k * 4
	}
	for {
		ids, scores, err := searchBleve(ctx, b.bl, text, want, &f)
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
func (b *Backend) SearchVector(ctx context.Context, vec []float32, k int, f driver.Filter) ([]driver.Hit, error) {
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

// SetMeta implements driver.Backend.
func (b *Backend) SetMeta(ctx context.Context, key, value string) error {
	b.wmu.Lock()
	defer b.wmu.Unlock()
	if err := b.writable(); err != nil {
		return err
	}
	b.mu.RLock()
	cur, ok := b.meta[key]
	b.mu.RUnlock()
	if ok && cur == value {
		return nil
	}
	op := batchOp{Seq: b.seq + 1, Meta: map[string]string{key: value}}
	prev := b.journal.size
	if err := b.journal.append(&op); err != nil {
		if errors.Is(err, errJournalUnknown) {
			b.broken = err
		}
		return err
	}
	if err := b.applyBleveOp(&op, nil); err != nil {
		return b.undo(prev, fmt.Errorf("index: write full-text index: %w", err))
	}
	b.mu.Lock()
	b.meta[key] = value
	b.seq = op.Seq
	b.lastSync = time.Now()
	b.mu.Unlock()
	return nil
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

// Close checkpoints the store when its journal has grown, closes bleve and
// releases the lock. It is safe to call more than once.
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
	if b.broken == nil && b.journal != nil && b.journal.size >= b.ckpt/8 {
		if err := b.checkpointLocked(); err != nil {
			errs = append(errs, err)
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
	if err := b.lock.unlock(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

var _ driver.Backend = (*Backend)(nil)

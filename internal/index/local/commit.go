package local

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"strconv"
	"time"

	"github.com/blevesearch/bleve/v2"

	"github.com/ragmem/ragmem/index"
	"github.com/ragmem/ragmem/index/driver"
	"github.com/ragmem/ragmem/internal/wal"
)

// Group commit. Every mutation becomes a commitReq. The first caller to find
// no commit in progress becomes the leader: it takes every request waiting at
// that moment, appends their journal entries with one write and one fsync,
// applies them in order to bleve and to memory, and wakes their callers. If
// more requests arrived meanwhile, leadership passes to the oldest of them.
// A lone writer pays one fsync per mutation, as before; concurrent writers
// share them.

type commitReq struct {
	op   batchOp
	err  error
	wake chan bool // true: lead the next group; false: done, err is set
}

// maxGroupBytes bounds the journal bytes one group commit writes.
const maxGroupBytes = 64 << 20

// Apply implements driver.Backend. The batch is validated, made durable in the
// journal, applied to both indexes, and only then acknowledged. ctx is
// honoured until the write starts; after that the call waits for the outcome.
func (b *Backend) Apply(ctx context.Context, bt *driver.Batch) error {
	if bt.Empty() {
		return nil
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if b.readOnly {
		return ErrReadOnly
	}
	// Records are copied so that callers may reuse their slices; vectors
	// are stored at unit length.
	put := make([]index.Record, len(bt.Put))
	copy(put, bt.Put)
	for i := range put {
		put[i].CreatedAt = put[i].CreatedAt.UTC()
		if len(put[i].Attrs) == 0 {
			put[i].Attrs = nil
		}
		put[i].Vector = unitVector(put[i].Vector)
	}
	op := batchOp{Batch: driver.Batch{
		DeleteSources: append([]string(nil), bt.DeleteSources...),
		DeleteIDs:     append([]string(nil), bt.DeleteIDs...),
		Put:           put,
	}}
	return b.submit(&op)
}

// SetMeta implements driver.Backend.
func (b *Backend) SetMeta(ctx context.Context, key, value string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if b.readOnly {
		return ErrReadOnly
	}
	b.mu.RLock()
	cur, ok := b.meta[key]
	err := b.readable()
	b.mu.RUnlock()
	if err != nil {
		return err
	}
	if ok && cur == value {
		return nil
	}
	return b.submit(&batchOp{Meta: map[string]string{key: value}})
}

// submit queues op for the next group commit and waits for its outcome,
// leading the commit itself when no other caller is.
func (b *Backend) submit(op *batchOp) error {
	r := &commitReq{op: *op, wake: make(chan bool, 1)}
	b.cmu.Lock()
	b.pending = append(b.pending, r)
	lead := !b.leading
	b.leading = true
	b.cmu.Unlock()
	if !lead {
		if !<-r.wake {
			return r.err
		}
	}
	for {
		b.cmu.Lock()
		group := b.takeGroup()
		b.cmu.Unlock()
		b.commitGroup(group)
		b.cmu.Lock()
		if !r.done() {
			// Our request was pushed back (an earlier one in its group failed
			// in bleve); keep leading until it is through.
			b.cmu.Unlock()
			continue
		}
		if len(b.pending) > 0 {
			next := b.pending[0]
			b.cmu.Unlock()
			next.wake <- true
		} else {
			b.leading = false
			b.cmu.Unlock()
		}
		return r.err
	}
}

// done reports whether r has its outcome.
func (r *commitReq) done() bool { return r.err != nil || r.op.Seq != 0 }

// takeGroup removes the pending requests that fit in one group. Called with cmu held.
func (b *Backend) takeGroup() []*commitReq {
	n, size := 0, 0
	for n < len(b.pending) && (b.groupLimit <= 0 || n < b.groupLimit) {
		size += 64 + opSizeHint(&b.pending[n].op)
		if n > 0 && size > maxGroupBytes {
			break
		}
		n++
	}
	group := b.pending[:n:n]
	b.pending = append([]*commitReq(nil), b.pending[n:]...)
	return group
}

func opSizeHint(o *batchOp) int {
	n := 0
	for i := range o.Batch.Put {
		r := &o.Batch.Put[i]
		n += len(r.Content) + 4*len(r.Vector) + len(r.SourceURL) + len(r.Title) + 64
	}
	return n
}

// commitGroup writes, applies and answers a group of requests.
func (b *Backend) commitGroup(group []*commitReq) {
	b.wmu.Lock()
	defer b.wmu.Unlock()
	// Every caller returns r.err once its request is answered. wake is
	// buffered, so answering the leader's own request does not block.
	answer := func(r *commitReq, err error) {
		r.err = err
		select {
		case r.wake <- false:
		default:
		}
	}
	b.mu.RLock()
	err := b.writable()
	dim := b.dim
	b.mu.RUnlock()
	if err != nil {
		for _, r := range group {
			answer(r, err)
		}
		return
	}
	// Validate in order: a batch may fix the dimension for those after it.
	var ok []*commitReq
	var payloads [][]byte
	seq := b.seq
	for _, r := range group {
		r.op.Seq = 0
		if r.op.Meta == nil {
			d, err := validate(&r.op.Batch, dim)
			if err != nil {
				answer(r, err)
				continue
			}
			dim = d
		}
		r.op.Seq = seq + 1
		p := encodeOp(&r.op)
		if len(p) > wal.MaxFrame {
			r.op.Seq = 0
			answer(r, fmt.Errorf("%w: batch of %d bytes exceeds the %d-byte limit", driver.ErrInvalid, len(p), wal.MaxFrame))
			continue
		}
		seq++
		ok = append(ok, r)
		payloads = append(payloads, p)
	}
	if len(ok) == 0 {
		return
	}
	start := b.journal.Size()
	if err := b.journal.Append(payloads...); err != nil {
		if errors.Is(err, wal.ErrUnknownState) {
			b.broken = err
		}
		err = fmt.Errorf("index: write journal: %w", err)
		for _, r := range ok {
			r.op.Seq = 0
			answer(r, err)
		}
		return
	}
	// Durable from here on. Apply in order.
	off := start
	for i, r := range ok {
		if err := b.applyOp(&r.op); err != nil {
			b.takeBack(ok[i:], off, err, answer)
			break
		}
		answer(r, nil)
		off += wal.FrameSize(len(payloads[i]))
	}
	if b.journal.Size() >= b.nextCkpt {
		if err := b.checkpointLocked(false); err != nil {
			b.nextCkpt = b.journal.Size() + b.ckpt/4
			b.log.Warn("index: checkpoint failed; the journal keeps growing until one succeeds", "err", err)
		}
	}
}

// takeBack handles a mutation that is durable in the journal but could not be
// applied to bleve: its entry and those after it are cut from the journal, it
// fails, and the ones after it go back to the head of the queue. bleve may
// hold part of it; its documents are put back to match the records.
func (b *Backend) takeBack(rest []*commitReq, off int64, cause error, answer func(*commitReq, error)) {
	failed := rest[0]
	failed.op.Seq = 0
	terr := b.journal.Truncate(off)
	if terr != nil {
		b.broken = terr
		answer(failed, fmt.Errorf("%w; %w", cause, terr))
		for _, r := range rest[1:] {
			r.op.Seq = 0
			answer(r, terr)
		}
	} else {
		answer(failed, cause)
		b.cmu.Lock()
		requeue := make([]*commitReq, 0, len(rest)-1+len(b.pending))
		for _, r := range rest[1:] {
			r.op.Seq = 0
			requeue = append(requeue, r)
		}
		b.pending = append(requeue, b.pending...)
		b.cmu.Unlock()
	}
	if err := b.resyncBleve(&failed.op.Batch); err != nil {
		b.broken = fmt.Errorf("index: full-text index out of step after a failed write (%v); reopen the store to repair it", err)
		b.log.Error(b.broken.Error())
	}
}

// applyOp applies a journaled operation to bleve and to memory.
func (b *Backend) applyOp(o *batchOp) error {
	if o.Meta != nil {
		if err := b.bleveBatch(nil, nil, o.Seq); err != nil {
			return fmt.Errorf("index: write full-text index: %w", err)
		}
		b.mu.Lock()
		for k, v := range o.Meta {
			b.meta[k] = v
		}
		b.seq = o.Seq
		b.lastSync = time.Now()
		b.mu.Unlock()
		return nil
	}
	put := o.Batch.Put
	b.mu.RLock()
	del := b.plan(&o.Batch)
	b.mu.RUnlock()
	if err := b.bleveBatch(del, put, o.Seq); err != nil {
		return err
	}
	b.mu.Lock()
	for _, id := range del {
		b.deleteMem(id)
	}
	for i := range put {
		b.putMem(&put[i])
	}
	b.seq = o.Seq
	b.lastSync = time.Now()
	b.mu.Unlock()
	b.applyVectors(del, put)
	return nil
}

// bleveBatch deletes del, indexes put and records seq in one bleve batch.
func (b *Backend) bleveBatch(del []string, put []index.Record, seq uint64) error {
	bb := b.bl.NewBatch()
	for _, id := range del {
		bb.Delete(id)
	}
	for i := range put {
		if err := bb.Index(put[i].ID, storeDoc(&put[i])); err != nil {
			return fmt.Errorf("index: full-text index %s: %w", put[i].ID, err)
		}
	}
	return b.commitBleve(bb, seq)
}

// commitBleve sets the sequence on a bleve batch and applies it.
func (b *Backend) commitBleve(bb *bleve.Batch, seq uint64) error {
	bb.SetInternal([]byte(seqKey), []byte(strconv.FormatUint(seq, 10)))
	b.bleveBatches++
	n := b.bleveBatches
	bb.SetPersistedCallback(func(err error) {
		if err == nil {
			b.markDurable(n, seq)
		}
	})
	if err := b.bl.Batch(bb); err != nil {
		return fmt.Errorf("index: write full-text index: %w", err)
	}
	if b.memory {
		b.markDurable(n, seq) // nothing to persist
	}
	b.bleveSeq = seq
	return nil
}

// resyncBleve makes bleve agree with the records for every id a batch could
// have touched, and records the current sequence.
func (b *Backend) resyncBleve(bt *driver.Batch) error {
	b.mu.RLock()
	defer b.mu.RUnlock()
	ids := map[string]bool{}
	for _, id := range bt.DeleteIDs {
		ids[id] = true
	}
	for i := range bt.Put {
		ids[bt.Put[i].ID] = true
	}
	for _, s := range bt.DeleteSources {
		for id := range b.bySource[s] {
			ids[id] = true
		}
	}
	bb := b.bl.NewBatch()
	for id := range ids {
		if r, ok := b.records[id]; ok {
			if err := bb.Index(id, storeDoc(r)); err != nil {
				return err
			}
		} else {
			bb.Delete(id)
		}
	}
	return b.commitBleve(bb, b.seq)
}

func (b *Backend) writable() error {
	if b.closed {
		return driver.ErrClosed
	}
	if b.readOnly {
		return ErrReadOnly
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
	b.mu.RLock()
	err := b.writable()
	b.mu.RUnlock()
	if err != nil {
		return err
	}
	return b.checkpointLocked(false)
}

// checkpointAt is the journal size at which the next checkpoint is due:
// CheckpointBytes, or CheckpointRatio of the newest snapshot if that is more.
func (b *Backend) checkpointAt() int64 {
	if b.ckptRate > 0 {
		return max(b.ckpt, int64(b.ckptRate*float64(b.snapBytes)))
	}
	return b.ckpt
}

// checkpointLocked writes a snapshot of the whole store and its vector
// codes, starts a new journal and maps the new snapshot's vectors; unless
// force, only when something changed since the last snapshot.
func (b *Backend) checkpointLocked(force bool) error {
	if !force && b.seq == b.snapSeq && b.journal.base == b.seq {
		return nil
	}
	b.mu.RLock()
	recs := make([]*index.Record, 0, len(b.records))
	for _, r := range b.records {
		recs = append(recs, r)
	}
	meta := make(map[string]string, len(b.meta))
	for k, v := range b.meta {
		meta[k] = v
	}
	dim := b.dim
	b.mu.RUnlock()
	sort.Slice(recs, func(i, j int) bool { return recs[i].ID < recs[j].ID })
	start := time.Now()
	tag, err := writeSnapshot(b.fs, b.dir, b.seq, meta, recs, dim, b.vx)
	if err != nil {
		return fmt.Errorf("index: write snapshot: %w", err)
	}
	b.snapVersion, b.snapTag = 2, tag
	sameGen := b.seq == b.snapSeq
	b.remapVectors(b.seq, recs, dim)
	if b.journal.base != b.seq {
		nj, err := createJournal(b.fs, b.dir, b.seq)
		if err != nil {
			return err
		}
		old := b.journal
		b.journal = nj
		_ = old.close()
	}
	prevSnap := b.snapSeq
	b.snapSeq = b.seq
	if st, err := b.fs.Stat(filepath.Join(b.dir, snapName(b.seq))); err == nil {
		b.snapBytes = st.Size()
	}
	b.nextCkpt = b.checkpointAt()
	b.log.Debug("index: checkpoint", "seq", b.seq, "records", len(recs), "bytes", b.snapBytes, "took", time.Since(start))
	if !sameGen {
		b.pruneGenerations(prevSnap)
	}
	return nil
}

// pruneGenerations removes snapshots older than keep (the previous snapshot,
// kept as a fallback) and the journals no longer needed: a journal goes once
// every operation in it is covered by a kept snapshot and persisted by bleve.
func (b *Backend) pruneGenerations(keep uint64) {
	if snaps, err := listGenerations(b.fs, b.dir, snapPrefix, snapSuffix); err == nil {
		for _, s := range snaps {
			if s < keep {
				_ = b.fs.Remove(filepath.Join(b.dir, snapName(s)))
			}
		}
	}
	if codes, err := listGenerations(b.fs, b.dir, codesPrefix, codesSuffix); err == nil {
		for _, s := range codes {
			if s < keep {
				_ = b.fs.Remove(filepath.Join(b.dir, codesName(s)))
			}
		}
	}
	covered := min(keep, b.bleveDurable.Load())
	if js, err := listGenerations(b.fs, b.dir, journalPrefix, journalSuffix); err == nil {
		for i := 0; i+1 < len(js); i++ {
			// Journal i holds operations (js[i], js[i+1]].
			if js[i+1] <= covered {
				_ = b.fs.Remove(filepath.Join(b.dir, journalName(js[i])))
			}
		}
	}
	_ = b.fs.SyncDir(b.dir)
}

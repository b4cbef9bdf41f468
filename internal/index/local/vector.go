package local

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"

	"github.com/ragmem/ragmem/index"
	"github.com/ragmem/ragmem/index/driver"
	"github.com/ragmem/ragmem/internal/index/vecindex"
	"github.com/ragmem/ragmem/internal/wal"
)

// The vector side. Queries are answered by a vecindex.Index over the
// records' vectors (referenced, not copied): 1-bit codes with exact
// rescoring for dense queries, int8 codes for sparse ones, an exact scan for
// small filtered sets, and metadata filters applied before scoring.
//
// The vectors of the records in the newest snapshot are mapped from its
// vector section (snapshot.go, vecfile.go); those written since are in
// memory until the next checkpoint maps them too. The index's codes for the
// snapshot's rows are persisted next to it as vidx-<seq>.rgx, a derived
// file: written with the snapshot (temp file, fsync, rename, directory
// fsync), tagged with the snapshot's sequence and vector checksum, verified
// on open, and rebuilt from the vectors when it is missing, stale or
// damaged (a damaged one is quarantined first). The journal's operations
// after the snapshot are applied to the index on open like any write, so
// the first query after open runs at full speed.

const (
	codesPrefix = "vidx-"
	codesSuffix = ".rgx"
)

func codesName(seq uint64) string { return fmt.Sprintf("%s%016x%s", codesPrefix, seq, codesSuffix) }

// vecItem is the vecindex entry of a record.
func vecItem(r *index.Record) vecindex.Item {
	return vecindex.Item{ID: r.ID, Vector: r.Vector, DocType: r.DocType, Source: r.SourceURL}
}

// unitVector returns v scaled to unit length: v itself when it already is
// (within 1e-4 in squared norm, as vecindex decides), else a new slice.
// Records are stored with unit vectors, so that the snapshot's mapped rows
// can be used as they are.
func unitVector(v []float32) []float32 {
	var n float64
	for _, f := range v {
		n += float64(f) * float64(f)
	}
	if n == 0 || math.Abs(n-1) < 1e-4 {
		return v
	}
	inv := 1 / math.Sqrt(n)
	out := make([]float32, len(v))
	for i, f := range v {
		out[i] = float32(float64(f) * inv)
	}
	return out
}

// vectorLoad is the vector index being loaded from a snapshot's persisted
// codes in the background, while open fills the record maps, opens bleve
// and replays the journal (none of which the index needs).
type vectorLoad struct {
	sd    *snapshotData
	items []vecindex.Item
	tag   []byte
	path  string
	done  chan struct{}
	vx    *vecindex.Index
	err   error // reading or loading the codes failed
}

// startVectors starts loading the vector index of snapshot sd (format 2,
// with records) from its codes: pre, when not nil, is the newest
// snapshot's codes file being read already. finishVectors completes it.
func (b *Backend) startVectors(sd *snapshotData, pre *codesRead) *vectorLoad {
	vl := &vectorLoad{sd: sd, done: make(chan struct{}),
		tag:  codesTag(sd.seq, len(sd.records), sd.dim, sd.fingerprint),
		path: filepath.Join(b.dir, codesName(sd.seq))}
	go func() {
		defer close(vl.done)
		vl.items = make([]vecindex.Item, len(sd.records))
		for i := range sd.records {
			vl.items[i] = vecItem(&sd.records[i])
		}
		var c *vecindex.Codes
		if pre != nil && pre.seq == sd.seq {
			c, vl.err = pre.result(vl.tag)
		} else {
			c, vl.err = b.readCodes(vl.path, vl.tag)
		}
		if vl.err != nil {
			return
		}
		vl.vx = vecindex.New(b.vecOpts)
		if err := vl.vx.Load(vl.items, c); err != nil {
			vl.vx, vl.err = nil, fmt.Errorf("%w: do not match the snapshot: %w", vecindex.ErrCodes, err)
		}
	}()
	return vl
}

// wait waits for the background load (a nil vectorLoad has none).
func (vl *vectorLoad) wait() {
	if vl != nil {
		<-vl.done
	}
}

// finishVectors completes the vector index on open, with the records
// final: the one loaded from the snapshot's codes (vl) when they were
// sound, else built by encoding the snapshot's vectors (and its codes then
// written again, unless read-only), or from every record when there is no
// format-2 snapshot (vl nil); then the records the journal touched after
// the snapshot.
func (b *Backend) finishVectors(vl *vectorLoad, touched map[string]struct{}) error {
	if vl == nil {
		b.vx = vecindex.New(b.vecOpts)
		items := make([]vecindex.Item, 0, len(b.records))
		for _, r := range b.records {
			items = append(items, vecItem(r))
		}
		if err := b.vx.Add(items); err != nil {
			return fmt.Errorf("index: load vector index: %w", err)
		}
		return nil
	}
	vl.wait()
	sd := vl.sd
	why := ""
	switch err := vl.err; {
	case err == nil:
		b.vx = vl.vx
	case errors.Is(err, fs.ErrNotExist):
		why = "missing"
	case errors.Is(err, vecindex.ErrCodes):
		why = err.Error()
		b.quarantine(vl.path, "vector index codes unreadable: "+why)
	default:
		return fmt.Errorf("index: read vector index codes: %w", err)
	}
	if why != "" {
		b.report.VectorIndexRebuilt = true
		b.vx = vecindex.New(b.vecOpts)
		if err := b.vx.Add(vl.items); err != nil {
			return fmt.Errorf("index: load vector index: %w", err)
		}
		if b.readOnly {
			b.needsFixFile("vector-codes", codesName(sd.seq), fmt.Sprintf("the vector index's codes for %s are %s; opening the store rebuilds them", snapName(sd.seq), why))
		} else {
			if err := b.writeCodes(sd.seq, vl.items, vl.tag); err != nil {
				b.note("could not write the vector index's codes (%v); the next open rebuilds them again", err)
			} else {
				b.note("rebuilt the vector index's codes for %s (%s)", snapName(sd.seq), why)
			}
		}
		sd.vecs.release() // encoding read every row
	}
	var del []string
	var add []vecindex.Item
	for id := range touched {
		if r, ok := b.records[id]; ok {
			add = append(add, vecItem(r))
		} else {
			del = append(del, id)
		}
	}
	b.vx.Delete(del...)
	if err := b.vx.Add(add); err != nil {
		return fmt.Errorf("index: load vector index: %w", err)
	}
	return nil
}

// readCodes reads a codes file and checks that it was written for tag.
func (b *Backend) readCodes(path string, tag []byte) (*vecindex.Codes, error) {
	c, got, err := b.readCodesFile(path)
	if err != nil {
		return nil, err
	}
	if string(got) != string(tag) {
		return nil, fmt.Errorf("%w: written for another snapshot", vecindex.ErrCodes)
	}
	return c, nil
}

// readCodesFile reads a codes file and returns the tag it was written with.
func (b *Backend) readCodesFile(path string) (*vecindex.Codes, []byte, error) {
	f, err := b.fs.OpenFile(path, os.O_RDONLY, 0)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, nil, err
	}
	// A buffer smaller than the codes' frames (about 900 KiB at 768
	// dimensions): their payloads are then read straight into place, not
	// copied through it.
	return vecindex.ReadCodes(bufio.NewReaderSize(f, 64<<10), st.Size())
}

// codesRead is a codes file being read in the background while open
// decodes the snapshot it belongs to (the two files are independent until
// the tag is compared).
type codesRead struct {
	seq  uint64
	done chan struct{}
	c    *vecindex.Codes
	tag  []byte
	err  error
}

// readCodesAsync starts reading the codes of the snapshot of seq.
func (b *Backend) readCodesAsync(seq uint64) *codesRead {
	cr := &codesRead{seq: seq, done: make(chan struct{})}
	go func() {
		defer close(cr.done)
		cr.c, cr.tag, cr.err = b.readCodesFile(filepath.Join(b.dir, codesName(seq)))
	}()
	return cr
}

// result waits for the read and checks the tag, as readCodes does.
func (cr *codesRead) result(tag []byte) (*vecindex.Codes, error) {
	<-cr.done
	if cr.err != nil {
		return nil, cr.err
	}
	if string(cr.tag) != string(tag) {
		return nil, fmt.Errorf("%w: written for another snapshot", vecindex.ErrCodes)
	}
	return cr.c, nil
}

// wait waits for the read (a nil codesRead has nothing to wait for).
func (cr *codesRead) wait() {
	if cr != nil {
		<-cr.done
	}
}

// writeCodes writes the codes of items (a snapshot's rows, in order) for
// the snapshot of seq.
func (b *Backend) writeCodes(seq uint64, items []vecindex.Item, tag []byte) error {
	return wal.WriteFileAtomic(b.fs, filepath.Join(b.dir, codesName(seq)), func(w io.Writer) error {
		cw, err := b.vx.NewCodesWriter(w, len(items))
		if err != nil {
			return err
		}
		for i := range items {
			if err := cw.Add(items[i].ID, items[i].Vector); err != nil {
				return err
			}
		}
		return cw.Finish(tag)
	})
}

// applyVectors brings the vector index in line with an applied batch.
func (b *Backend) applyVectors(del []string, put []index.Record) {
	if len(del) > 0 {
		b.vx.Delete(del...)
	}
	if len(put) == 0 {
		return
	}
	items := make([]vecindex.Item, len(put))
	for i := range put {
		items[i] = vecItem(&put[i])
	}
	if err := b.vx.Add(items); err != nil {
		// Cannot happen for validated records; the data is durable and the
		// next open rebuilds the index from it.
		b.log.Error("index: vector index rejected a batch", "err", err)
	}
}

// searchVectors answers SearchVector from the vector index.
func (b *Backend) searchVectors(ctx context.Context, vec []float32, k int, f index.Filter) ([]driver.Hit, error) {
	b.mu.RLock()
	defer b.mu.RUnlock()
	if err := b.readable(); err != nil {
		return nil, err
	}
	if b.dim != 0 && len(vec) != b.dim {
		return nil, fmt.Errorf("%w: query vector has %d dimensions, the store holds %d", driver.ErrInvalid, len(vec), b.dim)
	}
	var norm float64
	for _, x := range vec {
		norm += float64(x) * float64(x)
	}
	if norm == 0 || norm != norm || norm > 1e30 {
		return nil, nil // a zero or non-finite query matches nothing
	}
	vf := vecindex.Filter{DocTypes: f.DocTypes, Source: f.SourceURL}
	if f.RecordLevel() {
		// Called under b.mu, which this search holds for reading.
		vf.Accept = func(id string) bool {
			r := b.records[id]
			return r != nil && f.Match(r)
		}
	}
	res, err := b.vx.Search(vec, k, &vf)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", driver.ErrInvalid, err)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	hits := make([]driver.Hit, 0, len(res))
	for _, r := range res {
		rec, ok := b.records[r.ID]
		if !ok {
			continue // removed by a mutation in flight
		}
		hits = append(hits, driver.Hit{Record: copyRecord(rec, false), Score: float64(r.Score)})
	}
	return hits, nil
}

// remapVectors points the records of a snapshot just written (in its row
// order) and the vector index at the snapshot's mapped rows, and unmaps the
// previous snapshot's. The records' vectors written since the previous
// snapshot leave memory this way. Called with wmu held.
func (b *Backend) remapVectors(seq uint64, recs []*index.Record, dim int) {
	if dim == 0 || len(recs) == 0 || b.memory {
		return // an in-memory store's vectors stay where they are
	}
	sec, err := mapSection(b.fs, filepath.Join(b.dir, snapName(seq)), snapVecOff, len(recs), dim)
	if err != nil {
		b.log.Warn("index: could not map the new snapshot's vectors; they stay in memory", "err", err)
		return
	}
	b.mu.Lock()
	for i, r := range recs {
		r.Vector = sec.vector(i)
	}
	b.vx.ReplaceVectors(func(id string) []float32 {
		if r := b.records[id]; r != nil {
			return r.Vector
		}
		return nil
	})
	old := b.vecs
	b.vecs = sec
	b.mu.Unlock()
	if err := old.close(); err != nil {
		b.log.Warn("index: unmap the previous snapshot's vectors", "err", err)
	}
}

// VectorIndexStats describes the vector index (for benchmarks and stats).
func (b *Backend) VectorIndexStats() vecindex.Stats { return b.vx.Stats() }

// VectorRecall measures the recall@k of the vector index's approximate
// search against its exact scan over the given query vectors, unfiltered.
func (b *Backend) VectorRecall(queries [][]float32, k int) (float64, error) {
	return b.vx.Recall(queries, k, nil)
}

// VectorSearchExact runs the vector index's exhaustive scan for the top k
// knowledge chunks (benchmarks compare it with the approximate search).
func (b *Backend) VectorSearchExact(vec []float32, k int) ([]vecindex.Result, error) {
	return b.vx.SearchExact(vec, k, &vecindex.Filter{DocTypes: []string{index.DocKnowledge}})
}

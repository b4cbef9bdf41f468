package local

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"slices"

	"github.com/ragmem/ragmem/index"
	"github.com/ragmem/ragmem/index/driver"
	"github.com/ragmem/ragmem/internal/index/vecindex"
	"github.com/ragmem/ragmem/internal/wal"
)

// A snapshot holds the whole store at one sequence number. Format 2, which
// ragmem writes:
//
//	[0, 4096)         a frame "RGMSNAP2" + seq u64 + record count u64 +
//	                  dimension u32 + vector offset u64 + rows per checksum
//	                  block u32, zero-padded
//	[4096, …)         the vector section: one row of dimension float32
//	                  (little-endian) per record, in record order
//	then              a frame with the store's meta settings (an encoded meta
//	                  op), one frame per record (its vector left out: it is
//	                  the row of the same rank), a frame "RGMVSUM2" + one
//	                  CRC-32C per block of rows, and an end frame "RGMEND02" +
//	                  record count u64.
//
// Format 1 (older stores, still read): "RGMSNAP1" + seq u64 + record count
// u64 (not checksummed), the meta frame, one frame per record with its
// vector inline, and an end frame "RGMEND01" + record count u64.
//
// A snapshot without its end frame is incomplete and is never used. Next
// to a format-2 snapshot the vector index keeps its codes for the same rows
// in vidx-<seq>.rgx (vector.go), a derived file.

const (
	snapMagic   = "RGMSNAP1"
	snapMagic2  = "RGMSNAP2"
	snapEnd     = "RGMEND01"
	snapEnd2    = "RGMEND02"
	snapSums    = "RGMVSUM2"
	snapPrefix  = "snap-"
	snapSuffix  = ".rgs"
	snapVecOff  = 4096
	maxSnapDim  = 1 << 16
	maxSnapRecs = 1 << 32
	// minRecordFrame is the fewest bytes a record's frame can take: the
	// frame header, and one byte for each of the record's 14 fields.
	minRecordFrame = wal.FrameHeader + 14
)

func snapName(seq uint64) string { return fmt.Sprintf("%s%016x%s", snapPrefix, seq, snapSuffix) }

type snapshotData struct {
	seq     uint64
	meta    map[string]string
	records []index.Record
	version int
	dim     int
	vecs    *vecSection // format 2: the rows records[i].Vector point into
	// fingerprint identifies the vector section (the CRC-32C of its block
	// checksums): the vector index's codes file names it.
	fingerprint uint32
}

// codesTag is what a codes file for snapshot sd must carry.
func codesTag(seq uint64, count, dim int, fingerprint uint32) []byte {
	t := []byte("snap")
	t = binary.LittleEndian.AppendUint64(t, seq)
	t = binary.LittleEndian.AppendUint64(t, uint64(count))
	t = binary.LittleEndian.AppendUint32(t, uint32(dim))
	return binary.LittleEndian.AppendUint32(t, fingerprint)
}

// snapshotWriter streams a format-2 snapshot, and the vector index's codes
// for the same rows, to two temporary files that commit renames into place.
type snapshotWriter struct {
	fs                    wal.FS
	snapPath, codesPath   string
	snapTmp, codesTmp     wal.File
	snapBuf, codesBuf     *bufio.Writer
	seq                   uint64
	dim, count, blockVecs int
	sums                  vectorSums
	codes                 *vecindex.CodesWriter
	fingerprint           uint32
}

// writeSnapshot writes the snapshot of seq (records in the order given, all
// of dimension dim or without vector when dim is 0) and, when vx is not
// nil, the codes of their vectors; both are durable and in place when it
// returns nil, and neither is when it fails.
// The returned tag identifies the snapshot's vectors (codesTag).
func writeSnapshot(fsys wal.FS, dir string, seq uint64, meta map[string]string, records []*index.Record, dim int, vx *vecindex.Index) ([]byte, error) {
	w := &snapshotWriter{fs: fsys, seq: seq, dim: dim, count: len(records),
		snapPath: filepath.Join(dir, snapName(seq)), codesPath: filepath.Join(dir, codesName(seq))}
	err := w.write(meta, records, vx)
	if err != nil {
		w.abort()
		return nil, err
	}
	return codesTag(seq, w.count, dim, w.fingerprint), nil
}

func (w *snapshotWriter) abort() {
	for _, f := range []wal.File{w.snapTmp, w.codesTmp} {
		if f != nil {
			_ = f.Close()
		}
	}
	_ = w.fs.Remove(w.snapPath + ".tmp")
	_ = w.fs.Remove(w.codesPath + ".tmp")
}

func (w *snapshotWriter) write(meta map[string]string, records []*index.Record, vx *vecindex.Index) error {
	if err := w.create(vx); err != nil {
		return err
	}
	if err := w.writeVectors(records); err != nil {
		return err
	}
	if err := w.writeRecords(meta, records); err != nil {
		return err
	}
	if err := w.writeTrailer(); err != nil {
		return err
	}
	return w.commit()
}

// create opens the temporary snapshot file and, when vx is given and there
// are vectors, the temporary codes file and its writer (w.codes stays nil
// otherwise).
func (w *snapshotWriter) create(vx *vecindex.Index) error {
	open := func(path string) (wal.File, *bufio.Writer, error) {
		f, err := w.fs.OpenFile(path+".tmp", os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
		if err != nil {
			return nil, nil, err
		}
		return f, bufio.NewWriterSize(f, 1<<20), nil
	}
	var err error
	if w.snapTmp, w.snapBuf, err = open(w.snapPath); err != nil {
		return err
	}
	if vx != nil && w.dim > 0 && w.count > 0 {
		if w.codesTmp, w.codesBuf, err = open(w.codesPath); err != nil {
			return err
		}
		if w.codes, err = vx.NewCodesWriter(w.codesBuf, w.count); err != nil {
			return err
		}
	}
	return nil
}

// writeVectors writes the header frame, padded to snapVecOff, and then the
// records' vectors row by row, summing them per block and adding them to
// the codes.
func (w *snapshotWriter) writeVectors(records []*index.Record) error {
	if w.dim > 0 {
		w.blockVecs = max(1, (1<<20)/(4*w.dim))
	}
	w.sums.blockBytes = max(1, w.blockVecs*w.dim*4)
	head := []byte(snapMagic2)
	head = binary.LittleEndian.AppendUint64(head, w.seq)
	head = binary.LittleEndian.AppendUint64(head, uint64(w.count))
	head = binary.LittleEndian.AppendUint32(head, uint32(w.dim))
	head = binary.LittleEndian.AppendUint64(head, snapVecOff)
	head = binary.LittleEndian.AppendUint32(head, uint32(w.blockVecs))
	frame := wal.AppendFrame(nil, head)
	frame = append(frame, make([]byte, snapVecOff-len(frame))...)
	if _, err := w.snapBuf.Write(frame); err != nil {
		return err
	}
	if w.dim == 0 {
		return nil
	}
	row := make([]byte, 0, 4*w.dim)
	for _, r := range records {
		if len(r.Vector) != w.dim {
			return fmt.Errorf("index: snapshot: record %q has %d dimensions, the store %d", r.ID, len(r.Vector), w.dim)
		}
		vb := vectorBytes(row[:0], r.Vector) // row stays the scratch buffer
		w.sums.write(vb)
		if _, err := w.snapBuf.Write(vb); err != nil {
			return err
		}
		if w.codes != nil {
			if err := w.codes.Add(r.ID, r.Vector); err != nil {
				return err
			}
		}
	}
	return nil
}

// writeRecords writes the meta frame and then a frame per record, without
// its vector (the row of the same rank holds it).
func (w *snapshotWriter) writeRecords(meta map[string]string, records []*index.Record) error {
	m := meta
	if m == nil {
		m = map[string]string{}
	}
	frame := wal.AppendFrame(nil, encodeOp(&batchOp{Seq: w.seq, Meta: m}))
	if _, err := w.snapBuf.Write(frame); err != nil {
		return err
	}
	e := encoder{}
	for _, r := range records {
		nv := *r
		nv.Vector = nil // the row of the same rank
		e.buf = e.buf[:0]
		e.record(&nv)
		frame = wal.AppendFrame(frame[:0], e.buf)
		if _, err := w.snapBuf.Write(frame); err != nil {
			return err
		}
	}
	return nil
}

// writeTrailer writes the vector checksums and the end frame, keeps their
// fingerprint, and finishes the codes under the snapshot's tag.
func (w *snapshotWriter) writeTrailer() error {
	sums := []byte(snapSums)
	for _, s := range w.sums.finish() {
		sums = binary.LittleEndian.AppendUint32(sums, s)
	}
	w.fingerprint = crc32.Checksum(sums[len(snapSums):], castagnoli)
	end := binary.LittleEndian.AppendUint64([]byte(snapEnd2), uint64(w.count))
	if _, err := w.snapBuf.Write(append(wal.AppendFrame(nil, sums), wal.AppendFrame(nil, end)...)); err != nil {
		return err
	}
	if w.codes != nil {
		return w.codes.Finish(codesTag(w.seq, w.count, w.dim, w.fingerprint))
	}
	return nil
}

// commit makes the files durable and then puts them in place: the snapshot
// first (the codes are derived and checked against it on open, so a
// failure to place them leaves a sound snapshot whose codes the next open
// rebuilds).
func (w *snapshotWriter) commit() error {
	for _, p := range []struct {
		f wal.File
		b *bufio.Writer
	}{{w.snapTmp, w.snapBuf}, {w.codesTmp, w.codesBuf}} {
		if p.f == nil {
			continue
		}
		if err := p.b.Flush(); err != nil {
			return err
		}
		if err := p.f.Sync(); err != nil {
			return err
		}
	}
	if err := w.snapTmp.Close(); err != nil {
		return err
	}
	w.snapTmp = nil
	if err := w.fs.Rename(w.snapPath+".tmp", w.snapPath); err != nil {
		return err
	}
	if w.codesTmp != nil {
		err := w.codesTmp.Close()
		w.codesTmp = nil
		if err == nil {
			err = w.fs.Rename(w.codesPath+".tmp", w.codesPath)
		}
		if err != nil {
			// The snapshot stands; the next open rebuilds the codes.
			_ = w.fs.Remove(w.codesPath + ".tmp")
		}
	}
	return w.fs.SyncDir(filepath.Dir(w.snapPath))
}

// readSnapshot loads a snapshot completely or fails with a driver.ErrCorrupt
// error. The vectors of a format-2 snapshot are verified and then mapped.
func readSnapshot(fsys wal.FS, path string) (*snapshotData, error) {
	f, err := fsys.OpenFile(path, os.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	ra, ok := f.(io.ReaderAt)
	if !ok {
		return nil, fmt.Errorf("index: %s cannot be read at offsets", filepath.Base(path))
	}
	s, err := readSnapshotAt(ra, st.Size(), filepath.Base(path), func(off int64, count, dim int) (*vecSection, error) {
		return mapSection(fsys, path, off, count, dim)
	})
	if err == nil && filepath.Base(path) != snapName(s.seq) {
		_ = s.vecs.close()
		return nil, fmt.Errorf("%w: snapshot %s holds sequence %d", driver.ErrCorrupt, filepath.Base(path), s.seq)
	}
	return s, err
}

// readSnapshotAt reads a snapshot of size bytes from ra (the fuzz target's
// entry point). open maps a verified vector section; nil reads it into
// memory.
func readSnapshotAt(ra io.ReaderAt, size int64, name string, open func(off int64, count, dim int) (*vecSection, error)) (*snapshotData, error) {
	head := make([]byte, min(size, snapVecOff))
	if _, err := ra.ReadAt(head, 0); err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	if bytes.HasPrefix(head, []byte(snapMagic)) {
		return readSnapshotFrom(bufio.NewReaderSize(io.NewSectionReader(ra, 0, size), 1<<20), name)
	}
	return readSnapshot2(ra, size, name, head, open)
}

func readSnapshot2(ra io.ReaderAt, size int64, name string, head []byte, open func(off int64, count, dim int) (*vecSection, error)) (*snapshotData, error) {
	bad := corruptSnapshot(name)
	h, err := readSnapshot2Header(head, size, bad)
	if err != nil {
		return nil, err
	}
	s := &snapshotData{version: 2, seq: h.seq, dim: h.dim}
	// The vector checksums sit just before the fixed-size end frame: read
	// them first, so that the vectors are verified while the records are
	// decoded (the sequential read below must meet the same frame).
	var early []uint32
	var verified chan error
	if h.dim > 0 && h.count > 0 {
		if early, err = readEarlySums(ra, size, h, bad); err != nil {
			return nil, err
		}
		verified = make(chan error, 1)
		go func() { verified <- verifyVectors(ra, int64(h.vecOff), int(h.count), h.dim, h.blockVecs, early) }()
		defer func() {
			if verified != nil {
				<-verified // never leave the reads running past the return
			}
		}()
	}
	sums, err := readSnapshot2Records(ra, size, h, s, bad)
	if err != nil {
		return nil, err
	}
	if s.dim == 0 {
		if len(s.records) > 0 {
			return nil, bad("records without vectors")
		}
		return s, nil
	}
	if !slices.Equal(sums, early) {
		return nil, bad("vector checksums differ from the ones read first")
	}
	if early != nil {
		err = <-verified
		verified = nil
		if err != nil {
			return nil, bad("%v", err)
		}
	}
	if open == nil {
		vecs, err := readVectors(ra, int64(h.vecOff), int(h.count), s.dim)
		if err != nil {
			return nil, bad("vectors: %v", err)
		}
		s.vecs = &vecSection{dim: s.dim, count: int(h.count), vecs: vecs}
	} else if s.vecs, err = open(int64(h.vecOff), int(h.count), s.dim); err != nil {
		return nil, fmt.Errorf("index: map the vectors of snapshot %s: %w", name, err)
	}
	for i := range s.records {
		s.records[i].Vector = s.vecs.vector(i)
	}
	return s, nil
}

// corruptSnapshot returns the error constructor of a damaged snapshot
// named name: a driver.ErrCorrupt saying what is wrong.
func corruptSnapshot(name string) func(format string, args ...any) error {
	return func(format string, args ...any) error {
		return fmt.Errorf("%w: snapshot %s: %s", driver.ErrCorrupt, name, fmt.Sprintf(format, args...))
	}
}

// snapshot2Header is the fixed header of a format-2 snapshot.
type snapshot2Header struct {
	seq       uint64
	count     uint64 // records
	dim       int
	vecOff    uint64 // where the vector section starts
	blockVecs int    // vectors a checksum block covers
	vecBytes  uint64 // the vector section's length
	tail      int64  // where the frames after the vectors start
}

// readSnapshot2Header checks and decodes the header frame and its zero
// padding (head holds the file's first snapVecOff bytes), and checks that a
// file of size bytes can hold the vectors it announces.
func readSnapshot2Header(head []byte, size int64, bad func(string, ...any) error) (snapshot2Header, error) {
	var h snapshot2Header
	p, err := wal.ReadFrame(bytes.NewReader(head), nil)
	const fixed = len(snapMagic2) + 8 + 8 + 4 + 8 + 4
	if err != nil || len(p) != fixed || string(p[:len(snapMagic2)]) != snapMagic2 {
		return h, bad("bad header")
	}
	// The padding to the vector section carries nothing: any byte of it
	// that is not zero is damage.
	if len(head) < snapVecOff || len(bytes.Trim(head[wal.FrameHeader+len(p):], "\x00")) != 0 {
		return h, bad("damaged header padding")
	}
	b := p[len(snapMagic2):]
	h.seq = binary.LittleEndian.Uint64(b)
	h.count = binary.LittleEndian.Uint64(b[8:])
	h.dim = int(binary.LittleEndian.Uint32(b[16:]))
	h.vecOff = binary.LittleEndian.Uint64(b[20:])
	h.blockVecs = int(binary.LittleEndian.Uint32(b[28:]))
	if h.count > maxSnapRecs || h.dim > maxSnapDim || h.vecOff != snapVecOff || (h.dim > 0 && h.blockVecs <= 0) {
		return h, bad("impossible header (count %d, dimension %d, offset %d, block %d)", h.count, h.dim, h.vecOff, h.blockVecs)
	}
	h.vecBytes = h.count * uint64(h.dim) * 4
	if h.vecOff+h.vecBytes > uint64(size) {
		return h, bad("%d bytes, too short for %d vectors of %d dimensions", size, h.count, h.dim)
	}
	h.tail = int64(h.vecOff + h.vecBytes)
	return h, nil
}

// readEarlySums reads the vector checksums frame from its place before the
// end frame, so that the vectors can be verified before the records are
// all decoded.
func readEarlySums(ra io.ReaderAt, size int64, h snapshot2Header, bad func(string, ...any) error) ([]uint32, error) {
	blockBytes := uint64(h.blockVecs) * uint64(h.dim) * 4
	nblocks := (h.vecBytes + blockBytes - 1) / blockBytes
	sumsFrame := int64(wal.FrameHeader + len(snapSums) + 4*int(nblocks))
	at := size - int64(wal.FrameHeader+len(snapEnd2)+8) - sumsFrame
	if nblocks > uint64(size) || at < h.tail {
		return nil, bad("%d bytes, too short for its vector checksums", size)
	}
	buf := make([]byte, sumsFrame)
	if _, err := ra.ReadAt(buf, at); err != nil {
		return nil, bad("vector checksums: %v", err)
	}
	p, err := wal.ReadFrame(bytes.NewReader(buf), nil)
	if err != nil || len(p) != len(snapSums)+4*int(nblocks) || string(p[:len(snapSums)]) != snapSums {
		return nil, bad("vector checksums unreadable")
	}
	return decodeSums(p), nil
}

// decodeSums decodes the little-endian checksums after a snapSums tag.
func decodeSums(p []byte) []uint32 {
	sums := make([]uint32, 0, (len(p)-len(snapSums))/4)
	for i := len(snapSums); i < len(p); i += 4 {
		sums = append(sums, binary.LittleEndian.Uint32(p[i:]))
	}
	return sums
}

// readSnapshot2Records reads the frames after the vector section into s:
// the meta frame, the records (without their vectors), the vector
// checksums (returned, with their fingerprint in s) and the end frame,
// which must count the records read and end the file.
func readSnapshot2Records(ra io.ReaderAt, size int64, h snapshot2Header, s *snapshotData, bad func(string, ...any) error) ([]uint32, error) {
	r := bufio.NewReaderSize(io.NewSectionReader(ra, h.tail, size-h.tail), 1<<20)
	p, err := wal.ReadFrame(r, nil)
	if err != nil {
		return nil, bad("meta: %v", err)
	}
	mo, err := decodeOp(p)
	if err != nil || mo.Meta == nil || mo.Seq != s.seq {
		return nil, bad("meta frame unreadable or of another sequence")
	}
	s.meta = mo.Meta
	// The header is checksummed, but a crafted one could still claim more
	// records than the file holds: the allocation is bounded by the bytes
	// left (a record's frame takes at least minRecordFrame of them).
	s.records = make([]index.Record, 0, min(h.count, uint64(size-h.tail)/minRecordFrame))
	var buf []byte
	var sums []uint32
	for {
		p, err := wal.ReadFrame(r, buf)
		if err != nil {
			return nil, bad("record %d: %v", len(s.records), err)
		}
		buf = p
		if len(p) >= len(snapSums) && string(p[:len(snapSums)]) == snapSums {
			if sums != nil || (len(p)-len(snapSums))%4 != 0 {
				return nil, bad("bad vector checksums")
			}
			s.fingerprint = crc32.Checksum(p[len(snapSums):], castagnoli)
			sums = decodeSums(p)
			continue
		}
		if len(p) == len(snapEnd2)+8 && string(p[:len(snapEnd2)]) == snapEnd2 {
			if n := binary.LittleEndian.Uint64(p[len(snapEnd2):]); n != uint64(len(s.records)) || n != h.count || sums == nil {
				return nil, bad("end frame counts %d records, read %d, header %d", n, len(s.records), h.count)
			}
			if _, err := r.ReadByte(); err != io.EOF {
				return nil, bad("data after end frame")
			}
			return sums, nil
		}
		if sums != nil {
			return nil, bad("record after the vector checksums")
		}
		rec, err := decodeRecordShared(p)
		if err != nil {
			return nil, bad("record %d: %v", len(s.records), err)
		}
		if rec.Vector != nil {
			return nil, bad("record %d carries its vector inline", len(s.records))
		}
		s.records = append(s.records, rec)
	}
}

// readSnapshotFrom reads a format-1 snapshot from r.
func readSnapshotFrom(r *bufio.Reader, name string) (*snapshotData, error) {
	bad := corruptSnapshot(name)
	head := make([]byte, len(snapMagic)+16)
	if _, err := io.ReadFull(r, head); err != nil {
		return nil, bad("short header")
	}
	if string(head[:len(snapMagic)]) != snapMagic {
		return nil, bad("bad magic")
	}
	s := &snapshotData{version: 1, seq: binary.LittleEndian.Uint64(head[8:])}
	count := binary.LittleEndian.Uint64(head[16:])
	p, err := wal.ReadFrame(r, nil)
	if err != nil {
		return nil, bad("meta: %v", err)
	}
	mo, err := decodeOp(p)
	if err != nil || mo.Meta == nil {
		return nil, bad("meta frame unreadable")
	}
	if mo.Seq != s.seq {
		// The header is not checksummed; the meta frame repeats the sequence.
		return nil, bad("header says sequence %d, its checksummed meta frame %d", s.seq, mo.Seq)
	}
	s.meta = mo.Meta
	if count > 1<<32 {
		return nil, bad("impossible record count %d", count)
	}
	// The count is only a hint for the allocation until the end frame
	// confirms it.
	s.records = make([]index.Record, 0, min(count, 1<<16))
	var buf []byte
	for {
		p, err := wal.ReadFrame(r, buf)
		if err != nil {
			return nil, bad("record %d: %v", len(s.records), err)
		}
		buf = p
		if len(p) == len(snapEnd)+8 && string(p[:len(snapEnd)]) == snapEnd {
			if n := binary.LittleEndian.Uint64(p[len(snapEnd):]); n != uint64(len(s.records)) || n != count {
				return nil, bad("end frame counts %d records, read %d, header %d", n, len(s.records), count)
			}
			if _, err := r.ReadByte(); err != io.EOF {
				return nil, bad("data after end frame")
			}
			return s, nil
		}
		rec, err := decodeRecord(p)
		if err != nil {
			return nil, bad("record %d: %v", len(s.records), err)
		}
		if s.dim == 0 {
			s.dim = len(rec.Vector)
		}
		s.records = append(s.records, rec)
	}
}

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

	"github.com/ragmem/ragmem/index/driver"
	"github.com/ragmem/ragmem/index/vecindex"
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
	records []driver.Record
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
func writeSnapshot(fsys wal.FS, dir string, seq uint64, meta map[string]string, records []*driver.Record, dim int, vx *vecindex.Index) ([]byte, error) {
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

func (w *snapshotWriter) write(meta map[string]string, records []*driver.Record, vx *vecindex.Index) error {
	var err error
	create := func(path string) (wal.File, *bufio.Writer, error) {
		f, err := w.fs.OpenFile(path+".tmp", os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
		if err != nil {
			return nil, nil, err
		}
		return f, bufio.NewWriterSize(f, 1<<20), nil
	}
	if w.snapTmp, w.snapBuf, err = create(w.snapPath); err != nil {
		return err
	}
	withCodes := vx != nil && w.dim > 0 && w.count > 0
	if withCodes {
		if w.codesTmp, w.codesBuf, err = create(w.codesPath); err != nil {
			return err
		}
		if w.codes, err = vx.NewCodesWriter(w.codesBuf, w.count); err != nil {
			return err
		}
	}
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
	if w.dim > 0 {
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
			if withCodes {
				if err := w.codes.Add(r.ID, r.Vector); err != nil {
					return err
				}
			}
		}
	}
	m := meta
	if m == nil {
		m = map[string]string{}
	}
	frame = wal.AppendFrame(frame[:0], encodeOp(&batchOp{Seq: w.seq, Meta: m}))
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
	sums := []byte(snapSums)
	for _, s := range w.sums.finish() {
		sums = binary.LittleEndian.AppendUint32(sums, s)
	}
	w.fingerprint = crc32.Checksum(sums[len(snapSums):], castagnoli)
	end := binary.LittleEndian.AppendUint64([]byte(snapEnd2), uint64(w.count))
	if _, err := w.snapBuf.Write(append(wal.AppendFrame(nil, sums), wal.AppendFrame(nil, end)...)); err != nil {
		return err
	}
	if withCodes {
		if err := w.codes.Finish(codesTag(w.seq, w.count, w.dim, w.fingerprint)); err != nil {
			return err
		}
	}
	// Durable, then in place: the snapshot first (the codes are derived
	// and checked against it on open).
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
	dir := filepath.Dir(w.snapPath)
	return w.fs.SyncDir(dir)
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
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: snapshot %s: %s", driver.ErrCorrupt, name, fmt.Sprintf(format, args...))
	}
	p, err := wal.ReadFrame(bytes.NewReader(head), nil)
	const fixed = len(snapMagic2) + 8 + 8 + 4 + 8 + 4
	if err != nil || len(p) != fixed || string(p[:len(snapMagic2)]) != snapMagic2 {
		return nil, bad("bad header")
	}
	// The padding to the vector section carries nothing: any byte of it
	// that is not zero is damage.
	if len(head) < snapVecOff || len(bytes.Trim(head[wal.FrameHeader+len(p):], "\x00")) != 0 {
		return nil, bad("damaged header padding")
	}
	h := p[len(snapMagic2):]
	s := &snapshotData{version: 2, seq: binary.LittleEndian.Uint64(h), dim: int(binary.LittleEndian.Uint32(h[16:]))}
	count := binary.LittleEndian.Uint64(h[8:])
	vecOff := binary.LittleEndian.Uint64(h[20:])
	blockVecs := int(binary.LittleEndian.Uint32(h[28:]))
	if count > maxSnapRecs || s.dim > maxSnapDim || vecOff != snapVecOff || (s.dim > 0 && blockVecs <= 0) {
		return nil, bad("impossible header (count %d, dimension %d, offset %d, block %d)", count, s.dim, vecOff, blockVecs)
	}
	vecBytes := count * uint64(s.dim) * 4
	if vecOff+vecBytes > uint64(size) {
		return nil, bad("%d bytes, too short for %d vectors of %d dimensions", size, count, s.dim)
	}
	tail := int64(vecOff + vecBytes)
	// The vector checksums sit just before the fixed-size end frame: read
	// them first, so that the vectors are verified while the records are
	// decoded (the sequential read below must meet the same frame).
	var early []uint32
	verified := make(chan error, 1)
	if s.dim > 0 && count > 0 {
		blockBytes := uint64(blockVecs) * uint64(s.dim) * 4
		nblocks := (vecBytes + blockBytes - 1) / blockBytes
		sumsFrame := int64(wal.FrameHeader + len(snapSums) + 4*int(nblocks))
		at := size - int64(wal.FrameHeader+len(snapEnd2)+8) - sumsFrame
		if nblocks > uint64(size) || at < tail {
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
		for i := len(snapSums); i < len(p); i += 4 {
			early = append(early, binary.LittleEndian.Uint32(p[i:]))
		}
		go func() { verified <- verifyVectors(ra, int64(vecOff), int(count), s.dim, blockVecs, early) }()
		defer func() {
			if verified != nil {
				<-verified // never leave the reads running past the return
			}
		}()
	} else {
		verified = nil
	}
	r := bufio.NewReaderSize(io.NewSectionReader(ra, tail, size-tail), 1<<20)
	p, err = wal.ReadFrame(r, nil)
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
	s.records = make([]driver.Record, 0, min(count, uint64(size-tail)/minRecordFrame))
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
			sums = make([]uint32, 0, (len(p)-len(snapSums))/4)
			for i := len(snapSums); i < len(p); i += 4 {
				sums = append(sums, binary.LittleEndian.Uint32(p[i:]))
			}
			continue
		}
		if len(p) == len(snapEnd2)+8 && string(p[:len(snapEnd2)]) == snapEnd2 {
			if n := binary.LittleEndian.Uint64(p[len(snapEnd2):]); n != uint64(len(s.records)) || n != count || sums == nil {
				return nil, bad("end frame counts %d records, read %d, header %d", n, len(s.records), count)
			}
			if _, err := r.ReadByte(); err != io.EOF {
				return nil, bad("data after end frame")
			}
			break
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
	if s.dim == 0 {
		if len(s.records) > 0 {
			return nil, bad("records without vectors")
		}
		return s, nil
	}
	if len(sums) != len(early) {
		return nil, bad("vector checksums differ from the ones read first")
	}
	for i := range sums {
		if sums[i] != early[i] {
			return nil, bad("vector checksums differ from the ones read first")
		}
	}
	if early != nil {
		err = <-verified
		verified = nil
		if err != nil {
			return nil, bad("%v", err)
		}
	}
	if open == nil {
		vecs, err := readVectors(ra, int64(vecOff), int(count), s.dim)
		if err != nil {
			return nil, bad("vectors: %v", err)
		}
		s.vecs = &vecSection{dim: s.dim, count: int(count), vecs: vecs}
	} else if s.vecs, err = open(int64(vecOff), int(count), s.dim); err != nil {
		return nil, fmt.Errorf("index: map the vectors of snapshot %s: %w", name, err)
	}
	for i := range s.records {
		s.records[i].Vector = s.vecs.vector(i)
	}
	return s, nil
}

// readSnapshotFrom reads a format-1 snapshot from r.
func readSnapshotFrom(r *bufio.Reader, name string) (*snapshotData, error) {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: snapshot %s: %s", driver.ErrCorrupt, name, fmt.Sprintf(format, args...))
	}
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
	s.records = make([]driver.Record, 0, min(count, 1<<16))
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

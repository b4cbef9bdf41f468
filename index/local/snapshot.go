package local

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/ragmem/ragmem/index/driver"
	"github.com/ragmem/ragmem/internal/wal"
)

// A snapshot holds the whole store at one sequence number:
// "RGMSNAP1" + uint64 seq + uint64 record count, a frame with the store's
// meta settings (an encoded meta op), one frame per record, and an end frame
// "RGMEND01" + uint64 record count. A snapshot without its end frame is
// incomplete and is never used.

const (
	snapMagic  = "RGMSNAP1"
	snapEnd    = "RGMEND01"
	snapPrefix = "snap-"
	snapSuffix = ".rgs"
)

func snapName(seq uint64) string { return fmt.Sprintf("%s%016x%s", snapPrefix, seq, snapSuffix) }

type snapshotData struct {
	seq     uint64
	meta    map[string]string
	records []driver.Record
}

func writeSnapshot(fs wal.FS, dir string, seq uint64, meta map[string]string, records []*driver.Record) error {
	path := filepath.Join(dir, snapName(seq))
	return wal.WriteFileAtomic(fs, path, func(w io.Writer) error {
		return encodeSnapshot(w, seq, meta, records)
	})
}

// encodeSnapshot writes the snapshot format to w.
func encodeSnapshot(w io.Writer, seq uint64, meta map[string]string, records []*driver.Record) error {
	bw := bufio.NewWriterSize(w, 1<<20)
	head := []byte(snapMagic)
	head = binary.LittleEndian.AppendUint64(head, seq)
	head = binary.LittleEndian.AppendUint64(head, uint64(len(records)))
	if _, err := bw.Write(head); err != nil {
		return err
	}
	var frame []byte
	m := meta
	if m == nil {
		m = map[string]string{}
	}
	frame = wal.AppendFrame(frame[:0], encodeOp(&batchOp{Seq: seq, Meta: m}))
	if _, err := bw.Write(frame); err != nil {
		return err
	}
	e := encoder{}
	for _, r := range records {
		e.buf = e.buf[:0]
		e.record(r)
		frame = wal.AppendFrame(frame[:0], e.buf)
		if _, err := bw.Write(frame); err != nil {
			return err
		}
	}
	end := binary.LittleEndian.AppendUint64([]byte(snapEnd), uint64(len(records)))
	if _, err := bw.Write(wal.AppendFrame(nil, end)); err != nil {
		return err
	}
	return bw.Flush()
}

// readSnapshot loads a snapshot completely or fails with a driver.ErrCorrupt error.
func readSnapshot(fs wal.FS, path string) (*snapshotData, error) {
	f, err := fs.OpenFile(path, os.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	s, err := readSnapshotFrom(bufio.NewReaderSize(f, 1<<20), filepath.Base(path))
	if err == nil && filepath.Base(path) != snapName(s.seq) {
		return nil, fmt.Errorf("%w: snapshot %s holds sequence %d", driver.ErrCorrupt, filepath.Base(path), s.seq)
	}
	return s, err
}

// readSnapshotFrom reads a snapshot from r (the fuzz target's entry point).
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
	s := &snapshotData{seq: binary.LittleEndian.Uint64(head[8:])}
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
		s.records = append(s.records, rec)
	}
}

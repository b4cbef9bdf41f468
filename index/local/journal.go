package local

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/ragmem/ragmem/index/driver"
)

// The journal (write-ahead log) holds every mutation since the snapshot it
// follows. A mutation is acknowledged only after its frame is fsynced here.
//
// File: "RGMJNL01" + uint64 base sequence, then frames each holding one
// encoded batchOp with Seq = previous Seq + 1, starting at base + 1.

const (
	journalMagic  = "RGMJNL01"
	journalHeader = len(journalMagic) + 8
	journalPrefix = "journal-"
	journalSuffix = ".rgj"
)

func journalName(base uint64) string {
	return fmt.Sprintf("%s%016x%s", journalPrefix, base, journalSuffix)
}

// journal is the active, appendable journal. Not safe for concurrent use:
// the backend's writer lock guards it.
type journal struct {
	fs   vfs
	path string
	base uint64
	f    file
	size int64
	buf  []byte
}

// createJournal durably creates an empty journal whose entries follow base.
func createJournal(fs vfs, dir string, base uint64) (*journal, error) {
	path := filepath.Join(dir, journalName(base))
	err := writeFileAtomic(fs, path, func(w io.Writer) error {
		_, err := w.Write(journalHead(base))
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("index: create journal: %w", err)
	}
	return openJournalForAppend(fs, path, base, int64(journalHeader))
}

func journalHead(base uint64) []byte {
	return binary.LittleEndian.AppendUint64([]byte(journalMagic), base)
}

// openJournalForAppend opens an existing journal whose valid data ends at size;
// anything after size (a torn tail) is cut off first.
func openJournalForAppend(fs vfs, path string, base uint64, size int64) (*journal, error) {
	f, err := fs.OpenFile(path, os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("index: open journal: %w", err)
	}
	st, err := f.Stat()
	if err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("index: open journal: %w", err)
	}
	if st.Size() != size {
		if err := f.Truncate(size); err != nil {
			_ = f.Close()
			return nil, fmt.Errorf("index: cut torn journal tail: %w", err)
		}
		if err := f.Sync(); err != nil {
			_ = f.Close()
			return nil, fmt.Errorf("index: cut torn journal tail: %w", err)
		}
	}
	if _, err := f.Seek(size, io.SeekStart); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("index: open journal: %w", err)
	}
	return &journal{fs: fs, path: path, base: base, f: f, size: size}, nil
}

// append writes one operation and fsyncs it. On failure the journal is cut
// back to its previous length so that a failed write leaves no trace; if even
// that fails the returned error says the journal is in an unknown state.
func (j *journal) append(o *batchOp) error {
	payload := encodeOp(o)
	if len(payload) > maxFrame {
		return fmt.Errorf("%w: batch of %d bytes exceeds the %d-byte limit", driver.ErrInvalid, len(payload), maxFrame)
	}
	j.buf = appendFrame(j.buf[:0], payload)
	if _, err := j.f.Write(j.buf); err != nil {
		return j.undo(fmt.Errorf("index: write journal: %w", err))
	}
	if err := j.f.Sync(); err != nil {
		return j.undo(fmt.Errorf("index: sync journal: %w", err))
	}
	j.size += int64(len(j.buf))
	if cap(j.buf) > 1<<20 {
		j.buf = nil
	}
	return nil
}

// errJournalUnknown marks a journal whose tail could not be restored after a
// failed write; the store refuses further writes until it is reopened.
var errJournalUnknown = errors.New("index: journal state unknown after a failed write; reopen the store")

func (j *journal) undo(cause error) error {
	terr := j.f.Truncate(j.size)
	if terr == nil {
		_, terr = j.f.Seek(j.size, io.SeekStart)
	}
	if terr == nil {
		terr = j.f.Sync()
	}
	if terr != nil {
		return fmt.Errorf("%w (%v); %w", cause, terr, errJournalUnknown)
	}
	return cause
}

// rollback removes the last appended operation of length n bytes.
func (j *journal) rollback(prevSize int64) error {
	j.size = prevSize
	return j.undo(nil)
}

func (j *journal) close() error {
	if j == nil || j.f == nil {
		return nil
	}
	err := j.f.Close()
	j.f = nil
	return err
}

// journalScan is the result of reading a journal file.
type journalScan struct {
	base     uint64
	validEnd int64 // byte offset after the last good frame
	ops      int
	tail     error // nil, errTorn or a corruption error found after validEnd
}

// scanJournal reads a journal, calling fn for each operation in order. It
// stops at the first torn or corrupt frame and reports it in tail; an error
// returned by fn or an unreadable header is returned as err.
func scanJournal(fs vfs, path string, fn func(o *batchOp) error) (journalScan, error) {
	var js journalScan
	f, err := fs.OpenFile(path, os.O_RDONLY, 0)
	if err != nil {
		return js, err
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, 1<<20)
	head := make([]byte, journalHeader)
	if _, err := io.ReadFull(r, head); err != nil {
		return js, fmt.Errorf("%w: journal %s: short header", driver.ErrCorrupt, filepath.Base(path))
	}
	if string(head[:len(journalMagic)]) != journalMagic {
		return js, fmt.Errorf("%w: journal %s: bad magic", driver.ErrCorrupt, filepath.Base(path))
	}
	js.base = binary.LittleEndian.Uint64(head[len(journalMagic):])
	js.validEnd = int64(journalHeader)
	var buf []byte
	next := js.base + 1
	for {
		p, err := readFrame(r, buf)
		if err == io.EOF {
			return js, nil
		}
		if err != nil {
			js.tail = err
			return js, nil
		}
		buf = p
		o, err := decodeOp(p)
		if err != nil {
			js.tail = err
			return js, nil
		}
		if o.Seq != next {
			js.tail = fmt.Errorf("%w: journal sequence %d where %d was expected", driver.ErrCorrupt, o.Seq, next)
			return js, nil
		}
		if err := fn(&o); err != nil {
			return js, err
		}
		next++
		js.ops++
		js.validEnd += int64(frameHeader + len(p))
	}
}

// listGenerations returns the bases of the files with the given prefix and
// suffix in dir, ascending.
func listGenerations(fs vfs, dir, prefix, suffix string) ([]uint64, error) {
	entries, err := fs.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out []uint64
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !strings.HasPrefix(name, prefix) || !strings.HasSuffix(name, suffix) {
			continue
		}
		v, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimPrefix(name, prefix), suffix), 16, 64)
		if err != nil {
			continue
		}
		out = append(out, v)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out, nil
}

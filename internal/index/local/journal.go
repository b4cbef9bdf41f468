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
	"github.com/ragmem/ragmem/internal/wal"
)

// The journal (write-ahead log) holds every mutation since the snapshot it
// follows. A mutation is acknowledged only after its frame is fsynced here.
//
// File: "RGMJNL01" + uint64 base sequence, then wal frames each holding one
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

func journalHead(base uint64) []byte {
	return binary.LittleEndian.AppendUint64([]byte(journalMagic), base)
}

// journal is the active, appendable journal. Not safe for concurrent use:
// the backend's writer lock guards it.
type journal struct {
	*wal.Log
	base uint64
}

// createJournal durably creates an empty journal whose entries follow base.
func createJournal(fs wal.FS, dir string, base uint64) (*journal, error) {
	l, err := wal.CreateLog(fs, filepath.Join(dir, journalName(base)), journalHead(base))
	if err != nil {
		return nil, fmt.Errorf("index: create journal: %w", err)
	}
	return &journal{Log: l, base: base}, nil
}

// openJournal opens an existing journal for appending after validEnd,
// cutting off a torn tail.
func openJournal(fs wal.FS, path string, base uint64, validEnd int64) (*journal, error) {
	l, err := wal.OpenLog(fs, path, validEnd)
	if err != nil {
		return nil, fmt.Errorf("index: open journal %s: %w", filepath.Base(path), err)
	}
	return &journal{Log: l, base: base}, nil
}

func (j *journal) close() error {
	if j == nil {
		return nil
	}
	return j.Close()
}

// journalScan is the result of reading a journal file.
type journalScan struct {
	base     uint64
	size     int64 // file size
	validEnd int64 // byte offset after the last good frame
	ops      int
	lastSeq  uint64 // sequence of the last good operation (base when none)
	tail     error  // nil, wal.ErrTorn or a corruption error found at validEnd
}

// torn reports whether the journal ends in the unfinished frame of a write
// that was never acknowledged, as opposed to damage inside written data.
func (js *journalScan) torn() bool {
	return errors.Is(js.tail, wal.ErrTorn)
}

// scanJournal reads a journal, calling fn for each operation in order. It
// stops at the first torn or corrupt frame and reports it in tail; an error
// returned by fn, an unreadable file or a bad header is returned as err
// (wrapping driver.ErrCorrupt for a bad header).
func scanJournal(fs wal.FS, path string, fn func(o *batchOp) error) (journalScan, error) {
	var js journalScan
	f, err := fs.OpenFile(path, os.O_RDONLY, 0)
	if err != nil {
		return js, err
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil {
		js.size = st.Size()
	}
	name := filepath.Base(path)
	r := bufio.NewReaderSize(f, 1<<20)
	// The header is not checksummed: its base must match the file name
	// before any operation is believed.
	if head, err := r.Peek(journalHeader); err == nil && string(head[:len(journalMagic)]) == journalMagic {
		if base := binary.LittleEndian.Uint64(head[len(journalMagic):]); journalName(base) != name {
			return js, fmt.Errorf("%w: journal %s: header names base sequence %d", driver.ErrCorrupt, name, base)
		}
	}
	return readJournal(r, name, js.size, fn)
}

// readJournal is scanJournal over a reader (the fuzz target's entry point).
func readJournal(r *bufio.Reader, name string, size int64, fn func(o *batchOp) error) (journalScan, error) {
	js := journalScan{size: size}
	head := make([]byte, journalHeader)
	if _, err := io.ReadFull(r, head); err != nil {
		return js, fmt.Errorf("%w: journal %s: short header", driver.ErrCorrupt, name)
	}
	if string(head[:len(journalMagic)]) != journalMagic {
		return js, fmt.Errorf("%w: journal %s: bad magic", driver.ErrCorrupt, name)
	}
	js.base = binary.LittleEndian.Uint64(head[len(journalMagic):])
	js.lastSeq = js.base
	next := js.base + 1
	res, err := wal.Scan(r, int64(journalHeader), func(p []byte) error {
		o, err := decodeOp(p)
		if err != nil {
			return fmt.Errorf("%w: %w", wal.ErrCorrupt, err)
		}
		if o.Seq != next {
			return fmt.Errorf("%w: journal sequence %d where %d was expected", wal.ErrCorrupt, o.Seq, next)
		}
		if err := fn(&o); err != nil {
			return err
		}
		js.lastSeq = o.Seq
		next++
		return nil
	})
	js.validEnd, js.ops, js.tail = res.ValidEnd, res.Frames, res.Tail
	if err != nil {
		return js, err
	}
	if js.tail == nil && size > 0 && js.validEnd < size {
		js.tail = wal.ErrTorn
	}
	return js, nil
}

// listGenerations returns the bases of the files with the given prefix and
// suffix in dir, ascending.
func listGenerations(fs wal.FS, dir, prefix, suffix string) ([]uint64, error) {
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
		hex := strings.TrimSuffix(strings.TrimPrefix(name, prefix), suffix)
		if len(hex) != 16 {
			continue
		}
		v, err := strconv.ParseUint(hex, 16, 64)
		if err != nil {
			continue
		}
		out = append(out, v)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out, nil
}

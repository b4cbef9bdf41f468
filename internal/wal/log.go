package wal

import (
	"errors"
	"fmt"
	"io"
	"os"
)

// ErrUnknownState reports a log whose end could not be restored after a
// failed write. The log refuses further appends; reopening the store
// recovers it (the unacknowledged frame is cut as a torn tail).
var ErrUnknownState = errors.New("wal: log state unknown after a failed write; reopen the store")

// Log is an append-only file: a fixed header followed by frames. Appends are
// fsynced before they return. A Log is not safe for concurrent use; its
// owner serialises calls.
type Log struct {
	fs     FS
	path   string
	f      File
	size   int64
	buf    []byte
	broken error
}

// CreateLog durably creates a log that holds only header, replacing any file
// at path (through WriteFileAtomic), and opens it for appending.
func CreateLog(fs FS, path string, header []byte) (*Log, error) {
	err := WriteFileAtomic(fs, path, func(w io.Writer) error {
		_, err := w.Write(header)
		return err
	})
	if err != nil {
		return nil, err
	}
	return OpenLog(fs, path, int64(len(header)))
}

// OpenLog opens an existing log for appending after its valid data, which
// ends at validEnd (see Scan). Anything after validEnd, the torn tail of an
// unacknowledged write, is cut off and the cut is fsynced.
func OpenLog(fs FS, path string, validEnd int64) (*Log, error) {
	f, err := fs.OpenFile(path, os.O_RDWR, 0o600)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err == nil && st.Size() != validEnd {
		if err = f.Truncate(validEnd); err == nil {
			err = f.Sync()
		}
	}
	if err == nil {
		_, err = f.Seek(validEnd, io.SeekStart)
	}
	if err != nil {
		_ = f.Close()
		return nil, err
	}
	return &Log{fs: fs, path: path, f: f, size: validEnd}, nil
}

// Path returns the log's file name.
func (l *Log) Path() string { return l.path }

// Size returns the length of the log's acknowledged data.
func (l *Log) Size() int64 { return l.size }

// FrameSize returns the bytes a payload of n bytes takes in a log.
func FrameSize(n int) int64 { return int64(FrameHeader + n) }

// Append writes the frames of payloads with one write and one fsync (a group
// commit when there are several). When it fails the log is cut back to its
// previous length, so a failed append leaves no trace; if even that fails the
// error wraps ErrUnknownState and the log refuses further appends.
func (l *Log) Append(payloads ...[]byte) error { return l.append(true, payloads) }

// AppendNoSync is Append without the fsync: for records whose loss in a crash
// is harmless. A later Append makes them durable too.
func (l *Log) AppendNoSync(payloads ...[]byte) error { return l.append(false, payloads) }

func (l *Log) append(sync bool, payloads [][]byte) error {
	if l.broken != nil {
		return l.broken
	}
	if l.f == nil {
		return fmt.Errorf("wal: append to closed log %s", l.path)
	}
	l.buf = l.buf[:0]
	for _, p := range payloads {
		if len(p) > MaxFrame {
			return fmt.Errorf("wal: record of %d bytes exceeds the %d-byte limit", len(p), MaxFrame)
		}
		l.buf = AppendFrame(l.buf, p)
	}
	if _, err := l.f.Write(l.buf); err != nil {
		return l.undo(err)
	}
	if sync {
		if err := l.f.Sync(); err != nil {
			return l.undo(err)
		}
	}
	l.size += int64(len(l.buf))
	if cap(l.buf) > 4<<20 {
		l.buf = nil
	}
	return nil
}

// undo cuts the file back to the acknowledged size after a failed write.
func (l *Log) undo(cause error) error {
	if err := l.cut(l.size); err != nil {
		l.broken = fmt.Errorf("%w (%v, then %v)", ErrUnknownState, cause, err)
		return fmt.Errorf("%w; %w", cause, l.broken)
	}
	return cause
}

func (l *Log) cut(size int64) error {
	err := l.f.Truncate(size)
	if err == nil {
		_, err = l.f.Seek(size, io.SeekStart)
	}
	if err == nil {
		err = l.f.Sync()
	}
	return err
}

// Truncate durably cuts the log back to size, an earlier Size, taking back
// acknowledged appends (a caller whose follow-up work failed). If the cut
// fails the log refuses further appends and the error wraps ErrUnknownState.
func (l *Log) Truncate(size int64) error {
	if l.broken != nil {
		return l.broken
	}
	if size > l.size {
		return fmt.Errorf("wal: truncate %s to %d beyond its end %d", l.path, size, l.size)
	}
	if err := l.cut(size); err != nil {
		l.broken = fmt.Errorf("%w (%v)", ErrUnknownState, err)
		return l.broken
	}
	l.size = size
	return nil
}

// Broken returns the error that makes the log refuse appends, or nil.
func (l *Log) Broken() error { return l.broken }

// Close closes the file. It is safe to call more than once.
func (l *Log) Close() error {
	if l == nil || l.f == nil {
		return nil
	}
	err := l.f.Close()
	l.f = nil
	return err
}

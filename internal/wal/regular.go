package wal

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// ErrTooLarge is returned by ReadRegular for a file over its limit.
var ErrTooLarge = errors.New("wal: file too large")

// Files in directories that users and other programs write to (agent
// memories, for instance) are never trusted to be what their path says:
// OpenRegular opens without following a symbolic link at the last path
// component and without blocking on a named pipe or a device (the open is
// non-blocking), then checks with fstat that it holds a regular file. A
// planted link to a key file, or to /dev/zero, or a FIFO, gives
// ErrNotRegular at once instead of being copied, read without end, or
// waited on forever while a lock is held.

// FileError is a file that OpenRegular or ReadRegular refused. It names
// the file by its base name only, so that callers may show it to clients
// that must not learn the directory.
type FileError struct {
	Name    string // the file's base name
	Problem string // why, as a predicate: "is a named pipe"
	Err     error  // ErrNotRegular or ErrTooLarge
}

func (e *FileError) Error() string { return e.Err.Error() + ": " + e.Name + " " + e.Problem }

// Unwrap returns ErrNotRegular or ErrTooLarge.
func (e *FileError) Unwrap() error { return e.Err }

// OpenRegular opens path with flag (plus no-follow and non-blocking) and
// returns the file if it is a regular file. Anything else is refused with a
// *FileError wrapping ErrNotRegular.
func OpenRegular(path string, flag int, perm os.FileMode) (*os.File, os.FileInfo, error) {
	f, err := openNoFollow(path, flag, perm)
	if err != nil {
		if isLinkError(err) {
			return nil, nil, &FileError{Name: filepath.Base(path), Problem: "is a symbolic link, which is not followed", Err: ErrNotRegular}
		}
		return nil, nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		_ = f.Close()
		return nil, nil, err
	}
	if !fi.Mode().IsRegular() {
		_ = f.Close()
		return nil, nil, &FileError{Name: filepath.Base(path), Problem: "is a " + fileKind(fi.Mode()), Err: ErrNotRegular}
	}
	return f, fi, nil
}

func fileKind(m os.FileMode) string {
	switch {
	case m&os.ModeSymlink != 0:
		return "symbolic link"
	case m&os.ModeNamedPipe != 0:
		return "named pipe"
	case m&os.ModeSocket != 0:
		return "socket"
	case m&os.ModeDevice != 0:
		return "device"
	case m.IsDir():
		return "directory"
	}
	return "special file"
}

// ReadRegular reads a regular file (see OpenRegular) of at most max bytes;
// a larger one fails with a *FileError wrapping ErrTooLarge, without being
// read.
func ReadRegular(path string, max int64) ([]byte, os.FileInfo, error) {
	f, fi, err := OpenRegular(path, os.O_RDONLY, 0)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	if fi.Size() > max {
		return nil, fi, &FileError{Name: filepath.Base(path), Problem: fmt.Sprintf("is %d bytes; the limit is %d", fi.Size(), max), Err: ErrTooLarge}
	}
	data, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, fi, err
	}
	if int64(len(data)) > max { // it grew while it was read
		return nil, fi, &FileError{Name: filepath.Base(path), Problem: fmt.Sprintf("is more than %d bytes", max), Err: ErrTooLarge}
	}
	return data, fi, nil
}

package memory

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/ragmem/ragmem/internal/wal"
)

// Files are never written in place, and never read or written through a
// link: the primitives are internal/wal's (WriteFile with Shared: a
// temporary file of its own, fsync, rename, fsync of the directory;
// OpenRegular and ReadRegular: no-follow, non-blocking opens of regular
// files only). This file translates their errors into the package's.

// writeFile replaces path with data (see wal.WriteFile).
func writeFile(fsys wal.FS, path string, data []byte, perm os.FileMode) error {
	err := wal.WriteFile(fsys, path, &wal.WriteOptions{Perm: perm, Shared: true}, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
	if err != nil {
		return fmt.Errorf("memory: write %s: %w", filepath.Base(path), err)
	}
	return nil
}

// fileErr translates wal's refusals into ErrNotRegular and ErrTooLarge.
func fileErr(err error) error {
	var fe *wal.FileError
	if !errors.As(err, &fe) {
		return err
	}
	sentinel := ErrNotRegular
	if errors.Is(fe.Err, wal.ErrTooLarge) {
		sentinel = ErrTooLarge
	}
	return fmt.Errorf("%w: %s %s", sentinel, fe.Name, fe.Problem)
}

// openRegular is wal.OpenRegular with the package's errors.
func openRegular(path string, flag int, perm os.FileMode) (*os.File, os.FileInfo, error) {
	f, fi, err := wal.OpenRegular(path, flag, perm)
	return f, fi, fileErr(err)
}

// readRegular is wal.ReadRegular with the package's errors.
func readRegular(path string, max int64) ([]byte, os.FileInfo, error) {
	data, fi, err := wal.ReadRegular(path, max)
	return data, fi, fileErr(err)
}

// staleTempAge is how old a temporary file must be before an open removes
// it: older than any live write.
const staleTempAge = time.Minute

// lockTimeout bounds how long a writer waits for another process (or
// another writer in this one) to release a memory directory.
var lockTimeout = 10 * time.Second

// dirLock serialises the writers of one memory directory, within the process
// (a writer waits at most lockTimeout, or until its context ends) and across
// processes (an advisory lock on the directory's .lock file, internal/wal's).
// It is safe for concurrent use.
type dirLock struct {
	path string
	sem  chan struct{} // the in-process part
}

func newDirLock(path string) *dirLock { return &dirLock{path: path, sem: make(chan struct{}, 1)} }

// with runs fn holding the lock, waiting at most lockTimeout for it.
func (l *dirLock) with(ctx context.Context, fn func() error) error {
	ctx, cancel := context.WithTimeout(ctx, lockTimeout)
	defer cancel()
	select {
	case l.sem <- struct{}{}:
	case <-ctx.Done():
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return fmt.Errorf("%w: another writer has held %s for more than %s", ErrLocked, filepath.Dir(l.path), lockTimeout)
		}
		return ctx.Err()
	}
	defer func() { <-l.sem }()
	lk, err := wal.WaitLock(ctx, l.path)
	if err != nil {
		var le *wal.LockedError
		if errors.As(err, &le) {
			return fmt.Errorf("%w: %s is held by process %s for more than %s", ErrLocked, filepath.Dir(l.path), le.PID, lockTimeout)
		}
		if errors.Is(err, wal.ErrNotRegular) {
			return fileErr(err)
		}
		return fmt.Errorf("memory: lock %s: %w", filepath.Base(l.path), err)
	}
	defer lk.Unlock()
	return fn()
}

// lockExclusive takes the directory's lock for a Manager's lifetime, or
// fails at once when another process holds it.
func lockExclusive(path string) (*wal.Lock, error) {
	lk, err := wal.TryLock(path)
	if err != nil {
		var le *wal.LockedError
		if errors.As(err, &le) {
			return nil, fmt.Errorf("%w: %s is in use by process %s", ErrLocked, filepath.Dir(path), le.PID)
		}
		if errors.Is(err, wal.ErrNotRegular) {
			return nil, fileErr(err)
		}
		return nil, fmt.Errorf("memory: lock %s: %w", path, err)
	}
	return lk, nil
}

// pathless describes a file-system error without the path it names: the
// paths of a server's files are not for its clients.
func pathless(err error) string {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Op + ": " + pe.Err.Error()
	}
	var le *os.LinkError
	if errors.As(err, &le) {
		return le.Op + ": " + le.Err.Error()
	}
	return err.Error()
}

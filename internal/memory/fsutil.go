package memory

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/ragmem/ragmem/internal/memory/internal/files"
	"github.com/ragmem/ragmem/internal/wal"
)

// Files are never written in place, and never read or written through a
// link: memory/internal/files gives internal/wal's primitives memory's
// errors.

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
		return files.LockErr(l.path, err)
	}
	defer lk.Unlock()
	return fn()
}

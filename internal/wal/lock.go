package wal

import (
	"context"
	"errors"
	"time"
)

// ErrLocked is wrapped by the *LockedError TryLock returns when another
// process holds a lock.
var ErrLocked = errors.New("wal: locked")

// ErrNotRegular is wrapped by the errors of OpenRegular, ReadRegular and
// TryLock for a file that is a symbolic link or not a regular file.
var ErrNotRegular = errors.New("wal: not a regular file")

// WaitLock takes the lock at path, waiting while another process holds it
// until ctx ends; it then returns that process's *LockedError.
func WaitLock(ctx context.Context, path string) (*Lock, error) {
	delay := 5 * time.Millisecond
	for {
		l, err := TryLock(path)
		if err == nil || !errors.Is(err, ErrLocked) {
			return l, err
		}
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, err
		case <-t.C:
		}
		delay = min(2*delay, 100*time.Millisecond)
	}
}

// LockedError says which process holds a lock.
type LockedError struct {
	Path string // the lock file
	PID  string // the holder's process id, or "unknown"
}

func (e *LockedError) Error() string { return "locked by pid " + e.PID + " (" + e.Path + ")" }

// Unwrap returns ErrLocked.
func (e *LockedError) Unwrap() error { return ErrLocked }

package wal

import "errors"

// ErrLocked is wrapped by the *LockedError TryLock returns when another
// process holds a lock.
var ErrLocked = errors.New("wal: locked")

// LockedError says which process holds a lock. It is a plain value.
type LockedError struct {
	Path string // the lock file
	PID  string // the holder's process id, or "unknown"
}

func (e *LockedError) Error() string { return "locked by pid " + e.PID + " (" + e.Path + ")" }

// Unwrap returns ErrLocked.
func (e *LockedError) Unwrap() error { return ErrLocked }

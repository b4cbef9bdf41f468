//go:build unix

package wal

import (
	"errors"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Lock is an exclusive advisory lock on a file that holds the owner's pid.
// The kernel releases it when the process dies, so a crash never leaves a
// store locked. Unlock is not safe to call concurrently.
type Lock struct{ f *os.File }

// TryLock takes the lock at path without waiting. When another process
// holds it the error is a *LockedError naming that process. A lock file that
// is a symbolic link, a named pipe or anything but a regular file is
// refused, never followed or written through.
func TryLock(path string) (*Lock, error) {
	f, _, err := OpenRegular(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, err
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		pid := readPID(f)
		_ = f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, &LockedError{Path: path, PID: pid}
		}
		return nil, err
	}
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return &Lock{f: f}, nil
}

func readPID(f *os.File) string {
	b := make([]byte, 32)
	n, _ := f.ReadAt(b, 0)
	pid := strings.TrimSpace(string(b[:n]))
	if _, err := strconv.Atoi(pid); err != nil {
		return "unknown"
	}
	return pid
}

// Unlock releases the lock. It is safe to call more than once.
func (l *Lock) Unlock() error {
	if l == nil || l.f == nil {
		return nil
	}
	_ = unix.Flock(int(l.f.Fd()), unix.LOCK_UN)
	err := l.f.Close()
	l.f = nil
	return err
}

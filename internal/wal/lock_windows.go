//go:build windows

package wal

import (
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/windows"
)

// Lock is an exclusive lock on a file that holds the owner's pid. Windows
// releases it when the process dies. Unlock is not safe to call concurrently.
type Lock struct{ f *os.File }

// TryLock takes the lock at path without waiting. When another process
// holds it the error is a *LockedError naming that process.
func TryLock(path string) (*Lock, error) {
	f, _, err := OpenRegular(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, err
	}
	// Lock a byte far past the pid so that other processes can still read it.
	ol := &windows.Overlapped{Offset: 1 << 20}
	err = windows.LockFileEx(windows.Handle(f.Fd()), windows.LOCKFILE_EXCLUSIVE_LOCK|windows.LOCKFILE_FAIL_IMMEDIATELY, 0, 1, 0, ol)
	if err != nil {
		b := make([]byte, 32)
		n, _ := f.ReadAt(b, 0)
		_ = f.Close()
		pid := strings.TrimSpace(string(b[:n]))
		if _, perr := strconv.Atoi(pid); perr != nil {
			pid = "unknown"
		}
		return nil, &LockedError{Path: path, PID: pid}
	}
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return &Lock{f: f}, nil
}

// Unlock releases the lock. It is safe to call more than once.
func (l *Lock) Unlock() error {
	if l == nil || l.f == nil {
		return nil
	}
	_ = windows.UnlockFileEx(windows.Handle(l.f.Fd()), 0, 1, 0, &windows.Overlapped{Offset: 1 << 20})
	err := l.f.Close()
	l.f = nil
	return err
}

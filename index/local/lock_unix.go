//go:build unix

package local

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// ErrLocked is returned by Open when another process holds the store.
var ErrLocked = errors.New("index: store is locked")

type dirLock struct{ f *os.File }

// lockDir takes an exclusive advisory lock on dir/LOCK and records our pid in
// it. The lock is released by the kernel if the process dies.
func lockDir(path string) (*dirLock, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("index: open lock file: %w", err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		b := make([]byte, 32)
		n, _ := f.ReadAt(b, 0)
		_ = f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			pid := strings.TrimSpace(string(b[:n]))
			if _, perr := strconv.Atoi(pid); perr != nil || pid == "" {
				pid = "unknown"
			}
			return nil, fmt.Errorf("%w by pid %s (another ragmem process is using %s; stop it or use another --dir)", ErrLocked, pid, strings.TrimSuffix(path, "/LOCK"))
		}
		return nil, fmt.Errorf("index: lock store: %w", err)
	}
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return &dirLock{f: f}, nil
}

func (l *dirLock) unlock() error {
	if l == nil || l.f == nil {
		return nil
	}
	_ = unix.Flock(int(l.f.Fd()), unix.LOCK_UN)
	err := l.f.Close()
	l.f = nil
	return err
}

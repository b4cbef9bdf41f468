package memory

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"
)

// Files are never written in place: writeFileAtomic writes a temporary file
// in the same directory, fsyncs it, renames it over the target and fsyncs
// the directory, so that a crash leaves either the old file or the new one,
// never a torn one.

// crashHook, when set by a test, is called at each step of writeFileAtomic
// ("write", "sync", "rename", "syncdir"); an error it returns aborts the
// write at that step as a crash or an I/O error would.
var crashHook func(step string) error

func hook(step string) error {
	if crashHook != nil {
		return crashHook(step)
	}
	return nil
}

const tmpMarker = ".tmp-"

func writeFileAtomic(path string, data []byte, perm os.FileMode) (err error) {
	dir := filepath.Dir(path)
	var rnd [6]byte
	_, _ = rand.Read(rnd[:])
	tmp := filepath.Join(dir, "."+filepath.Base(path)+tmpMarker+hex.EncodeToString(rnd[:]))
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_EXCL|os.O_WRONLY, perm)
	if err != nil {
		return fmt.Errorf("memory: write %s: %w", filepath.Base(path), err)
	}
	renamed := false
	defer func() {
		if !renamed {
			_ = f.Close()
			_ = os.Remove(tmp)
		}
	}()
	if err := hook("write"); err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		return fmt.Errorf("memory: write %s: %w", filepath.Base(path), err)
	}
	if err := hook("sync"); err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("memory: sync %s: %w", filepath.Base(path), err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("memory: close %s: %w", filepath.Base(path), err)
	}
	if err := hook("rename"); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("memory: replace %s: %w", filepath.Base(path), err)
	}
	renamed = true
	if err := hook("syncdir"); err != nil {
		return err
	}
	return syncDir(dir)
}

func syncDir(dir string) error {
	if runtime.GOOS == "windows" {
		return nil // directories cannot be fsynced there; renames are durable once done
	}
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("memory: sync directory: %w", err)
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if err != nil && !errors.Is(err, os.ErrInvalid) { // some platforms cannot sync directories
		return fmt.Errorf("memory: sync directory: %w", err)
	}
	return nil
}

// removeStaleTemps deletes temporary files a crashed writer left in dir
// (older than a minute, so that a live writer's file is never touched).
func removeStaleTemps(dir string, now time.Time) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range ents {
		n := e.Name()
		if !strings.HasPrefix(n, ".") || !strings.Contains(n, tmpMarker) || !e.Type().IsRegular() {
			continue
		}
		if info, err := e.Info(); err == nil && now.Sub(info.ModTime()) > time.Minute {
			_ = os.Remove(filepath.Join(dir, n))
		}
	}
}

// lockTimeout bounds how long a writer waits for another process.
const lockTimeout = 10 * time.Second

// withFileLock runs fn holding an exclusive advisory lock on path, waiting
// up to lockTimeout for another process to release it.
func withFileLock(path string, fn func() error) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return fmt.Errorf("memory: open lock file: %w", err)
	}
	defer f.Close()
	deadline := time.Now().Add(lockTimeout)
	for {
		ok, err := tryLock(f)
		if err != nil {
			return fmt.Errorf("memory: lock %s: %w", filepath.Base(path), err)
		}
		if ok {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%w: %s is held by another process for more than %s", ErrLocked, path, lockTimeout)
		}
		time.Sleep(20 * time.Millisecond)
	}
	defer unlock(f)
	return fn()
}

// exclusiveLock is a lock held for a long time (a Manager's lifetime).
type exclusiveLock struct{ f *os.File }

func lockExclusive(path string) (*exclusiveLock, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("memory: open lock file: %w", err)
	}
	ok, err := tryLock(f)
	if err != nil || !ok {
		_ = f.Close()
		if err != nil {
			return nil, fmt.Errorf("memory: lock %s: %w", path, err)
		}
		return nil, fmt.Errorf("%w: %s is in use by another process", ErrLocked, filepath.Dir(path))
	}
	return &exclusiveLock{f: f}, nil
}

func (l *exclusiveLock) release() {
	if l != nil && l.f != nil {
		unlock(l.f)
		_ = l.f.Close()
		l.f = nil
	}
}

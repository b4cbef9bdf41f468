package memory

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/ragmem/ragmem/internal/wal"
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

// Memory files are read and appended to by path, in directories users and
// other programs write to, so a path is never trusted to name a regular
// file: openRegular opens without following a symbolic link at the last
// component and without blocking on a named pipe or device (the open is
// non-blocking), then checks with fstat that it holds a regular file. A
// planted link to a key file, or to /dev/zero, or a FIFO, gives
// ErrNotRegular at once instead of being copied, read without end, or
// waited on forever while the directory lock is held.

// openRegular opens path with flag (plus no-follow and non-blocking) and
// returns the file if it is a regular file.
func openRegular(path string, flag int, perm os.FileMode) (*os.File, os.FileInfo, error) {
	f, err := openNoFollow(path, flag, perm)
	if err != nil {
		if isLinkError(err) {
			return nil, nil, fmt.Errorf("%w: %s is a symbolic link; links are not followed, copy the file instead", ErrNotRegular, filepath.Base(path))
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
		return nil, nil, fmt.Errorf("%w: %s is a %s", ErrNotRegular, filepath.Base(path), fileKind(fi.Mode()))
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

// readRegular reads a regular file of at most max bytes (see openRegular);
// a larger one fails with ErrTooLarge without being read.
func readRegular(path string, max int64) ([]byte, os.FileInfo, error) {
	f, fi, err := openRegular(path, os.O_RDONLY, 0)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	if fi.Size() > max {
		return nil, fi, fmt.Errorf("%w: %s is %d bytes; the limit is %d", ErrTooLarge, filepath.Base(path), fi.Size(), max)
	}
	data, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, fi, err
	}
	if int64(len(data)) > max { // it grew while we read it
		return nil, fi, fmt.Errorf("%w: %s is more than %d bytes", ErrTooLarge, filepath.Base(path), max)
	}
	return data, fi, nil
}

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

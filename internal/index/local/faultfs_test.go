package local

import (
	"errors"
	"os"
	"strings"
	"sync"
	"syscall"

	"github.com/ragmem/ragmem/internal/wal"
)

// faultFS is the OS file system with one injected failure: the n-th call of
// one kind (counted from arming) fails with err. A failing write can first
// write part of its data, as a full disk does.
type faultFS struct {
	wal.OS
	mu      sync.Mutex
	kind    string // "write", "sync", "rename", "syncdir", "create", "truncate", "remove"
	n       int    // 0: disarmed
	seen    int
	err     error
	partial bool
	hits    int
}

func (f *faultFS) arm(kind string, n int, err error, partial bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.kind, f.n, f.seen, f.err, f.partial, f.hits = kind, n, 0, err, partial, 0
}

func (f *faultFS) disarm() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.n = 0
	return f.hits
}

// fail reports whether this call of kind is the one to fail.
func (f *faultFS) fail(kind string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.n == 0 || kind != f.kind {
		return nil
	}
	f.seen++
	if f.seen != f.n {
		return nil
	}
	f.hits++
	return f.err
}

func (f *faultFS) OpenFile(name string, flag int, perm os.FileMode) (wal.File, error) {
	if flag&os.O_CREATE != 0 {
		if err := f.fail("create"); err != nil {
			return nil, &os.PathError{Op: "open", Path: name, Err: err}
		}
	}
	fh, err := os.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return &faultFile{File: fh, fs: f}, nil
}

func (f *faultFS) Rename(o, n string) error {
	if err := f.fail("rename"); err != nil {
		return &os.LinkError{Op: "rename", Old: o, New: n, Err: err}
	}
	return os.Rename(o, n)
}

func (f *faultFS) Remove(name string) error {
	if err := f.fail("remove"); err != nil {
		return &os.PathError{Op: "remove", Path: name, Err: err}
	}
	return os.Remove(name)
}

func (f *faultFS) SyncDir(dir string) error {
	if err := f.fail("syncdir"); err != nil {
		return &os.PathError{Op: "sync", Path: dir, Err: err}
	}
	return wal.OS{}.SyncDir(dir)
}

type faultFile struct {
	*os.File
	fs *faultFS
}

func (f *faultFile) Write(p []byte) (int, error) {
	if err := f.fs.fail("write"); err != nil {
		n := 0
		if f.fs.partial && len(p) > 1 {
			n, _ = f.File.Write(p[:len(p)/2])
		}
		return n, &os.PathError{Op: "write", Path: f.Name(), Err: err}
	}
	return f.File.Write(p)
}

func (f *faultFile) Sync() error {
	if err := f.fs.fail("sync"); err != nil {
		return &os.PathError{Op: "sync", Path: f.Name(), Err: err}
	}
	return f.File.Sync()
}

func (f *faultFile) Truncate(size int64) error {
	if err := f.fs.fail("truncate"); err != nil {
		return &os.PathError{Op: "truncate", Path: f.Name(), Err: err}
	}
	return f.File.Truncate(size)
}

// faults are the failures every store operation is tried against.
var faults = []struct {
	name    string
	kind    string
	err     error
	partial bool
}{
	{"write-EIO", "write", syscall.EIO, false},
	{"write-ENOSPC", "write", syscall.ENOSPC, true},
	{"sync-EIO", "sync", syscall.EIO, false},
	{"rename-EIO", "rename", syscall.EIO, false},
	{"syncdir-EIO", "syncdir", syscall.EIO, false},
	{"create-ENOSPC", "create", syscall.ENOSPC, false},
	{"truncate-EIO", "truncate", syscall.EIO, false},
}

// clearError reports whether err tells the user what failed and why.
func clearError(err error, cause error) bool {
	msg := err.Error()
	return strings.HasPrefix(msg, "index: ") && errors.Is(err, cause) && strings.Contains(msg, cause.Error())
}

package wal

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"
)

// FS is the slice of the file system a store's own files go through, so
// that tests can inject write, sync, rename and disk-full errors.
// Implementations must be safe for concurrent use.
type FS interface {
	OpenFile(name string, flag int, perm os.FileMode) (File, error)
	Rename(oldpath, newpath string) error
	Remove(name string) error
	MkdirAll(path string, perm os.FileMode) error
	ReadDir(name string) ([]os.DirEntry, error)
	Stat(name string) (os.FileInfo, error)
	SyncDir(dir string) error
}

// File is an open file of an FS.
type File interface {
	io.Reader
	io.Writer
	io.Seeker
	io.Closer
	Sync() error
	Truncate(size int64) error
	Stat() (os.FileInfo, error)
}

// OS is the operating system's file system. It is stateless and safe for
// concurrent use.
type OS struct{}

// OpenFile implements FS.
func (OS) OpenFile(name string, flag int, perm os.FileMode) (File, error) {
	return os.OpenFile(name, flag, perm)
}

// Rename implements FS.
func (OS) Rename(o, n string) error { return os.Rename(o, n) }

// Remove implements FS.
func (OS) Remove(name string) error { return os.Remove(name) }

// MkdirAll implements FS.
func (OS) MkdirAll(p string, perm os.FileMode) error { return os.MkdirAll(p, perm) }

// ReadDir implements FS.
func (OS) ReadDir(name string) ([]os.DirEntry, error) { return os.ReadDir(name) }

// Stat implements FS.
func (OS) Stat(name string) (os.FileInfo, error) { return os.Stat(name) }

// SyncDir implements FS: it fsyncs a directory so that file creations,
// renames and removals in it survive a power loss. Where directories cannot
// be synced (Windows, where a rename is durable once done, and file
// systems that answer EINVAL) it does nothing.
func (OS) SyncDir(dir string) error {
	if runtime.GOOS == "windows" {
		return nil
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if errors.Is(err, os.ErrInvalid) || errors.Is(err, syscall.EINVAL) {
		return nil
	}
	return err
}

// WriteOptions configure WriteFile. A nil *WriteOptions means the defaults.
type WriteOptions struct {
	// Perm is the new file's permission bits. Default 0600.
	Perm os.FileMode
	// Shared is for a directory that others write to without the caller's
	// lock (another process, another user, a person editing files): the
	// temporary file gets a name of its own, .<name>.<12 hex digits>.tmp
	// (hidden), created exclusively, so that no two writers ever share one
	// and a link planted at its name is never written through.
	// RemoveStaleTemps clears the ones a crash left. Default false:
	// <name>.tmp, truncated, for a directory the caller's lock keeps to
	// itself.
	Shared bool
}

// WriteFileAtomic replaces name with what write produces: it writes a
// temporary file, fsyncs it, renames it over name and fsyncs the directory.
// A crash at any point leaves either the old file or the new one, and the
// temporary file is removed when any step fails. It is WriteFile with the
// default options.
func WriteFileAtomic(fs FS, name string, write func(w io.Writer) error) error {
	return WriteFile(fs, name, nil, write)
}

// WriteFile is WriteFileAtomic with options.
func WriteFile(fs FS, name string, opts *WriteOptions, write func(w io.Writer) error) (err error) {
	var o WriteOptions
	if opts != nil {
		o = *opts
	}
	if o.Perm == 0 {
		o.Perm = 0o600
	}
	dir := filepath.Dir(name)
	tmp, flag := name+".tmp", os.O_CREATE|os.O_TRUNC|os.O_WRONLY
	if o.Shared {
		var rnd [6]byte
		_, _ = tempRand(rnd[:])
		tmp = filepath.Join(dir, "."+filepath.Base(name)+"."+hex.EncodeToString(rnd[:])+tmpSuffix)
		flag = os.O_CREATE | os.O_EXCL | os.O_WRONLY
	}
	f, err := fs.OpenFile(tmp, flag, o.Perm)
	if err != nil {
		return err
	}
	closed := false
	defer func() {
		if err != nil {
			if !closed {
				_ = f.Close()
			}
			_ = fs.Remove(tmp)
		}
	}()
	if err = write(f); err != nil {
		return err
	}
	if err = f.Sync(); err != nil {
		return err
	}
	closed = true
	if err = f.Close(); err != nil {
		return err
	}
	if err = fs.Rename(tmp, name); err != nil {
		return err
	}
	return fs.SyncDir(dir)
}

const tmpSuffix = ".tmp"

// tempRand names the temporary files of shared writes (tests replace it).
var tempRand = rand.Read

// sharedTemp reports whether name is a temporary file of a Shared write.
func sharedTemp(name string) bool {
	base, ok := strings.CutSuffix(name, tmpSuffix)
	if !ok || !strings.HasPrefix(base, ".") {
		return false
	}
	i := strings.LastIndexByte(base, '.')
	if i <= 0 || len(base)-i-1 != 12 {
		return false
	}
	_, err := hex.DecodeString(base[i+1:])
	return err == nil
}

// RemoveStaleTemps removes from dir the temporary files of Shared writes
// that a crash left, once they are older than minAge (so that a live
// writer's file is never touched), and reports how many it removed.
func RemoveStaleTemps(dir string, minAge time.Duration) int {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return 0
	}
	n := 0
	now := time.Now()
	for _, e := range ents {
		if !e.Type().IsRegular() || !sharedTemp(e.Name()) {
			continue
		}
		if info, err := e.Info(); err == nil && now.Sub(info.ModTime()) > minAge {
			if os.Remove(filepath.Join(dir, e.Name())) == nil {
				n++
			}
		}
	}
	return n
}

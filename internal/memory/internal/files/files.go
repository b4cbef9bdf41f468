// Package files is how the agent-memory packages read and write their
// files: internal/wal's primitives (regular files only, never through a
// link; whole-file replacement through a temporary file of its own; the
// directory lock) with errors in memory's terms. The sentinel errors live
// here so that package memory and memory/layers share them; package memory
// exports them.
package files

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/ragmem/ragmem/internal/wal"
)

// The sentinel errors of agent memory (exported by package memory).
var (
	ErrInvalid    = errors.New("memory: invalid")
	ErrNotFound   = errors.New("memory: not found")
	ErrTooLarge   = errors.New("memory: too large")
	ErrLocked     = errors.New("memory: locked")
	ErrNotRegular = errors.New("memory: not a regular file")
)

// Err translates wal's refusals (links, special files, files over a limit)
// into ErrNotRegular and ErrTooLarge; other errors pass unchanged.
func Err(err error) error {
	var fe *wal.FileError
	if !errors.As(err, &fe) {
		return err
	}
	sentinel := ErrNotRegular
	if errors.Is(fe.Err, wal.ErrTooLarge) {
		sentinel = ErrTooLarge
	}
	return fmt.Errorf("%w: %s %s", sentinel, fe.Name, fe.Problem)
}

// Open is wal.OpenRegular with memory's errors.
func Open(path string, flag int, perm os.FileMode) (*os.File, os.FileInfo, error) {
	f, fi, err := wal.OpenRegular(path, flag, perm)
	return f, fi, Err(err)
}

// Read is wal.ReadRegular with memory's errors.
func Read(path string, max int64) ([]byte, os.FileInfo, error) {
	data, fi, err := wal.ReadRegular(path, max)
	return data, fi, Err(err)
}

// Write replaces path with data: wal.WriteFile with a temporary file of its
// own (the directories are users' too), fsync, rename, fsync of the
// directory.
func Write(fsys wal.FS, path string, data []byte, perm os.FileMode) error {
	err := wal.WriteFile(fsys, path, &wal.WriteOptions{Perm: perm, Shared: true}, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
	if err != nil {
		return fmt.Errorf("memory: write %s: %w", filepath.Base(path), err)
	}
	return nil
}

// LockErr translates the error of wal.TryLock or wal.WaitLock on the lock
// file path: another process's hold is ErrLocked (with its pid), a planted
// lock file ErrNotRegular.
func LockErr(path string, err error) error {
	var le *wal.LockedError
	switch {
	case errors.As(err, &le):
		return fmt.Errorf("%w: %s is in use by process %s", ErrLocked, filepath.Dir(path), le.PID)
	case errors.Is(err, wal.ErrNotRegular):
		return Err(err)
	}
	return fmt.Errorf("memory: lock %s: %w", filepath.Base(path), err)
}

// Pathless describes a file-system error without the path it names: the
// paths of a server's files are not for its clients.
func Pathless(err error) string {
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

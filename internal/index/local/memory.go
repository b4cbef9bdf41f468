package local

import (
	"context"
	"io/fs"
	"os"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/index/scorch"
	"github.com/spf13/afero"

	"github.com/ragmem/ragmem/internal/wal"
)

// A store opened with Options.InMemory keeps everything in memory: its
// journal, snapshots and markers go to an in-memory file system (afero's),
// bleve runs its in-memory scorch index, and no lock file is taken. It
// behaves as a store on disk in every other respect (group commits,
// checkpoints, recovery of what it wrote), opens in milliseconds and leaves
// nothing behind: Close discards it. Tests use it.

// memFS is afero's in-memory file system as a wal.FS. It is safe for
// concurrent use.
type memFS struct{ fs afero.Fs }

func newMemFS() memFS { return memFS{afero.NewMemMapFs()} }

func (m memFS) OpenFile(name string, flag int, perm os.FileMode) (wal.File, error) {
	return m.fs.OpenFile(name, flag, perm)
}
func (m memFS) Rename(oldpath, newpath string) error         { return m.fs.Rename(oldpath, newpath) }
func (m memFS) Remove(name string) error                     { return m.fs.Remove(name) }
func (m memFS) MkdirAll(path string, perm os.FileMode) error { return m.fs.MkdirAll(path, perm) }
func (m memFS) Stat(name string) (os.FileInfo, error)        { return m.fs.Stat(name) }
func (m memFS) SyncDir(string) error                         { return nil }

func (m memFS) ReadDir(name string) ([]os.DirEntry, error) {
	infos, err := afero.ReadDir(m.fs, name)
	if err != nil {
		return nil, err
	}
	out := make([]os.DirEntry, len(infos))
	for i, fi := range infos {
		out[i] = fs.FileInfoToDirEntry(fi)
	}
	return out, nil
}

// openMemory finishes Open for an in-memory store.
func openMemory(ctx context.Context, b *Backend) (*Backend, error) {
	b.fs, b.memory = newMemFS(), true
	if err := b.fs.MkdirAll(b.dir, 0o700); err != nil {
		return nil, err
	}
	if err := b.recover(ctx); err != nil {
		if b.bl != nil {
			_ = b.bl.Close()
		}
		_ = b.journal.close()
		return nil, err
	}
	return b, nil
}

// openMemoryBleve creates the in-memory full-text index. Its batches are
// durable as soon as they are applied: there is nothing to persist.
func (b *Backend) openMemoryBleve() (bleveState, error) {
	m, err := storeMapping(b.ft)
	if err != nil {
		return bleveState{}, err
	}
	bi, err := bleve.NewUsing("", m, scorch.Name, scorch.Name, nil)
	if err != nil {
		return bleveState{}, err
	}
	bb := bi.NewBatch()
	bb.SetInternal([]byte(formatKey), []byte(bleveFormat))
	bb.SetInternal([]byte(analysisKey), []byte(b.ft.analysisVersion()))
	if err := bi.Batch(bb); err != nil {
		_ = bi.Close()
		return bleveState{}, err
	}
	b.bl = bi
	return bleveState{usable: true, created: true}, nil
}

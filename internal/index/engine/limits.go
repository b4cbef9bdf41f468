package engine

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/ragmem/ragmem/index"
)

// DefaultMaxChunksPerDocument is Options.MaxChunksPerDocument's default:
// about 6 MiB of prose in chunks of 400 tokens. Indexing costs about 22 KB
// of memory per chunk while the batch is written (6 KB of it kept by the
// store), so the limit keeps one document under about 90 MB of working
// memory whatever it holds.
const DefaultMaxChunksPerDocument = 4096

// storeLockFile marks a local store's directory (index/local's lock file):
// a nested store is not part of its parent's size.
const storeLockFile = "LOCK"

// checkQuota refuses a write that would take the store past its quotas.
func (ix *Index) checkQuota(ctx context.Context, work []*prepared) error {
	if ix.quotaChunks <= 0 && ix.quotaBytes <= 0 {
		return nil
	}
	add, removed := 0, 0
	var bytes int64
	dim := int64(ix.emb.Dimension())
	for _, p := range work {
		add += len(p.records)
		removed += p.res.Removed
		for i := range p.records {
			bytes += int64(len(p.records[i].Content)) + 4*dim
		}
	}
	if ix.quotaChunks > 0 {
		st, err := ix.be.Stats(ctx)
		if err != nil {
			return err
		}
		if n := st.Records - removed + add; n > ix.quotaChunks {
			return fmt.Errorf("%w: the store would hold %d chunks, more than its quota of %d (it holds %d); remove sources or raise the quota",
				ErrQuotaExceeded, n, ix.quotaChunks, st.Records)
		}
	}
	if ix.quotaBytes > 0 {
		size, err := ix.storeBytes(ctx)
		if err != nil {
			return err
		}
		if size+bytes > ix.quotaBytes {
			return fmt.Errorf("%w: the store takes %d bytes on disk and the new chunks about %d more, past its quota of %d bytes; remove sources or raise the quota",
				ErrQuotaExceeded, size, bytes, ix.quotaBytes)
		}
	}
	return nil
}

// storeBytes is the store's size on disk: its own files, not those of
// stores nested in its directory (the server keeps namespaces there).
func (ix *Index) storeBytes(ctx context.Context) (int64, error) {
	if ix.dir == "" {
		st, err := ix.be.Stats(ctx)
		return st.SizeBytes, err
	}
	var size int64
	err := filepath.WalkDir(ix.dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil // vanished while walking
		}
		if d.IsDir() {
			if p != ix.dir {
				if _, err := os.Lstat(filepath.Join(p, storeLockFile)); err == nil {
					return filepath.SkipDir
				}
			}
			return nil
		}
		if d.Type().IsRegular() {
			if info, err := d.Info(); err == nil {
				size += info.Size()
			}
		}
		return nil
	})
	return size, err
}

// Check tells, without writing anything, whether Add would accept d: it
// chunks d within MaxChunksPerDocument and checks the quotas, returning the
// number of chunks d makes, or the error Add would fail with
// (ErrTooManyChunks, ErrEmptyDocument, ErrNoSource, ErrQuotaExceeded). A
// surface that queues documents for IndexPageAsync calls it first, to
// refuse at once what the background worker would give up on.
func (ix *Index) Check(ctx context.Context, d index.Document) (int, error) {
	if ix.closed.Load() {
		return 0, ErrClosed
	}
	p, err := ix.prepare(ctx, d, ix.now().UTC())
	if err != nil {
		return 0, err
	}
	if p.res.Unchanged {
		return p.res.Chunks, nil
	}
	return len(p.records), ix.checkQuota(ctx, []*prepared{p})
}

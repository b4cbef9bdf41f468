package local

import (
	"os"
	"path/filepath"
)

// VectorDimension returns the length of the vectors the store holds or
// held (0 while it has never held one): a store whose records were all
// removed keeps it.
func (b *Backend) VectorDimension() int {
	b.mu.RLock()
	defer b.mu.RUnlock()
	return b.dim
}

// Exists reports whether dir holds a store (a journal, a snapshot or the
// full-text index), without opening or creating anything.
func Exists(dir string) bool {
	for _, pat := range []string{journalPrefix + "*" + journalSuffix, snapPrefix + "*" + snapSuffix} {
		if m, _ := filepath.Glob(filepath.Join(dir, pat)); len(m) > 0 {
			return true
		}
	}
	fi, err := os.Stat(filepath.Join(dir, bleveDirName))
	return err == nil && fi.IsDir()
}

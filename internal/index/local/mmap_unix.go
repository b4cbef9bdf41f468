//go:build unix

package local

import (
	"os"

	"golang.org/x/sys/unix"
)

// mapReadOnly maps n bytes of f from off (a multiple of the page size)
// read-only and shared: the pages come from the page cache when touched and
// are not part of the Go heap.
func mapReadOnly(f *os.File, off, n int64) ([]byte, error) {
	return unix.Mmap(int(f.Fd()), off, int(n), unix.PROT_READ, unix.MAP_SHARED)
}

func unmap(b []byte) error { return unix.Munmap(b) }

// releasePages drops the process's references to the pages of b (they stay
// in the page cache): resident memory goes back down after b was read
// through, for example to verify it.
func releasePages(b []byte) { _ = unix.Madvise(b, unix.MADV_DONTNEED) }

const canMap = true

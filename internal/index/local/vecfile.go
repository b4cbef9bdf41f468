package local

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"unsafe"

	"github.com/ragmem/ragmem/index/driver"
	"github.com/ragmem/ragmem/internal/wal"
)

// A snapshot's vectors (format version 2, snapshot.go) sit in one
// page-aligned section of float32 rows, so that opening a store maps them
// instead of decoding them: the float32 vectors are then not part of the Go
// heap, and only those a query rescores are ever brought into memory (the
// vector index answers from its own compact codes). Where the platform
// cannot map files, or is big-endian, the section is read into memory.

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// vecSection is a snapshot's vectors. It is immutable; close unmaps it, after
// which no vector of it may be touched.
type vecSection struct {
	dim    int
	count  int
	vecs   []float32 // count*dim
	mapped []byte    // the mapping; nil when read into memory
}

// vector returns row i (its capacity ends with it, so appends copy).
func (s *vecSection) vector(i int) []float32 {
	return s.vecs[i*s.dim : (i+1)*s.dim : (i+1)*s.dim]
}

// contains reports whether v is a row of s (by address).
func (s *vecSection) contains(v []float32) bool {
	if s == nil || len(v) == 0 || len(s.vecs) == 0 {
		return false
	}
	p := uintptr(unsafe.Pointer(&v[0]))
	lo := uintptr(unsafe.Pointer(&s.vecs[0]))
	return p >= lo && p < lo+uintptr(len(s.vecs))*4
}

// release drops the process's references to the mapped pages (see
// releasePages); a no-op for a section in memory.
func (s *vecSection) release() {
	if s != nil && s.mapped != nil {
		releasePages(s.mapped)
	}
}

func (s *vecSection) close() error {
	if s == nil || s.mapped == nil {
		return nil
	}
	m := s.mapped
	s.mapped, s.vecs = nil, nil
	return unmap(m)
}

var littleEndian = func() bool {
	x := uint16(1)
	return *(*byte)(unsafe.Pointer(&x)) == 1
}()

// mapSection maps count rows of dim float32 at off in the file at path,
// opened through fsys. A file of the operating system is mapped where the
// platform allows; any other (an in-memory file system, a test's) is read
// into memory through its ReaderAt.
func mapSection(fsys wal.FS, path string, off int64, count, dim int) (*vecSection, error) {
	s := &vecSection{dim: dim, count: count}
	n := int64(count) * int64(dim) * 4
	if n == 0 {
		return s, nil
	}
	f, err := fsys.OpenFile(path, os.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if of, ok := f.(*os.File); ok && canMap && littleEndian && off%int64(os.Getpagesize()) == 0 {
		b, err := mapReadOnly(of, off, n)
		if err == nil {
			s.mapped = b
			s.vecs = unsafe.Slice((*float32)(unsafe.Pointer(&b[0])), count*dim)
			return s, nil
		}
	}
	ra, ok := f.(io.ReaderAt)
	if !ok {
		return nil, fmt.Errorf("index: %s cannot be read at offsets", filepath.Base(path))
	}
	vecs, err := readVectors(ra, off, count, dim)
	if err != nil {
		return nil, err
	}
	s.vecs = vecs
	return s, nil
}

// readVectors reads count rows of dim little-endian float32 at off.
func readVectors(ra io.ReaderAt, off int64, count, dim int) ([]float32, error) {
	out := make([]float32, count*dim)
	buf := make([]byte, 1<<20)
	total := int64(len(out)) * 4
	for done := int64(0); done < total; {
		n := min(int64(len(buf)), total-done)
		if _, err := ra.ReadAt(buf[:n], off+done); err != nil {
			return nil, err
		}
		for i := int64(0); i < n; i += 4 {
			out[(done+i)/4] = math.Float32frombits(binary.LittleEndian.Uint32(buf[i:]))
		}
		done += n
	}
	return out, nil
}

// vectorSums computes the CRC-32C of each block of blockVecs rows while a
// section is written.
type vectorSums struct {
	blockBytes int
	inBlock    int
	crc        uint32
	sums       []uint32
}

func (v *vectorSums) write(p []byte) {
	for len(p) > 0 {
		n := min(len(p), v.blockBytes-v.inBlock)
		v.crc = crc32.Update(v.crc, castagnoli, p[:n])
		v.inBlock += n
		p = p[n:]
		if v.inBlock == v.blockBytes {
			v.sums = append(v.sums, v.crc)
			v.crc, v.inBlock = 0, 0
		}
	}
}

func (v *vectorSums) finish() []uint32 {
	if v.inBlock > 0 {
		v.sums = append(v.sums, v.crc)
		v.crc, v.inBlock = 0, 0
	}
	return v.sums
}

// verifyVectors checks the section at off against its block checksums,
// reading it with ReadAt over the cores (the pages go through the page
// cache, not into this process's resident memory).
func verifyVectors(ra io.ReaderAt, off int64, count, dim, blockVecs int, sums []uint32) error {
	blockBytes := int64(blockVecs) * int64(dim) * 4
	total := int64(count) * int64(dim) * 4
	if want := (total + blockBytes - 1) / blockBytes; int64(len(sums)) != want {
		return fmt.Errorf("%w: %d vector checksums for %d blocks", driver.ErrCorrupt, len(sums), want)
	}
	workers := max(1, min(runtime.GOMAXPROCS(0), len(sums)/4))
	errs := make([]error, workers)
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			buf := make([]byte, blockBytes)
			for b := w; b < len(sums); b += workers {
				start := int64(b) * blockBytes
				n := min(blockBytes, total-start)
				if _, err := ra.ReadAt(buf[:n], off+start); err != nil {
					errs[w] = fmt.Errorf("%w: vector block %d: %v", driver.ErrCorrupt, b, err)
					return
				}
				if crc32.Checksum(buf[:n], castagnoli) != sums[b] {
					errs[w] = fmt.Errorf("%w: vector block %d fails its checksum", driver.ErrCorrupt, b)
					return
				}
			}
		}(w)
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// vectorBytes returns v's little-endian bytes: v's own memory on a
// little-endian machine (the caller only reads them), else appended to dst.
func vectorBytes(dst []byte, v []float32) []byte {
	if littleEndian && len(v) > 0 {
		return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(v))), 4*len(v))
	}
	for _, f := range v {
		dst = binary.LittleEndian.AppendUint32(dst, math.Float32bits(f))
	}
	return dst
}

package vecindex

import (
	"math"
	"runtime"
	"sync"

	"github.com/viterin/vek/vek32"
)

// The quantised scan. Every vector is also kept as int8 codes with one
// float32 scale (v[i] ≈ scale·code[i], scale = max|v|/127), stored
// dimension-major in blocks of blockSize slots: block b holds, for each
// dimension d, the codes of its slots contiguously. A query then touches
// only the dimensions where it is non-zero, one byte per vector each: a
// query of the lexical embedder (a few words, tens of non-zero dimensions
// out of 384) reads about 1/30 of what a float32 scan reads. The approximate
// scores choose candidates, which are rescored with the exact float32
// vectors; the results are therefore exact scores, and Recall measures how
// often quantisation pushed a true neighbour out of the candidates.

const blockSize = 4096

type quantStore struct {
	dim    int
	blocks [][]int8  // block -> dim*blockSize codes
	scale  []float32 // slot -> scale (0 for a zero or deleted vector)
}

func (s *quantStore) reset(dim int) {
	s.dim, s.blocks, s.scale = dim, nil, nil
}

// grow makes room for slots [0, n); set may then be called for different
// slots from different goroutines.
func (s *quantStore) grow(n int) {
	for (n-1)/blockSize >= len(s.blocks) {
		s.blocks = append(s.blocks, make([]int8, s.dim*blockSize))
	}
	if len(s.scale) < n {
		if n <= cap(s.scale) {
			old := len(s.scale)
			s.scale = s.scale[:n]
			clear(s.scale[old:])
		} else {
			s.scale = append(s.scale, make([]float32, n-len(s.scale))...)
		}
	}
}

// reserve allocates room for n slots at once.
func (s *quantStore) reserve(n int) {
	s.blocks = make([][]int8, 0, (n+blockSize-1)/blockSize)
	s.scale = make([]float32, 0, n)
}

// set stores the codes of slot (which is len(scale) or less).
func (s *quantStore) set(slot int, v []float32) {
	s.grow(slot + 1)
	scale, inv := quantScale(v)
	b, off := s.blocks[slot/blockSize], slot%blockSize
	for d, f := range v {
		b[d*blockSize+off] = quantCode(f, inv)
	}
	s.scale[slot] = scale
}

// setRows stores the codes of consecutive slots from first on, from their
// persisted form (rows[i] is slot first+i's, one byte per dimension),
// transposed a tile of rows at a time, so that each write fills a cache
// line instead of touching one byte of it.
func (s *quantStore) setRows(first int, scale []float32, rows [][]byte) {
	const tile = 64
	s.grow(first + len(rows))
	for i := 0; i < len(rows); {
		slot := first + i
		b, off := s.blocks[slot/blockSize], slot%blockSize
		run := min(len(rows)-i, blockSize-off) // the rows in this block
		for t := 0; t < run; t += tile {
			tr := rows[i+t : i+min(run, t+tile)]
			for d := 0; d < s.dim; d++ {
				dst := b[d*blockSize+off+t : d*blockSize+off+t+len(tr)]
				for j, r := range tr {
					dst[j] = int8(r[d])
				}
			}
		}
		copy(s.scale[slot:slot+run], scale[i:i+run])
		i += run
	}
}

// quantScale returns the scale of v's codes, max|v|/127 (v[d] ≈
// scale·code[d]), and its inverse (0 for a zero vector).
func quantScale(v []float32) (scale, inv float32) {
	var m float32
	for _, f := range v {
		m = max(m, f, -f)
	}
	if m == 0 {
		return 0, 0
	}
	return m / 127, 127 / m
}

func quantCode(f, inv float32) int8 { return int8(math.Round(float64(f * inv))) }

func (s *quantStore) clear(slot int) {
	if slot < len(s.scale) {
		s.scale[slot] = 0
	}
}

// sparseQuery lists the non-zero dimensions of a query.
type sparseQuery struct {
	dims []int
	vals []float32
}

func sparsify(q []float32) sparseQuery {
	var sq sparseQuery
	for d, f := range q {
		if f != 0 {
			sq.dims = append(sq.dims, d)
			sq.vals = append(sq.vals, f)
		}
	}
	return sq
}

var accPool = sync.Pool{New: func() any { return new([blockSize]float32) }}

// scanQuant scores slots [lo, hi) approximately and pushes the matching
// live ones into cand.
func (x *Index) scanQuant(sq sparseQuery, c *compiled, lo, hi int, cand *topK) {
	blocks := (hi - 1 - lo/blockSize*blockSize) / blockSize
	workers := min(runtime.GOMAXPROCS(0), blocks+1, max(1, (hi-lo)/16384))
	if workers <= 1 {
		x.scanQuantRange(sq, c, lo, hi, cand)
		return
	}
	// Split at block boundaries.
	firstBlock, lastBlock := lo/blockSize, (hi-1)/blockSize
	per := (lastBlock - firstBlock + workers) / workers
	tops := make([]topK, workers)
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		a := max(lo, (firstBlock+w*per)*blockSize)
		b := min(hi, (firstBlock+(w+1)*per)*blockSize)
		if a >= b {
			continue
		}
		tops[w].init(cand.k, x)
		wg.Add(1)
		go func(w, a, b int) {
			defer wg.Done()
			x.scanQuantRange(sq, c, a, b, &tops[w])
		}(w, a, b)
	}
	wg.Wait()
	for w := range tops {
		for _, it := range tops[w].items {
			cand.push(it.score, it.slot)
		}
	}
}

func (x *Index) scanQuantRange(sq sparseQuery, c *compiled, lo, hi int, cand *topK) {
	acc := accPool.Get().(*[blockSize]float32)
	defer accPool.Put(acc)
	qs := &x.quant
	for start := lo; start < hi; {
		bi, off := start/blockSize, start%blockSize
		end := min(hi, (bi+1)*blockSize)
		n := end - start
		a := acc[:n]
		clear(a)
		blk := qs.blocks[bi]
		for k, d := range sq.dims {
			col := blk[d*blockSize+off : d*blockSize+off+n]
			axpyInt8(a, col, sq.vals[k])
		}
		scales := qs.scale[start:end]
		for j, s := range a {
			sc := scales[j]
			if sc == 0 {
				continue // deleted
			}
			v := s * sc
			if len(cand.items) == cand.k && v < cand.items[0].score {
				continue // cannot enter the candidates: skip the filter
			}
			if slot := int32(start + j); x.match(c, slot) {
				cand.push(v, slot)
			}
		}
		start = end
	}
}

// axpyInt8Go adds q·float32(col[i]) to acc[i]: the portable axpyInt8. The
// conversions round each product to float32 before the sum, so that no
// build fuses them into one multiply-add (which the assembly does not do).
func axpyInt8Go(acc []float32, col []int8, q float32) {
	col = col[:len(acc)]
	i := 0
	for ; i+4 <= len(acc); i += 4 {
		acc[i] += float32(q * float32(col[i]))
		acc[i+1] += float32(q * float32(col[i+1]))
		acc[i+2] += float32(q * float32(col[i+2]))
		acc[i+3] += float32(q * float32(col[i+3]))
	}
	for ; i < len(acc); i++ {
		acc[i] += float32(q * float32(col[i]))
	}
}

// rescore replaces approximate candidates by their exact scores and keeps
// the best k in top.
func (x *Index) rescore(q []float32, cand *topK, top *topK) {
	for _, it := range cand.items {
		if v := x.vecs[it.slot]; v != nil {
			top.push(vek32.Dot(q, v), it.slot)
		}
	}
}

// candidates is how many approximate candidates a top-k query rescores.
func candidates(k int) int { return 4*k + 64 }

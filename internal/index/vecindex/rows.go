package vecindex

import (
	"math"
	"slices"
)

// Int8 rows refine the 1-bit scan's candidates for dense data. The 1-bit
// estimate's error is about 1/sqrt(dim) (0.024 at 768 dimensions), so for
// embeddings whose similarities are flat (the randproj embedder, or any
// large store) hundreds to thousands of vectors are within their bounds of
// the k-th best; rescoring them all with float32 vectors mapped from a file
// costs a page fault each the first time. Each vector's row, its components
// quantised to int8 with one scale (v[d] ≈ scale·row[d]), estimates the
// similarity to within about 5e-4; only the candidates within a few such
// errors of the k-th best row estimate are rescored with their float32
// vectors, so results keep exact scores.

// rowStore holds the int8 rows, slot-major. It is guarded by the Index's mu.
type rowStore struct {
	on    bool
	dim   int
	codes []int8    // slot*dim ...
	scale []float32 // slot -> scale
}

func (r *rowStore) row(slot int) []int8 { return r.codes[slot*r.dim : (slot+1)*r.dim] }

// set stores slot's row (slots are set in order or overwritten).
func (r *rowStore) set(slot int, scale float32, row []int8) {
	if need := (slot + 1) * r.dim; need > len(r.codes) {
		old := len(r.codes)
		r.codes = slices.Grow(r.codes, need-old)[:need]
		clear(r.codes[old:])
		olds := len(r.scale)
		r.scale = slices.Grow(r.scale, slot+1-olds)[:slot+1]
		clear(r.scale[olds:])
	}
	copy(r.row(slot), row)
	r.scale[slot] = scale
}

// quantRow writes v's int8 row into dst and returns its scale.
func quantRow(dst []int8, v []float32) float32 {
	scale, inv := quantScale(v)
	for d, f := range v {
		dst[d] = quantCode(f, inv)
	}
	return scale
}

// rowQuery is a query quantised for the rows.
type rowQuery struct {
	q     []int8
	scale float32
}

func newRowQuery(q []float32) rowQuery {
	rq := rowQuery{q: make([]int8, len(q))}
	rq.scale = quantRow(rq.q, q)
	return rq
}

// estimate is the row estimate of <v, q> for slot, and its error bound
// (six standard deviations of the rounding of both sides, for unit vectors).
func (r *rowStore) estimate(slot int, rq *rowQuery) (est, bound float32) {
	s := r.scale[slot]
	est = float32(dot8(r.row(slot), rq.q)) * s * rq.scale
	bound = 6 * float32(math.Sqrt(float64(s*s+rq.scale*rq.scale)/12))
	return est, bound
}

// dot8Go is the portable dot8: Σ a[i]·b[i] in int32 (no overflow below
// 2^17 dimensions).
func dot8Go(a, b []int8) int32 {
	b = b[:len(a)]
	var s0, s1, s2, s3 int32
	i := 0
	for ; i+4 <= len(a); i += 4 {
		s0 += int32(a[i]) * int32(b[i])
		s1 += int32(a[i+1]) * int32(b[i+1])
		s2 += int32(a[i+2]) * int32(b[i+2])
		s3 += int32(a[i+3]) * int32(b[i+3])
	}
	for ; i < len(a); i++ {
		s0 += int32(a[i]) * int32(b[i])
	}
	return s0 + s1 + s2 + s3
}

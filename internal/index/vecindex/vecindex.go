// Package vecindex is ragmem's vector index: it answers the nearest-neighbour
// queries of the local backend by cosine similarity (dot products of
// L2-normalised vectors).
//
// Every vector is kept three ways:
//
//   - a reference to its float32 form, which the caller owns and may keep
//     outside the Go heap (the local backend maps it from its snapshot);
//   - a 1-bit code of its rotated, centred form with three correction
//     factors (binary.go): pd/8 + 12 bytes, 108 at 768 dimensions;
//   - for sparse data (vectors with many zero components, such as those
//     of the lexical embedder), int8 codes stored dimension-major
//     (quant.go), which let a sparse query read only its non-zero
//     dimensions; for dense data, int8 rows (rows.go), one byte per
//     dimension, unless Options.NoRows.
//
// A query that matches few vectors is an exact float32 scan. Otherwise a
// sparse query on sparse data runs the int8 scan and rescores its best
// candidates exactly; any other query scans the 1-bit codes: each code gives
// an estimate of the similarity with an error bound, and a vector is a
// candidate unless its upper bound is below the k-th best lower bound seen.
// With int8 rows, the candidates are ranked by their row estimates (error
// about 5e-4) and only those within a few row errors of the k-th best are
// rescored with their float32 vectors; without rows, candidates are
// rescored in decreasing order of upper bound until the next bound cannot
// beat the k-th exact score.
// Results therefore always carry exact scores; which vectors are considered
// is approximate (Recall measures it against the exact scan). Nothing is
// built in the background: a vector is searchable through the fast path as
// soon as Add returns, and an index loaded from persisted codes (Load) is at
// full speed for its first query.
//
// Metadata filters (document types, one source, and an optional predicate)
// are applied before a vector is scored.
//
// The index keeps references to the vectors it is given, not copies: the
// caller must never modify a vector after adding it.
package vecindex

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/viterin/vek/vek32"
)

// ErrDimension is returned for a vector whose length differs from the index's.
var ErrDimension = errors.New("vecindex: dimension mismatch")

// Sparse-data modes for Options.Sparse.
const (
	SparseAuto   = 0  // decided from the first vectors added (default)
	SparseAlways = 1  // always keep the int8 dimension-major codes
	SparseNever  = -1 // never keep them
)

// Options configure an Index. A nil *Options means all defaults.
type Options struct {
	// ExactBelow is the number of vectors matching a query's filter under
	// which the query is an exact float32 scan. Default 4096.
	ExactBelow int
	// Confidence multiplies each 1-bit estimate's error bound: a larger
	// value rescores more candidates and misses fewer true neighbours.
	// Default 2 (docs/benchmarks.md: recall@10 0.99 on the randproj
	// embedder's vectors, whose similarities are flat, and 0.99 on USE-lite
	// vectors).
	Confidence float64
	// Rescore bounds the candidates of a 1-bit scan (those with the
	// highest upper bounds) that go on to the int8 rows, or without rows to
	// their float32 vectors: at most k + Rescore for a top-k query, even
	// when more are within their error bounds of the k-th best. Default
	// 1500; negative: no bound.
	Rescore int
	// Seed selects the rotation of the 1-bit codes. Default 1. Codes loaded
	// with Load keep the seed they were written with.
	Seed uint64
	// Sparse says whether int8 dimension-major codes are kept for sparse
	// queries: SparseAuto (the default) keeps them when at least a tenth of
	// the components of the first vectors added are zero.
	Sparse int
	// NoRows drops the int8 rows kept for dense data (one byte per
	// dimension and vector: 768 MB for a million 768-dimension vectors),
	// which rank the 1-bit scan's candidates almost exactly so that only a
	// few are rescored with their float32 vectors (a float32 vector not yet
	// in memory costs a page fault when it is mapped from a file). Default
	// false: rows are kept.
	NoRows bool
}

func (o *Options) withDefaults() Options {
	var r Options
	if o != nil {
		r = *o
	}
	if r.ExactBelow <= 0 {
		r.ExactBelow = 4096
	}
	if r.Confidence <= 0 || math.IsNaN(r.Confidence) {
		r.Confidence = 2
	}
	if r.Seed == 0 {
		r.Seed = 1
	}
	if r.Rescore == 0 {
		r.Rescore = 1500
	}
	return r
}

// Item is one vector to add.
type Item struct {
	ID      string
	Vector  []float32 // not copied; must not be modified afterwards
	DocType string
	Source  string
}

// Filter restricts a search. The zero Filter matches everything.
type Filter struct {
	DocTypes []string          // any of these; empty = any
	Source   string            // only this source; "" = any
	Accept   func(string) bool // called with the id of a vector that passed the above; nil = accept
}

// Result is one search hit.
type Result struct {
	ID    string
	Score float32 // cosine similarity
}

// Stats describes an index.
type Stats struct {
	Live    int  // vectors that can be returned
	Slots   int  // live + deleted vectors still held
	Centred bool // the 1-bit codes are centred on the data's mean
	Int8    bool // int8 dimension-major codes are kept (sparse data)
	Rows    bool // int8 rows are kept (dense data, unless Options.NoRows)
	// Rescored counts the float32 vectors that searches through the 1-bit
	// codes have read since the index was made.
	Rescored  int64
	CodeBytes int64 // memory held by codes and factors
}

// centreMin is the number of vectors from which the 1-bit codes are centred
// on their mean (all codes are then re-encoded once).
const centreMin = 1000

// Index is an in-memory vector index. See the package comment. An *Index
// is safe for concurrent use: searches run in parallel; Add, Delete and
// Load exclude them briefly.
type Index struct {
	opt Options

	mu      sync.RWMutex
	dim     int
	vecs    [][]float32 // slot -> normalised vector (nil once deleted)
	ids     []string    // slot -> id
	idKeys  []uint64    // slot -> idKey(id), to order tied scores (worse)
	docType []uint8     // slot -> index into types
	source  []int32     // slot -> index into srcIDs
	slotOf  map[string]int32
	types   []string
	typeIdx map[string]uint8
	sources map[string]int32 // source -> index
	srcIDs  []string         // index -> source
	bySrc   map[int32][]int32
	nType   []int // live vectors per type
	deleted int

	coder   *binCoder // nil while the dimension is unknown
	centred bool      // coder's centre is the data's mean
	codes   []uint64  // slot*words ... : 1-bit codes
	fac     scanFactors
	sparse  int        // 1: int8 codes kept; -1: not; 0: undecided
	quant   quantStore // int8 dimension-major codes (sparse == 1)
	rows    rowStore   // int8 rows (dense data, sparse == -1 and !NoRows)

	scratch  sync.Pool    // *[]float32 of len pd
	rescored atomic.Int64 // float32 vectors read by 1-bit searches since New
}

// New returns an empty index.
func New(opts *Options) *Index {
	x := &Index{
		opt:     opts.withDefaults(),
		slotOf:  map[string]int32{},
		typeIdx: map[string]uint8{},
		sources: map[string]int32{},
		bySrc:   map[int32][]int32{},
	}
	x.sparse = map[int]int{SparseAlways: 1, SparseNever: -1}[x.opt.Sparse]
	return x
}

// Close releases nothing and exists for symmetry with other stores; the
// index stays usable.
func (x *Index) Close() {}

// Len returns the number of live vectors.
func (x *Index) Len() int {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return len(x.slotOf)
}

// Dim returns the dimension (0 while empty).
func (x *Index) Dim() int {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return x.dim
}

// Stats describes the index.
func (x *Index) Stats() Stats {
	x.mu.RLock()
	defer x.mu.RUnlock()
	s := Stats{Live: len(x.slotOf), Slots: len(x.vecs), Centred: x.centred, Int8: x.sparse == 1, Rows: x.rows.on, Rescored: x.rescored.Load()}
	s.CodeBytes = int64(len(x.codes))*8 + int64(len(x.fac.a))*12 + int64(len(x.quant.blocks))*int64(x.dim)*blockSize + int64(len(x.quant.scale))*4 +
		int64(len(x.rows.codes)) + int64(len(x.rows.scale))*4
	return s
}

// normalised returns v scaled to unit length: v itself when it already is
// (within 1e-4 of 1 in squared norm), else a new slice.
func normalised(v []float32) []float32 {
	var n float64
	for _, f := range v {
		n += float64(f) * float64(f)
	}
	if n == 0 || math.Abs(n-1) < 1e-4 {
		return v
	}
	inv := float32(1 / math.Sqrt(n))
	out := make([]float32, len(v))
	for i, f := range v {
		out[i] = f * inv
	}
	return out
}

func (x *Index) typeOf(t string) uint8 {
	if i, ok := x.typeIdx[t]; ok {
		return i
	}
	if len(x.types) == 255 {
		return 255 // more than 255 distinct types share the last (filters then check ids)
	}
	i := uint8(len(x.types))
	x.types = append(x.types, t)
	x.nType = append(x.nType, 0)
	x.typeIdx[t] = i
	return i
}

func (x *Index) sourceOf(s string) int32 {
	if i, ok := x.sources[s]; ok {
		return i
	}
	i := int32(len(x.srcIDs))
	x.srcIDs = append(x.srcIDs, s)
	x.sources[s] = i
	return i
}

func (x *Index) getScratch(pd int) *[]float32 {
	if p, ok := x.scratch.Get().(*[]float32); ok && len(*p) == pd {
		return p
	}
	s := make([]float32, pd)
	return &s
}

// checkDims validates items against dim (0: unknown) and returns the
// dimension they fix.
func checkDims(items []Item, dim int) (int, error) {
	for i := range items {
		if len(items[i].Vector) == 0 {
			return 0, fmt.Errorf("%w: %q has no vector", ErrDimension, items[i].ID)
		}
		if dim == 0 {
			dim = len(items[i].Vector)
		}
		if len(items[i].Vector) != dim {
			return 0, fmt.Errorf("%w: %q has %d dimensions, the index %d", ErrDimension, items[i].ID, len(items[i].Vector), dim)
		}
	}
	return dim, nil
}

// encoded is the 1-bit form (and int8 rows) of a batch of vectors, made
// outside the lock.
type encoded struct {
	coder *binCoder
	vecs  [][]float32 // normalised
	codes []uint64
	fac   []binFactor
	rows  []int8 // len(vecs)*dim when rows are kept
	scale []float32
}

// encodeAll normalises vecs and encodes them with c, over the cores for
// large batches.
func (x *Index) encodeAll(c *binCoder, vecs [][]float32, rows bool) encoded {
	e := encoded{coder: c, vecs: make([][]float32, len(vecs)), codes: make([]uint64, len(vecs)*c.words), fac: make([]binFactor, len(vecs))}
	if rows {
		e.rows, e.scale = make([]int8, len(vecs)*c.dim), make([]float32, len(vecs))
	}
	run := func(lo, hi int) {
		sp := x.getScratch(c.pd)
		defer x.scratch.Put(sp)
		for i := lo; i < hi; i++ {
			v := normalised(vecs[i])
			e.vecs[i] = v
			e.fac[i] = c.encode(e.codes[i*c.words:(i+1)*c.words], v, *sp)
			if rows {
				e.scale[i] = quantRow(e.rows[i*c.dim:(i+1)*c.dim], v)
			}
		}
	}
	parallel(len(vecs), 512, run)
	return e
}

// parallel runs fn over [0, n) split into GOMAXPROCS ranges of at least
// min items each, and waits.
func parallel(n, minPer int, fn func(lo, hi int)) {
	workers := min(runtime.GOMAXPROCS(0), n/max(1, minPer))
	if workers <= 1 {
		fn(0, n)
		return
	}
	var wg sync.WaitGroup
	step := (n + workers - 1) / workers
	for lo := 0; lo < n; lo += step {
		wg.Add(1)
		go func(lo, hi int) {
			defer wg.Done()
			fn(lo, hi)
		}(lo, min(n, lo+step))
	}
	wg.Wait()
}

// Add adds or replaces vectors. Every vector must have the index's
// dimension (set by the first vector ever added). The codes are computed
// before the index is locked, so searches wait only while the new slots
// are installed.
func (x *Index) Add(items []Item) error {
	if len(items) == 0 {
		return nil
	}
	x.mu.RLock()
	dim, coder, rows := x.dim, x.coder, x.rows.on
	x.mu.RUnlock()
	if _, err := checkDims(items, dim); err != nil {
		return err
	}
	var pre encoded
	if coder != nil && x.centredFor(coder, len(items)) {
		pre = x.encodeAll(coder, vectorsOf(items), rows)
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.addLocked(items, pre)
}

// centredFor reports whether codes made with c now stay valid after adding
// n vectors (no re-centring pending).
func (x *Index) centredFor(c *binCoder, n int) bool {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return x.coder == c && (x.centred || len(x.slotOf)+n < centreMin)
}

func vectorsOf(items []Item) [][]float32 {
	v := make([][]float32, len(items))
	for i := range items {
		v[i] = items[i].Vector
	}
	return v
}

func (x *Index) addLocked(items []Item, pre encoded) error {
	dim, err := checkDims(items, x.dim)
	if err != nil {
		return err
	}
	if x.dim == 0 {
		x.dim = dim
		x.coder = newBinCoder(dim, x.opt.Seed, nil)
		if x.sparse == 0 {
			x.sparse = decideSparse(items)
		}
		if x.sparse == 1 {
			x.quant.reset(dim)
		}
		x.rows = rowStore{on: x.sparse == -1 && !x.opt.NoRows, dim: dim}
	}
	if !x.centred && len(x.slotOf)+len(items) >= centreMin {
		x.recentre(items)
	}
	if pre.coder != x.coder || (pre.rows != nil) != x.rows.on {
		pre = x.encodeAll(x.coder, vectorsOf(items), x.rows.on)
	}
	first := len(x.vecs)
	for i := range items {
		x.install(&items[i], pre.vecs[i], pre.codes[i*x.coder.words:(i+1)*x.coder.words], pre.fac[i])
		if x.rows.on {
			x.rows.set(len(x.vecs)-1, pre.scale[i], pre.rows[i*x.dim:(i+1)*x.dim])
		}
	}
	if x.sparse == 1 {
		x.quantise(first, len(x.vecs))
	}
	x.maintain()
	return nil
}

// decideSparse looks at the first vectors: data is sparse when at least a
// tenth of their components are zero.
func decideSparse(items []Item) int {
	zeros, total := 0, 0
	for i := range items[:min(len(items), 64)] {
		for _, f := range items[i].Vector {
			if f == 0 {
				zeros++
			}
		}
		total += len(items[i].Vector)
	}
	if zeros*10 >= total {
		return 1
	}
	return -1
}

// recentre sets the codes' centre to the mean of the live vectors and the
// items about to be added, and re-encodes the live vectors (mu held).
func (x *Index) recentre(items []Item) {
	centre := make([]float64, x.dim)
	n := 0
	add := func(v []float32) {
		var s float64
		for _, f := range v {
			s += float64(f) * float64(f)
		}
		inv := 1.0
		if s > 0 {
			inv = 1 / math.Sqrt(s)
		}
		for i, f := range v {
			centre[i] += float64(f) * inv
		}
		n++
	}
	for _, v := range x.vecs {
		if v != nil {
			add(v)
		}
	}
	for i := range items {
		add(items[i].Vector)
	}
	c := make([]float32, x.dim)
	for i := range c {
		c[i] = float32(centre[i] / float64(max(1, n)))
	}
	x.coder = newBinCoder(x.dim, x.coder.rot.seed, c)
	x.centred = true
	live := make([]int, 0, len(x.slotOf))
	for slot, v := range x.vecs {
		if v != nil {
			live = append(live, slot)
		}
	}
	parallel(len(live), 512, func(lo, hi int) {
		sp := x.getScratch(x.coder.pd)
		defer x.scratch.Put(sp)
		w := x.coder.words
		code := make([]uint64, w)
		for _, slot := range live[lo:hi] {
			// Slots of one block may be written by two goroutines, but
			// never the same word.
			x.fac.set(slot, x.coder.encode(code, x.vecs[slot], *sp))
			setBlockCode(x.codes, w, slot, code)
		}
	})
}

// install appends one slot (mu held), replacing any vector with the same id.
func (x *Index) install(it *Item, v []float32, code []uint64, f binFactor) {
	if old, ok := x.slotOf[it.ID]; ok {
		x.deleteSlot(old)
	}
	slot := int32(len(x.vecs))
	t := x.typeOf(it.DocType)
	s := x.sourceOf(it.Source)
	x.vecs = append(x.vecs, v)
	x.ids = append(x.ids, it.ID)
	x.idKeys = append(x.idKeys, idKey(it.ID))
	x.docType = append(x.docType, t)
	x.source = append(x.source, s)
	x.growCodes(len(x.vecs))
	setBlockCode(x.codes, x.coder.words, int(slot), code)
	x.fac.grow(len(x.vecs))
	x.fac.set(int(slot), f)
	x.slotOf[it.ID] = slot
	x.nType[t]++
	x.bySrc[s] = append(x.bySrc[s], slot)
}

// idKey is the first eight bytes of id as a big-endian integer (zero bytes
// after a shorter id): where two ids' keys differ, they order the ids as
// the ids themselves do, so that ties are settled by one integer compare
// and, rarely, a string compare.
func idKey(id string) uint64 {
	var k uint64
	for i := 0; i < 8; i++ {
		k <<= 8
		if i < len(id) {
			k |= uint64(id[i])
		}
	}
	return k
}

// idLess reports whether slot a's id sorts before slot b's (mu held).
func (x *Index) idLess(a, b int32) bool {
	if ka, kb := x.idKeys[a], x.idKeys[b]; ka != kb {
		return ka < kb
	}
	return x.ids[a] < x.ids[b]
}

// growCodes makes room for the codes of slots [0, n), in whole blocks.
func (x *Index) growCodes(n int) {
	need := (n + codeBlock - 1) / codeBlock * codeBlock * x.coder.words
	if need > len(x.codes) {
		x.codes = slices.Grow(x.codes, need-len(x.codes))
		old := len(x.codes)
		x.codes = x.codes[:need]
		clear(x.codes[old:])
	}
}

// parallelQuant is the number of new vectors from which quantise splits the
// work over the cores (opening a store adds every vector in one call).
const parallelQuant = 2 * blockSize

// quantise stores the int8 codes of slots [lo, hi). The slots are disjoint
// memory, so large ranges are split at block boundaries over GOMAXPROCS
// goroutines.
func (x *Index) quantise(lo, hi int) {
	if hi <= lo {
		return
	}
	x.quant.grow(hi)
	run := func(a, b int) {
		for slot := a; slot < b; slot++ {
			if x.vecs[slot] != nil {
				x.quant.set(slot, x.vecs[slot])
			}
		}
	}
	workers := min(runtime.GOMAXPROCS(0), (hi-lo)/blockSize)
	if hi-lo < parallelQuant || workers <= 1 {
		run(lo, hi)
		return
	}
	per := ((hi-lo)/workers/blockSize + 1) * blockSize
	var wg sync.WaitGroup
	for a := lo; a < hi; {
		b := min(hi, a/blockSize*blockSize+per) // a block boundary: no block is shared
		wg.Add(1)
		go func(a, b int) {
			defer wg.Done()
			run(a, b)
		}(a, b)
		a = b
	}
	wg.Wait()
}

// Delete removes vectors by id; unknown ids are ignored.
func (x *Index) Delete(ids ...string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	for _, id := range ids {
		if slot, ok := x.slotOf[id]; ok {
			x.deleteSlot(slot)
		}
	}
	x.maintain()
}

func (x *Index) deleteSlot(slot int32) {
	delete(x.slotOf, x.ids[slot])
	x.nType[x.docType[slot]]--
	s := x.source[slot]
	if list := x.bySrc[s]; len(list) > 0 {
		for i, v := range list {
			if v == slot {
				list[i] = list[len(list)-1]
				list = list[:len(list)-1]
				break
			}
		}
		if len(list) == 0 {
			delete(x.bySrc, s)
		} else {
			x.bySrc[s] = list
		}
	}
	x.vecs[slot] = nil
	// An upper bound of -Inf: the 1-bit scan never marks the slot.
	x.fac.set(int(slot), binFactor{err: float32(math.Inf(-1))})
	if x.sparse == 1 {
		x.quant.clear(int(slot))
	}
	x.deleted++
}

// maintain compacts when deleted slots dominate (mu held).
func (x *Index) maintain() {
	if x.deleted > 1024 && x.deleted*4 > len(x.vecs) {
		x.compact()
	}
}

// compact drops deleted slots.
func (x *Index) compact() {
	n := len(x.slotOf)
	w := x.coder.words
	vecs := make([][]float32, 0, n)
	ids := make([]string, 0, n)
	keys := make([]uint64, 0, n)
	dt := make([]uint8, 0, n)
	src := make([]int32, 0, n)
	codes := make([]uint64, (n+codeBlock-1)/codeBlock*codeBlock*w)
	var fac scanFactors
	fac.grow(n)
	code := make([]uint64, w)
	used := map[int32]int32{}
	var srcIDs []string
	for slot, v := range x.vecs {
		if v == nil {
			continue
		}
		ns := int32(len(vecs))
		vecs = append(vecs, v)
		ids = append(ids, x.ids[slot])
		keys = append(keys, x.idKeys[slot])
		dt = append(dt, x.docType[slot])
		blockCode(code, x.codes, w, slot)
		setBlockCode(codes, w, int(ns), code)
		fac.set(int(ns), x.fac.get(slot))
		old := x.source[slot]
		ni, ok := used[old]
		if !ok {
			ni = int32(len(srcIDs))
			used[old] = ni
			srcIDs = append(srcIDs, x.srcIDs[old])
		}
		src = append(src, ni)
		x.slotOf[x.ids[slot]] = ns
	}
	x.sources = make(map[string]int32, len(srcIDs))
	for i, s := range srcIDs {
		x.sources[s] = int32(i)
	}
	x.bySrc = make(map[int32][]int32, len(srcIDs))
	for slot, s := range src {
		x.bySrc[s] = append(x.bySrc[s], int32(slot))
	}
	if x.rows.on {
		rows := rowStore{on: true, dim: x.dim}
		for slot, v := range x.vecs {
			if v != nil {
				ns := int(x.slotOf[x.ids[slot]])
				rows.set(ns, x.rows.scale[slot], x.rows.row(slot))
			}
		}
		x.rows = rows
	}
	x.vecs, x.ids, x.idKeys, x.docType, x.source, x.srcIDs = vecs, ids, keys, dt, src, srcIDs
	x.codes, x.fac = codes, fac
	if x.sparse == 1 {
		x.quant.reset(x.dim)
		x.quantise(0, len(x.vecs))
	}
	x.deleted = 0
}

// ReplaceVectors swaps the vector held for each live id for fn(id), which
// must hold the same values (the local backend moves vectors from memory to
// a newly mapped snapshot this way). A nil result keeps the current vector.
// Searches wait meanwhile.
func (x *Index) ReplaceVectors(fn func(id string) []float32) {
	x.mu.Lock()
	defer x.mu.Unlock()
	for slot, v := range x.vecs {
		if v == nil {
			continue
		}
		if nv := fn(x.ids[slot]); nv != nil && len(nv) == len(v) {
			x.vecs[slot] = nv
		}
	}
}

// compiled is a Filter resolved against the index (with mu held).
type compiled struct {
	all    bool
	types  [256]bool
	src    int32 // -1 = any
	accept func(string) bool
	none   bool // matches nothing
}

func (x *Index) compile(f *Filter) compiled {
	c := compiled{src: -1, all: true}
	if f == nil {
		for i := range c.types {
			c.types[i] = true
		}
		return c
	}
	if len(f.DocTypes) > 0 {
		c.all = false
		any := false
		for _, t := range f.DocTypes {
			if i, ok := x.typeIdx[t]; ok {
				c.types[i] = true
				any = true
			}
		}
		if !any {
			c.none = true
		}
	} else {
		for i := range c.types {
			c.types[i] = true
		}
	}
	if f.Source != "" {
		c.all = false
		if s, ok := x.sources[f.Source]; ok {
			c.src = s
		} else {
			c.none = true
		}
	}
	if f.Accept != nil {
		c.all = false
		c.accept = f.Accept
	}
	return c
}

// match reports whether a live slot passes the filter.
func (x *Index) match(c *compiled, slot int32) bool {
	if c.all {
		return true
	}
	if !c.types[x.docType[slot]] || (c.src >= 0 && x.source[slot] != c.src) {
		return false
	}
	if x.docType[slot] == 255 && c.accept == nil && len(x.types) == 255 {
		// Overflowed type table: the byte does not identify the type.
		return true
	}
	return c.accept == nil || c.accept(x.ids[slot])
}

// matching estimates how many live vectors pass c's type and source parts.
func (x *Index) matching(c *compiled) int {
	if c.src >= 0 {
		return len(x.bySrc[c.src])
	}
	n := 0
	for i, cnt := range x.nType {
		if c.types[i] {
			n += cnt
		}
	}
	return n
}

// Search returns the k vectors most similar to q that pass f, best first
// (ties by id), with exact scores. Which vectors are considered is
// approximate (see Recall and the package comment).
func (x *Index) Search(q []float32, k int, f *Filter) ([]Result, error) {
	return x.search(q, k, f, false)
}

// SearchExact is Search by an exhaustive float32 scan, whatever the index size.
func (x *Index) SearchExact(q []float32, k int, f *Filter) ([]Result, error) {
	return x.search(q, k, f, true)
}

func (x *Index) search(q []float32, k int, f *Filter, exact bool) ([]Result, error) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	if k <= 0 || len(x.slotOf) == 0 {
		return nil, nil
	}
	if len(q) != x.dim {
		return nil, fmt.Errorf("%w: query has %d dimensions, the index %d", ErrDimension, len(q), x.dim)
	}
	q = normalised(q)
	c := x.compile(f)
	if c.none {
		return nil, nil
	}
	var top topK
	top.init(k, x)
	switch {
	case c.src >= 0:
		// One source: score its few vectors.
		for _, slot := range x.bySrc[c.src] {
			if x.match(&c, slot) {
				top.push(vek32.Dot(q, x.vecs[slot]), slot)
			}
		}
	case exact || x.matching(&c) <= x.opt.ExactBelow:
		x.scan(q, &c, 0, len(x.vecs), &top)
	case x.sparse == 1 && isSparse(q):
		x.quantSearch(q, sparsify(q), &c, &top)
	default:
		x.binSearch(q, &c, &top)
	}
	return x.results(&top), nil
}

// isSparse reports whether at most half of q's components are non-zero.
func isSparse(q []float32) bool {
	nz := 0
	for _, f := range q {
		if f != 0 {
			nz++
		}
	}
	return nz <= len(q)/2
}

// quantSearch is the int8 scan with exact rescoring.
func (x *Index) quantSearch(q []float32, sq sparseQuery, c *compiled, top *topK) {
	var cand topK
	cand.init(candidates(top.k), x)
	x.scanQuant(sq, c, 0, len(x.vecs), &cand)
	x.rescore(q, &cand, top)
}

// results are top's best first, equal scores by id.
func (x *Index) results(top *topK) []Result {
	items := top.sorted()
	out := make([]Result, len(items))
	for i, it := range items {
		out[i] = Result{ID: x.ids[it.slot], Score: it.score}
	}
	return out
}

// scan scores slots [lo, hi) exactly, in parallel for large ranges.
func (x *Index) scan(q []float32, c *compiled, lo, hi int, top *topK) {
	const perWorker = 32768
	workers := min(runtime.GOMAXPROCS(0), (hi-lo)/perWorker)
	if workers <= 1 {
		x.scanRange(q, c, lo, hi, top)
		return
	}
	tops := make([]topK, workers)
	var wg sync.WaitGroup
	step := (hi - lo + workers - 1) / workers
	for w := 0; w < workers; w++ {
		tops[w].init(top.k, x)
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			x.scanRange(q, c, lo+w*step, min(hi, lo+(w+1)*step), &tops[w])
		}(w)
	}
	wg.Wait()
	for w := range tops {
		for _, it := range tops[w].items {
			top.push(it.score, it.slot)
		}
	}
}

func (x *Index) scanRange(q []float32, c *compiled, lo, hi int, top *topK) {
	for slot := lo; slot < hi; slot++ {
		v := x.vecs[slot]
		if v == nil || !x.match(c, int32(slot)) {
			continue
		}
		top.push(vek32.Dot(q, v), int32(slot))
	}
}

// Recall returns the mean recall@k of Search against SearchExact over the
// given queries: the fraction of the exact top k that Search also returns.
func (x *Index) Recall(queries [][]float32, k int, f *Filter) (float64, error) {
	if len(queries) == 0 {
		return 1, nil
	}
	var sum float64
	for _, q := range queries {
		got, err := x.Search(q, k, f)
		if err != nil {
			return 0, err
		}
		want, err := x.SearchExact(q, k, f)
		if err != nil {
			return 0, err
		}
		if len(want) == 0 {
			sum++
			continue
		}
		seen := make(map[string]bool, len(got))
		for _, r := range got {
			seen[r.ID] = true
		}
		hit := 0
		for _, r := range want {
			if seen[r.ID] {
				hit++
			}
		}
		sum += float64(hit) / float64(len(want))
	}
	return sum / float64(len(queries)), nil
}

// Entry returns the vector held for id and its metadata.
func (x *Index) Entry(id string) (Item, bool) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	slot, ok := x.slotOf[id]
	if !ok {
		return Item{}, false
	}
	t := ""
	if int(x.docType[slot]) < len(x.types) {
		t = x.types[x.docType[slot]]
	}
	return Item{ID: id, Vector: x.vecs[slot], DocType: t, Source: x.srcIDs[x.source[slot]]}, true
}

// IDs returns the ids of the live vectors, in no particular order.
func (x *Index) IDs() []string {
	x.mu.RLock()
	defer x.mu.RUnlock()
	out := make([]string, 0, len(x.slotOf))
	for id := range x.slotOf {
		out = append(out, id)
	}
	return out
}

// VerifyCodes encodes every live vector again and returns the ids whose
// codes differ from those the index holds (beyond the few bits float
// rounding on another CPU may flip): none for a sound index. It reads every
// vector, over the cores.
func (x *Index) VerifyCodes() []string {
	x.mu.RLock()
	defer x.mu.RUnlock()
	if x.coder == nil {
		return nil
	}
	var mu sync.Mutex
	var bad []string
	parallel(len(x.vecs), 1024, func(lo, hi int) {
		w := x.coder.words
		code, held := make([]uint64, w), make([]uint64, w)
		scratch := make([]float32, x.coder.pd)
		for slot := lo; slot < hi; slot++ {
			v := x.vecs[slot]
			if v == nil {
				continue
			}
			f := x.coder.encode(code, v, scratch)
			blockCode(held, x.codes, w, slot)
			diff := 0
			for i := range code {
				diff += bits.OnesCount64(code[i] ^ held[i])
			}
			g := x.fac.get(slot)
			ok := diff <= x.coder.pd/32 && math.Abs(float64(f.a-g.a)) <= 1e-3*math.Abs(float64(f.a))+1e-6
			if ok && x.rows.on {
				scale, inv := quantScale(v)
				ok = math.Abs(float64(scale-x.rows.scale[slot])) <= 1e-6*float64(scale)+1e-12
				for d, c := range x.rows.row(slot) {
					diff := int(quantCode(v[d], inv)) - int(c)
					ok = ok && diff >= -1 && diff <= 1
				}
			}
			if ok && x.sparse == 1 {
				scale, inv := quantScale(v)
				ok = math.Abs(float64(scale-x.quant.scale[slot])) <= 1e-6*float64(scale)+1e-12
				b, off := x.quant.blocks[slot/blockSize], slot%blockSize
				for d := 0; ok && d < x.dim; d++ {
					c := int(quantCode(v[d], inv)) - int(b[d*blockSize+off])
					ok = c >= -1 && c <= 1
				}
			}
			if !ok {
				mu.Lock()
				bad = append(bad, x.ids[slot])
				mu.Unlock()
			}
		}
	})
	return bad
}

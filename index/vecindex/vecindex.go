// Package vecindex is ragmem's in-memory vector index: it answers the
// nearest-neighbour queries of the local backend over the vectors that
// chromem-go holds.
//
// Vectors are scored by cosine similarity (dot products of L2-normalised
// vectors, computed with AVX2/FMA where the CPU has it, through
// github.com/viterin/vek). Metadata filters (document types, one source, and
// an optional predicate) are applied before a vector is scored.
//
// Below Options.GraphThreshold vectors every query is an exact scan. From
// there on a background goroutine builds an HNSW graph (Malkov and Yashunin,
// with the neighbour-selection heuristic) over the vectors in insertion
// order; a query then searches the graph for the part it covers and scans
// the rest exactly, so new vectors are searchable at once and indexing never
// waits for the graph. Graph results carry exact scores (the graph holds the
// full float32 vectors), so the approximation is only in which vectors are
// visited: Recall measures it against the exact scan.
//
// Deleted vectors stay in the graph as tombstones (still traversed, never
// returned) until they are a quarter of it; the graph is then rebuilt.
//
// The index keeps references to the vectors it is given, not copies: the
// caller must never modify a vector after adding it. An *Index is safe for
// concurrent use: searches run in parallel; Add and Delete exclude them
// briefly.
package vecindex

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/viterin/vek/vek32"
)

// ErrDimension is returned for a vector whose length differs from the index's.
var ErrDimension = errors.New("vecindex: dimension mismatch")

// Options configure an Index. A nil *Options means all defaults.
type Options struct {
	// GraphThreshold is the number of vectors from which an HNSW graph is
	// built; below it every query is an exact scan. Default 20000; a
	// negative value never builds one.
	GraphThreshold int
	// M is the number of neighbours per node on the upper layers (twice as
	// many on the bottom layer). Default 16.
	M int
	// EfConstruction is the candidate list size while inserting. Default 100.
	EfConstruction int
	// EfSearch is the minimum candidate list size of a graph query (a query
	// for k results uses max(EfSearch, 2k)). Default 128.
	EfSearch int
	// Seed seeds the level generator. Default 1.
	Seed int64
	// EagerGraph builds the graph as soon as GraphThreshold is reached.
	// Default false: the graph is built after the first dense query (more
	// than half of its dimensions non-zero), since sparse queries, such as
	// those of the lexical embedder, are answered by the quantised scan
	// whatever the index size and never use it.
	EagerGraph bool
}

func (o *Options) withDefaults() Options {
	var r Options
	if o != nil {
		r = *o
	}
	if r.GraphThreshold == 0 {
		r.GraphThreshold = 20000
	}
	if r.M <= 0 {
		r.M = 16
	}
	if r.EfConstruction <= 0 {
		r.EfConstruction = 100
	}
	if r.EfSearch <= 0 {
		r.EfSearch = 128
	}
	if r.Seed == 0 {
		r.Seed = 1
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
	Live       int // vectors that can be returned
	Slots      int // live + deleted vectors still held
	GraphNodes int // slots covered by the HNSW graph (0 without a graph)
	Building   bool
}

// Index is an in-memory vector index. See the package comment.
type Index struct {
	opt Options

	mu      sync.RWMutex
	dim     int
	vecs    [][]float32 // slot -> normalised vector (nil once deleted)
	ids     []string    // slot -> id
	docType []uint8     // slot -> index into types
	source  []int32     // slot -> index into sources
	slotOf  map[string]int32
	types   []string
	typeIdx map[string]uint8
	sources map[string]int32 // source -> index
	srcIDs  []string         // index -> source (for reuse)
	bySrc   map[int32]map[int32]struct{}
	nType   []int // live vectors per type
	deleted int
	g       *graph // nil below the threshold
	quant   quantStore
	dense   atomic.Bool // a dense query was seen: the graph is worth building
	// graveyard keeps the vectors of deleted slots, which graph walks still
	// pass through, until the next compaction.
	graveyard map[int32][]float32

	// The background builder.
	wake    chan struct{}
	stop    chan struct{}
	done    chan struct{}
	closed  bool
	running bool

	visited sync.Pool
}

// New returns an empty index.
func New(opts *Options) *Index {
	x := &Index{
		opt:     opts.withDefaults(),
		slotOf:  map[string]int32{},
		typeIdx: map[string]uint8{},
		sources: map[string]int32{},
		bySrc:   map[int32]map[int32]struct{}{},
		wake:    make(chan struct{}, 1),
		stop:    make(chan struct{}),
		done:    make(chan struct{}),
	}
	go x.builder()
	return x
}

// Close stops the background builder and waits for it. The index remains
// usable for searches; it no longer builds a graph.
func (x *Index) Close() {
	x.mu.Lock()
	if x.closed {
		x.mu.Unlock()
		return
	}
	x.closed = true
	x.mu.Unlock()
	close(x.stop)
	<-x.done
}

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
	s := Stats{Live: len(x.slotOf), Slots: len(x.vecs), Building: x.running}
	if x.g != nil {
		s.GraphNodes = x.g.n
	}
	return s
}

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

// Add adds or replaces vectors. Every vector must have the index's
// dimension (set by the first vector ever added).
func (x *Index) Add(items []Item) error {
	x.mu.Lock()
	defer x.mu.Unlock()
	dim := x.dim
	for i := range items {
		if len(items[i].Vector) == 0 {
			return fmt.Errorf("%w: %q has no vector", ErrDimension, items[i].ID)
		}
		if dim == 0 {
			dim = len(items[i].Vector)
		}
		if len(items[i].Vector) != dim {
			return fmt.Errorf("%w: %q has %d dimensions, the index %d", ErrDimension, items[i].ID, len(items[i].Vector), dim)
		}
	}
	if x.dim == 0 {
		x.quant.reset(dim)
	}
	x.dim = dim
	first := len(x.vecs)
	for i := range items {
		it := &items[i]
		if old, ok := x.slotOf[it.ID]; ok {
			x.deleteSlot(old)
		}
		slot := int32(len(x.vecs))
		t := x.typeOf(it.DocType)
		s := x.sourceOf(it.Source)
		x.vecs = append(x.vecs, it.Vector) // normalised and quantised below
		x.ids = append(x.ids, it.ID)
		x.docType = append(x.docType, t)
		x.source = append(x.source, s)
		x.slotOf[it.ID] = slot
		x.nType[t]++
		m := x.bySrc[s]
		if m == nil {
			m = map[int32]struct{}{}
			x.bySrc[s] = m
		}
		m[slot] = struct{}{}
	}
	x.encode(first, len(x.vecs))
	x.maintain()
	return nil
}

// parallelEncode is the number of new vectors from which encode splits the
// work over the cores (opening a store adds every vector in one call).
const parallelEncode = 2 * blockSize

// encode normalises the vectors of slots [lo, hi) in place in x.vecs and
// stores their quantised codes. The slots are disjoint memory, so large
// ranges are split at block boundaries over GOMAXPROCS goroutines.
func (x *Index) encode(lo, hi int) {
	if hi <= lo {
		return
	}
	x.quant.grow(hi)
	run := func(a, b int) {
		for slot := a; slot < b; slot++ {
			if x.vecs[slot] == nil {
				continue // added and replaced within the same call
			}
			x.vecs[slot] = normalised(x.vecs[slot])
			x.quant.set(slot, x.vecs[slot])
		}
	}
	workers := min(runtime.GOMAXPROCS(0), (hi-lo)/blockSize)
	if hi-lo < parallelEncode || workers <= 1 {
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
	if m := x.bySrc[s]; m != nil {
		delete(m, slot)
		if len(m) == 0 {
			delete(x.bySrc, s)
		}
	}
	if x.graveyard == nil {
		x.graveyard = map[int32][]float32{}
	}
	x.graveyard[slot] = x.vecs[slot]
	x.vecs[slot] = nil
	x.quant.clear(int(slot))
	x.deleted++
}

// maintain compacts when tombstones dominate and wakes the builder when the
// graph lags. It runs with mu held.
func (x *Index) maintain() {
	if x.deleted > 1024 && x.deleted*4 > len(x.vecs) {
		x.compact()
	}
	if x.graphWanted() && (x.g == nil || x.g.n < len(x.vecs)) {
		x.wakeBuilder()
	}
}

// graphWanted reports whether the graph should exist (mu held).
func (x *Index) graphWanted() bool {
	return x.opt.GraphThreshold >= 0 && len(x.slotOf) >= x.opt.GraphThreshold && (x.opt.EagerGraph || x.dense.Load())
}

func (x *Index) wakeBuilder() {
	select {
	case x.wake <- struct{}{}:
	default:
	}
}

// compact drops deleted slots and the graph (which the builder rebuilds).
func (x *Index) compact() {
	n := len(x.slotOf)
	vecs := make([][]float32, 0, n)
	ids := make([]string, 0, n)
	dt := make([]uint8, 0, n)
	src := make([]int32, 0, n)
	x.bySrc = map[int32]map[int32]struct{}{}
	used := map[int32]bool{}
	for slot, v := range x.vecs {
		if v == nil {
			continue
		}
		ns := int32(len(vecs))
		vecs = append(vecs, v)
		ids = append(ids, x.ids[slot])
		dt = append(dt, x.docType[slot])
		src = append(src, x.source[slot])
		x.slotOf[x.ids[slot]] = ns
		m := x.bySrc[x.source[slot]]
		if m == nil {
			m = map[int32]struct{}{}
			x.bySrc[x.source[slot]] = m
		}
		m[ns] = struct{}{}
		used[x.source[slot]] = true
	}
	// Forget sources that no longer have vectors.
	srcIDs := make([]string, 0, len(used))
	remap := make(map[int32]int32, len(used))
	for old := range used {
		remap[old] = int32(len(srcIDs))
		srcIDs = append(srcIDs, x.srcIDs[old])
	}
	x.sources = make(map[string]int32, len(srcIDs))
	for i, s := range srcIDs {
		x.sources[s] = int32(i)
	}
	bySrc := make(map[int32]map[int32]struct{}, len(x.bySrc))
	for old, m := range x.bySrc {
		bySrc[remap[old]] = m
	}
	for i := range src {
		src[i] = remap[src[i]]
	}
	x.vecs, x.ids, x.docType, x.source, x.srcIDs, x.bySrc = vecs, ids, dt, src, srcIDs, bySrc
	x.quant.reset(x.dim)
	for slot, v := range x.vecs {
		x.quant.set(slot, v)
	}
	x.deleted = 0
	x.graveyard = nil
	x.g = nil
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
// approximate (see Recall): candidates come from the quantised scan, or for
// dense queries on a large index from the HNSW graph.
func (x *Index) Search(q []float32, k int, f *Filter) ([]Result, error) {
	return x.search(q, k, f, false)
}

// SearchExact is Search by an exhaustive scan, whatever the index size.
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
	top.init(k)
	sq := sparsify(q)
	denseQ := len(sq.dims) > x.dim/2
	if denseQ && !x.dense.Load() {
		x.dense.Store(true)
		if x.graphWanted() {
			x.wakeBuilder()
		}
	}
	switch {
	case c.src >= 0:
		// One source: score its few vectors.
		for slot := range x.bySrc[c.src] {
			if x.match(&c, slot) {
				top.push(vek32.Dot(q, x.vecs[slot]), slot)
			}
		}
	case exact:
		x.scan(q, &c, 0, len(x.vecs), &top)
	case denseQ && x.g != nil && x.matching(&c) > x.exactBelow(k):
		ef := max(x.opt.EfSearch, 2*k)
		x.g.search(x, q, ef, &c, &top)
		// The vectors added since the graph was last extended.
		x.scan(q, &c, x.g.n, len(x.vecs), &top)
		if top.len() < k && top.len() < x.matching(&c) {
			// A filter the graph walk could not satisfy: scan.
			top.init(k)
			x.quantSearch(q, sq, &c, &top)
		}
	default:
		x.quantSearch(q, sq, &c, &top)
	}
	return x.results(&top), nil
}

// quantSearch is the quantised scan with exact rescoring.
func (x *Index) quantSearch(q []float32, sq sparseQuery, c *compiled, top *topK) {
	var cand topK
	cand.init(candidates(top.k))
	x.scanQuant(sq, c, 0, len(x.vecs), &cand)
	x.rescore(q, &cand, top)
}

// exactBelow is the number of matching vectors under which a scan is
// cheaper than a graph walk.
func (x *Index) exactBelow(k int) int {
	return max(x.opt.GraphThreshold/4, 40*max(x.opt.EfSearch, 2*k))
}

func (x *Index) results(top *topK) []Result {
	items := top.sorted()
	out := make([]Result, len(items))
	for i, it := range items {
		out[i] = Result{ID: x.ids[it.slot], Score: it.score}
	}
	// Equal scores: order by id so that results are deterministic.
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Score != out[j].Score {
			return out[i].Score > out[j].Score
		}
		return out[i].ID < out[j].ID
	})
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
		tops[w].init(top.k)
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

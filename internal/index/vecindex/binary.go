package vecindex

import (
	"math"
	"math/bits"
	"runtime"
	"slices"
	"sync"

	"github.com/viterin/vek/vek32"
)

// One-bit codes with corrected estimates (after RaBitQ, Gao and Long,
// SIGMOD 2024). A vector o (unit length) is centred on the index's centre
// c, normalised, rotated (rotator) and kept as the signs of its pd
// coordinates: pd bits, pd/8 bytes (96 bytes at 768 dimensions, a 32nd of
// its float32 form). With x̄ the sign vector scaled to unit length and o″
// the rotated unit residual, <x̄, o″> is recorded per vector; the estimate
// of <o″, q″> for a query is then <x̄, q″> / <x̄, o″>, which is unbiased and
// whose error shrinks as 1/sqrt(pd). The query is rotated once and
// quantised to 4 bits per coordinate, so that <x̄, q″> reduces to four
// AND+POPCNT passes over the code words.
//
// The estimate of the cosine similarity <o, q> is
//
//	<c, q> + |o-c| · <o″, q″>
//	  = <c, q> + a · (2Δ·T + 2·lo·p − Σq̄)
//
// with a = |o-c| / (sqrt(pd)·<x̄, o″>) and p the number of set bits (both per
// vector), Δ and lo the query's quantisation step and offset, Σq̄ the sum of
// its quantised coordinates, and T = Σ_j 2^j·popcount(code AND plane_j).
// Each vector also records a bound on the estimate's error,
// |o-c|·sqrt(1-<x̄, o″>²) / (<x̄, o″>·sqrt(pd-1)) (the paper's, without its
// confidence multiplier, which is Options.Confidence here).

// binFactor is what a vector needs besides its bits.
type binFactor struct {
	a    float32 // |o-c| / (sqrt(pd)·<x̄, o″>); 0 for a vector equal to the centre
	ones float32 // set bits in the code
	err  float32 // error bound per unit of confidence
}

// scanFactors holds the factors of an index's slots, one slice each (the
// kernel loads 8 of each at a time); len is a multiple of codeBlock.
type scanFactors struct {
	a, ones, err []float32
}

func (f *scanFactors) set(slot int, v binFactor) {
	f.a[slot], f.ones[slot], f.err[slot] = v.a, v.ones, v.err
}

func (f *scanFactors) get(slot int) binFactor {
	return binFactor{f.a[slot], f.ones[slot], f.err[slot]}
}

// binQuery is a query prepared for the code scan.
type binQuery struct {
	planes []uint64 // word w of plane j (bit j of each 4-bit coordinate) at 4w+j
	scanQuery
}

// scanQuery is what the kernel needs of a query (the layout is read by
// kernel_amd64.s: six float32 in this order).
type scanQuery struct {
	cq    float32 // <c, q>
	delta float32 // 2Δ
	lo    float32 // 2·lo
	sum   float32 // Σ of the quantised coordinates
	eps   float32 // Options.Confidence
	thr   float32 // slots whose upper bound is below are not marked
}

// binCoder encodes vectors and queries for one dimension, rotation and
// centre. It is immutable and safe for concurrent use.
type binCoder struct {
	dim, pd, words int
	rot            *rotator
	centre         []float32 // len dim; all zero until set
}

func newBinCoder(dim int, seed uint64, centre []float32) *binCoder {
	rot := newRotator(dim, seed)
	if centre == nil {
		centre = make([]float32, dim)
	}
	return &binCoder{dim: dim, pd: rot.pd, words: rot.pd / 64, rot: rot, centre: centre}
}

// encode writes the code of v (unit length, len dim) into dst (len words)
// and returns its factors. scratch must have len pd.
func (c *binCoder) encode(dst []uint64, v, scratch []float32) binFactor {
	r := scratch[:c.dim]
	var n float64
	for i, f := range v {
		d := f - c.centre[i]
		r[i] = d
		n += float64(d) * float64(d)
	}
	clear(dst)
	if n == 0 {
		return binFactor{}
	}
	norm := math.Sqrt(n)
	inv := float32(1 / norm)
	for i := range r {
		r[i] *= inv
	}
	c.rot.rotate(scratch, r)
	var l1 float64
	ones := 0
	for i, f := range scratch {
		if f > 0 {
			dst[i/64] |= 1 << (i % 64)
			ones++
			l1 += float64(f)
		} else {
			l1 -= float64(f)
		}
	}
	ip := l1 / math.Sqrt(float64(c.pd)) // <x̄, o″>, in (0, 1]
	if ip < 1e-6 {
		ip = 1e-6
	}
	return binFactor{
		a:    float32(norm / (math.Sqrt(float64(c.pd)) * ip)),
		ones: float32(ones),
		err:  float32(norm * math.Sqrt(max(0, 1-ip*ip)) / ip / math.Sqrt(float64(c.pd-1))),
	}
}

// prepare rotates and quantises q (unit length, len dim). scratch must
// have len pd.
func (c *binCoder) prepare(q, scratch []float32) binQuery {
	var bq binQuery
	var cq float64
	for i, f := range q {
		cq += float64(f) * float64(c.centre[i])
	}
	bq.cq = float32(cq)
	c.rot.rotate(scratch, q)
	lo, hi := scratch[0], scratch[0]
	for _, f := range scratch {
		lo, hi = min(lo, f), max(hi, f)
	}
	delta := (hi - lo) / 15
	if delta == 0 {
		delta = 1
	}
	bq.planes = make([]uint64, 4*c.words)
	var sum int
	inv := 1 / delta
	for i, f := range scratch {
		u := int((f-lo)*inv + 0.5)
		u = min(max(u, 0), 15)
		sum += u
		for j := 0; j < 4; j++ {
			if u>>j&1 == 1 {
				bq.planes[4*(i/64)+j] |= 1 << (i % 64)
			}
		}
	}
	bq.delta = 2 * delta
	bq.lo = 2 * lo
	bq.sum = delta*float32(sum) + float32(c.pd)*lo
	return bq
}

// estimate is the estimated similarity of a vector with the contiguous
// code and factor f (the reference the block kernels are tested against).
func (q *binQuery) estimate(code []uint64, f binFactor) float32 {
	return q.fromDot(popDot(code, q.planes), f.a, f.ones)
}

// fromDot turns T = Σ_j 2^j·popcount(code AND plane_j) into the estimate.
func (q *scanQuery) fromDot(t uint32, a, ones float32) float32 {
	return q.cq + a*(q.delta*float32(t)+q.lo*ones-q.sum)
}

// popDot is T for one contiguous code.
func popDot(code, planes []uint64) uint32 {
	planes = planes[:4*len(code)]
	var t0, t1, t2, t3 int
	for i, c := range code {
		p := planes[4*i : 4*i+4 : 4*i+4]
		t0 += bits.OnesCount64(c & p[0])
		t1 += bits.OnesCount64(c & p[1])
		t2 += bits.OnesCount64(c & p[2])
		t3 += bits.OnesCount64(c & p[3])
	}
	return uint32(t0 + 2*t1 + 4*t2 + 8*t3)
}

// The codes of an index are stored in blocks of 8 slots: word w of slot s
// is at block(s)·8·words + 8w + s%8, so that one 512-bit load holds word w
// of 8 vectors (kernel_amd64.s).

// codeBlock is the number of slots per block.
const codeBlock = 8

// setBlockCode stores the contiguous code of slot into the block layout.
func setBlockCode(codes []uint64, words, slot int, code []uint64) {
	base := slot/codeBlock*codeBlock*words + slot%codeBlock
	for w, c := range code {
		codes[base+codeBlock*w] = c
	}
}

// blockCode copies slot's code out of the block layout into dst.
func blockCode(dst, codes []uint64, words, slot int) {
	base := slot/codeBlock*codeBlock*words + slot%codeBlock
	for w := range dst[:words] {
		dst[w] = codes[base+codeBlock*w]
	}
}

// scanBlocksGo is the portable kernel: T of every slot of len(masks)
// blocks into ts, and bit l of masks[b] set when slot 8b+l's upper bound
// reaches q.thr.
func scanBlocksGo(codes []uint64, words int, planes []uint64, f scanFactors, q *scanQuery, ts []uint32, masks []uint8) {
	nblocks := len(masks)
	codes = codes[:nblocks*codeBlock*words]
	planes = planes[:4*words]
	for b := 0; b < nblocks; b++ {
		blk := codes[b*codeBlock*words : (b+1)*codeBlock*words]
		var m uint8
		for l := 0; l < codeBlock; l++ {
			var t0, t1, t2, t3 int
			for w := 0; w < words; w++ {
				c := blk[codeBlock*w+l]
				p := planes[4*w : 4*w+4 : 4*w+4]
				t0 += bits.OnesCount64(c & p[0])
				t1 += bits.OnesCount64(c & p[1])
				t2 += bits.OnesCount64(c & p[2])
				t3 += bits.OnesCount64(c & p[3])
			}
			s := b*codeBlock + l
			t := uint32(t0 + 2*t1 + 4*t2 + 8*t3)
			ts[s] = t
			if q.fromDot(t, f.a[s], f.ones[s])+q.eps*f.err[s] >= q.thr {
				m |= 1 << l
			}
		}
		masks[b] = m
	}
}

// binState is one worker's part of a 1-bit scan.
type binState struct {
	lb     topK     // the k best lower bounds (estimate − confidence·error)
	cand   []scored // (upper bound, slot) of vectors not ruled out
	budget int      // candidates that may be rescored
	floor  float32  // the budget-th best upper bound at the last trim
}

// add keeps a candidate, trimming the buffer to the budget's best when it
// has grown to twice that (amortised O(1) per candidate).
func (st *binState) add(ub float32, slot int32) {
	st.cand = append(st.cand, scored{ub, slot})
	if len(st.cand) >= 2*st.budget && len(st.cand) >= 64 {
		st.cand = bestOf(st.cand, st.budget, st.lb.x)
		st.floor = minScore(st.cand)
	}
}

// bestOf reorders s so that its n best items (by worse with x's ids) come
// first, and returns them (unordered).
func bestOf(s []scored, n int, x *Index) []scored {
	if n >= len(s) {
		return s
	}
	lo, hi := 0, len(s)-1
	for lo < hi {
		// Median of three as the pivot, then a Hoare partition: better
		// items to the left.
		mid := lo + (hi-lo)/2
		if worse(s[lo], s[mid], x) {
			s[lo], s[mid] = s[mid], s[lo]
		}
		if worse(s[lo], s[hi], x) {
			s[lo], s[hi] = s[hi], s[lo]
		}
		if worse(s[mid], s[hi], x) {
			s[mid], s[hi] = s[hi], s[mid]
		}
		p := s[mid]
		i, j := lo, hi
		for i <= j {
			for worse(p, s[i], x) {
				i++
			}
			for worse(s[j], p, x) {
				j--
			}
			if i <= j {
				s[i], s[j] = s[j], s[i]
				i++
				j--
			}
		}
		switch {
		case n-1 <= j:
			hi = j
		case n-1 >= i:
			lo = i
		default:
			return s[:n]
		}
	}
	return s[:n]
}

func minScore(s []scored) float32 {
	m := float32(math.Inf(1))
	for _, it := range s {
		m = min(m, it.score)
	}
	return m
}

// binSearch answers a dense query from the 1-bit codes. A vector is ruled
// out when its upper bound is below the k-th best lower bound; of the
// others, the rescoring budget's worth with the highest upper bounds are
// rescored exactly, in decreasing order of upper bound, until the next one
// cannot beat the k-th exact score (mu held).
func (x *Index) binSearch(q []float32, c *compiled, top *topK) {
	sp := x.getScratch(x.coder.pd)
	bq := x.coder.prepare(q, *sp)
	x.scratch.Put(sp)
	bq.eps = float32(x.opt.Confidence)
	k := top.k
	budget := x.rescoreBudget(k)
	n := len(x.vecs)
	const perWorker = 16384
	workers := max(1, min(runtime.GOMAXPROCS(0), n/perWorker))
	states := make([]binState, workers)
	for w := range states {
		states[w].lb.init(k, x)
		states[w].budget = budget
		states[w].floor = float32(math.Inf(-1))
	}
	step := ((n+workers-1)/workers + codeBlock - 1) / codeBlock * codeBlock
	if workers == 1 {
		x.binScanRange(&bq, c, 0, n, &states[0])
	} else {
		var wg sync.WaitGroup
		for w := range states {
			if w*step >= n {
				continue
			}
			wg.Add(1)
			go func(w int) {
				defer wg.Done()
				x.binScanRange(&bq, c, w*step, min(n, (w+1)*step), &states[w])
			}(w)
		}
		wg.Wait()
	}
	var lb topK
	lb.init(k, x)
	for w := range states {
		for _, it := range states[w].lb.items {
			lb.push(it.score, it.slot)
		}
	}
	thr := float32(math.Inf(-1))
	if lb.len() == k {
		thr = lb.min().score
	}
	var cand []scored
	for w := range states {
		for _, it := range states[w].cand {
			if it.score >= thr {
				cand = append(cand, it)
			}
		}
	}
	cand = bestOf(cand, budget, x)
	slices.SortFunc(cand, func(a, b scored) int {
		if worse(b, a, x) {
			return -1
		}
		if worse(a, b, x) {
			return 1
		}
		return 0
	})
	if x.rows.on {
		x.refine(q, cand, top)
		return
	}
	for _, it := range cand {
		if top.len() == k && it.score < top.min().score {
			break
		}
		if v := x.vecs[it.slot]; v != nil {
			top.push(vek32.Dot(q, v), it.slot)
			x.rescored.Add(1)
		}
	}
}

// refine ranks the candidates by their int8 row estimates and rescores
// with the float32 vectors only those that may be among the k best: within
// twice the largest row error bound of the k-th best row estimate (a true
// top-k vector's estimate is at least its score minus a bound, and the k-th
// best estimate at most the k-th best score plus one).
func (x *Index) refine(q []float32, cand []scored, top *topK) {
	k := top.k
	rq := newRowQuery(q)
	est := make([]scored, 0, len(cand))
	var bound float32
	for _, it := range cand {
		if x.vecs[it.slot] == nil {
			continue
		}
		e, b := x.rows.estimate(int(it.slot), &rq)
		est = append(est, scored{e, it.slot})
		bound = max(bound, b)
	}
	floor := float32(math.Inf(-1))
	if len(est) > k {
		best := bestOf(append([]scored(nil), est...), k, x)
		floor = minScore(best) - 2*bound
	}
	for _, it := range est {
		if it.score >= floor {
			top.push(vek32.Dot(q, x.vecs[it.slot]), it.slot)
			x.rescored.Add(1)
		}
	}
}

// rescoreBudget is the most candidates a top-k query rescores.
func (x *Index) rescoreBudget(k int) int {
	if x.opt.Rescore < 0 {
		return math.MaxInt32
	}
	return k + x.opt.Rescore
}

// scanChunk is the number of slots the kernel scans per call.
const scanChunk = 512

// binScanRange scans slots [lo, hi) into st; lo is a multiple of codeBlock.
func (x *Index) binScanRange(bq *binQuery, c *compiled, lo, hi int, st *binState) {
	words := x.coder.words
	f := x.fac
	k := st.lb.k
	sq := bq.scanQuery
	// The lowest finite value, so that deleted slots (error bound -Inf,
	// see deleteSlot) are never marked.
	sq.thr = -math.MaxFloat32
	var ts [scanChunk]uint32
	var masks [scanChunk / codeBlock]uint8
	for start := lo; start < hi; start += scanChunk {
		end := min(hi, start+scanChunk)
		nb := (end - start + codeBlock - 1) / codeBlock
		chunk := scanFactors{f.a[start:], f.ones[start:], f.err[start:]}
		scanBlocks(x.codes[start*words:], words, bq.planes, chunk, &sq, ts[:], masks[:nb])
		for b, m := range masks[:nb] {
			for m != 0 {
				l := bits.TrailingZeros8(m)
				m &= m - 1
				j := b*codeBlock + l
				slot := start + j
				if slot >= end {
					break
				}
				est := sq.fromDot(ts[j], f.a[slot], f.ones[slot])
				e := sq.eps * f.err[slot]
				ub := est + e
				if ub < sq.thr || !x.match(c, int32(slot)) {
					continue
				}
				st.add(ub, int32(slot))
				if lbv := est - e; st.lb.len() < k || lbv > st.lb.min().score {
					st.lb.push(lbv, int32(slot))
				}
				// A vector is out when its upper bound is below the k-th
				// best lower bound, or below the budget's best candidates.
				if st.lb.len() == k {
					sq.thr = max(sq.thr, st.lb.min().score)
				}
				sq.thr = max(sq.thr, st.floor)
			}
		}
	}
}

// growFactors makes room for the factors of slots [0, n), in whole blocks.
func (f *scanFactors) grow(n int) {
	need := (n + codeBlock - 1) / codeBlock * codeBlock
	for _, p := range []*[]float32{&f.a, &f.ones, &f.err} {
		if need > len(*p) {
			*p = slices.Grow(*p, need-len(*p))
			old := len(*p)
			*p = (*p)[:need]
			clear((*p)[old:])
		}
	}
}

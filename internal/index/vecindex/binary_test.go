package vecindex

import (
	"fmt"
	"math"
	"math/bits"
	"math/rand"
	"sort"
	"testing"
)

// TestRotatorOrthogonal checks that the rotation preserves norms and inner
// products (it is a product of orthogonal steps) for dimensions that are
// and are not powers of two, and that it mixes: a basis vector ends up
// spread over many coordinates.
func TestRotatorOrthogonal(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	for _, dim := range []int{3, 64, 100, 384, 512, 768, 1000, 1536} {
		rot := newRotator(dim, 7)
		a, b := gauss(r, dim, 1), gauss(r, dim, 1)
		ra, rb := make([]float32, rot.pd), make([]float32, rot.pd)
		rot.rotate(ra, a)
		rot.rotate(rb, b)
		dot := func(x, y []float32) float64 {
			var s float64
			for i := range x {
				s += float64(x[i]) * float64(y[i])
			}
			return s
		}
		if d, w := dot(ra, rb), dot(a, b); math.Abs(d-w) > 1e-3*math.Sqrt(dot(a, a)*dot(b, b)) {
			t.Errorf("dim %d: <Ra,Rb> = %v, <a,b> = %v", dim, d, w)
		}
		if d, w := dot(ra, ra), dot(a, a); math.Abs(d-w) > 1e-3*w {
			t.Errorf("dim %d: |Ra|² = %v, |a|² = %v", dim, d, w)
		}
		e := make([]float32, dim)
		e[0] = 1
		re := make([]float32, rot.pd)
		rot.rotate(re, e)
		big := 0
		for _, f := range re {
			if math.Abs(float64(f)) > 0.5/math.Sqrt(float64(rot.pd)) {
				big++
			}
		}
		if dim >= 64 && big < rot.pd/4 {
			t.Errorf("dim %d: a basis vector rotates onto only %d of %d coordinates", dim, big, rot.pd)
		}
	}
}

// TestEstimateUnbiased checks the 1-bit estimator against exact dot
// products on random unit vectors: the mean error is near zero, and the
// error exceeds the recorded bound times 3 for almost no vector.
func TestEstimateUnbiased(t *testing.T) {
	r := rand.New(rand.NewSource(2))
	for _, dim := range []int{128, 768} {
		c := newBinCoder(dim, 1, nil)
		sc := make([]float32, c.pd)
		code := make([]uint64, c.words)
		q := unit(gauss(r, dim, 1))
		bq := c.prepare(q, sc)
		var sum, sq float64
		over := 0
		const n = 4000
		for i := 0; i < n; i++ {
			v := unit(gauss(r, dim, 1))
			// Correlate half the vectors with q so that similarities vary.
			if i%2 == 0 {
				for j := range v {
					v[j] += q[j] * float32(r.Float64())
				}
				v = unit(v)
			}
			f := c.encode(code, v, sc)
			var exact float64
			for j := range v {
				exact += float64(v[j]) * float64(q[j])
			}
			d := float64(bq.estimate(code, f)) - exact
			sum += d
			sq += d * d
			if math.Abs(d) > 3*float64(f.err) {
				over++
			}
		}
		mean, rms := sum/n, math.Sqrt(sq/n)
		t.Logf("dim %d: mean error %.5f, rms %.5f, %d of %d beyond 3 bounds", dim, mean, rms, over, n)
		if math.Abs(mean) > rms/5 || rms > 2/math.Sqrt(float64(dim)) || over > n/100 {
			t.Errorf("dim %d: mean error %.5f, rms %.5f, %d beyond 3 bounds", dim, mean, rms, over)
		}
	}
}

// TestKernelsAgree compares the block kernel in use (AVX-512 where the CPU
// has it) and the portable one with the contiguous reference, for several
// code lengths: T must be equal, and the upper-bound marks must agree
// except within float32 rounding of the threshold.
func TestKernelsAgree(t *testing.T) {
	r := rand.New(rand.NewSource(3))
	t.Logf("AVX-512 kernel in use: %v", useAVX512)
	for _, words := range []int{1, 2, 6, 8, 12, 24, 48} {
		const n = 3*codeBlock + 5
		nb := (n + codeBlock - 1) / codeBlock
		codes := make([]uint64, nb*codeBlock*words)
		contiguous := make([][]uint64, n)
		var f scanFactors
		f.grow(n)
		for s := 0; s < n; s++ {
			contiguous[s] = make([]uint64, words)
			for w := range contiguous[s] {
				contiguous[s][w] = r.Uint64()
			}
			setBlockCode(codes, words, s, contiguous[s])
			f.set(s, binFactor{a: r.Float32() / 100, ones: float32(r.Intn(64 * words)), err: r.Float32() / 10})
		}
		planes := make([]uint64, 4*words)
		for i := range planes {
			planes[i] = r.Uint64()
		}
		q := scanQuery{cq: r.Float32() - 0.5, delta: r.Float32() / 10, lo: -r.Float32() / 10, sum: r.Float32(), eps: 2}
		// A threshold in the middle of the upper bounds.
		var ubs []float32
		for s := 0; s < n; s++ {
			ubs = append(ubs, q.fromDot(popDot(contiguous[s], planes), f.a[s], f.ones[s])+q.eps*f.err[s])
		}
		q.thr = ubs[n/2]
		fastT, slowT := make([]uint32, nb*codeBlock), make([]uint32, nb*codeBlock)
		fastM, slowM := make([]uint8, nb), make([]uint8, nb)
		scanBlocks(codes, words, planes, f, &q, fastT, fastM)
		scanBlocksGo(codes, words, planes, f, &q, slowT, slowM)
		back := make([]uint64, words)
		marked := 0
		for s := 0; s < n; s++ {
			want := popDot(contiguous[s], planes)
			if fastT[s] != want || slowT[s] != want {
				t.Fatalf("words %d slot %d: kernel %d, portable %d, reference %d", words, s, fastT[s], slowT[s], want)
			}
			fm, sm := fastM[s/codeBlock]>>(s%codeBlock)&1, slowM[s/codeBlock]>>(s%codeBlock)&1
			if fm != sm && math.Abs(float64(ubs[s]-q.thr)) > 1e-5 {
				t.Fatalf("words %d slot %d: upper bound %v, threshold %v: kernel marks %d, portable %d", words, s, ubs[s], q.thr, fm, sm)
			}
			if wantM := ubs[s] >= q.thr; (sm == 1) != wantM {
				t.Fatalf("words %d slot %d: portable mark %d, want %v", words, s, sm, wantM)
			}
			marked += int(fm)
			blockCode(back, codes, words, s)
			for w := range back {
				if back[w] != contiguous[s][w] {
					t.Fatalf("words %d slot %d: block layout round trip differs", words, s)
				}
			}
		}
		if marked == 0 || marked == n {
			t.Fatalf("words %d: %d of %d marked; the threshold should split them", words, marked, n)
		}
		// Reference by definition, for one slot.
		var def int
		for w, c := range contiguous[0] {
			for j := 0; j < 4; j++ {
				def += bits.OnesCount64(c&planes[4*w+j]) << j
			}
		}
		if uint32(def) != fastT[0] {
			t.Fatalf("words %d: T = %d by definition, %d by the kernel", words, def, fastT[0])
		}
	}
}

func ExampleIndex_Search() {
	x := New(nil)
	_ = x.Add([]Item{
		{ID: "a", Vector: []float32{1, 0, 0}, DocType: "knowledge"},
		{ID: "b", Vector: []float32{0.8, 0.6, 0}, DocType: "knowledge"},
		{ID: "c", Vector: []float32{0, 0, 1}, DocType: "memory"},
	})
	res, _ := x.Search([]float32{1, 0.1, 0}, 2, &Filter{DocTypes: []string{"knowledge"}})
	for _, r := range res {
		fmt.Printf("%s %.3f\n", r.ID, r.Score)
	}
	// Output:
	// a 0.995
	// b 0.856
}

// TestBestOf checks the selection against a full sort, with ties.
func TestBestOf(t *testing.T) {
	r := rand.New(rand.NewSource(4))
	for c := 0; c < 500; c++ {
		s := make([]scored, 1+r.Intn(300))
		for i := range s {
			s[i] = scored{float32(r.Intn(20)), int32(i)}
		}
		n := r.Intn(len(s) + 2)
		want := append([]scored(nil), s...)
		sort.Slice(want, func(i, j int) bool { return worse(want[j], want[i], nil) })
		got := bestOf(s, n, nil)
		sort.Slice(got, func(i, j int) bool { return worse(got[j], got[i], nil) })
		if n > len(want) {
			n = len(want)
		}
		if len(got) != n {
			t.Fatalf("case %d: %d items, want %d", c, len(got), n)
		}
		for i := range got {
			if got[i] != want[i] {
				t.Fatalf("case %d: item %d is %v, want %v", c, i, got[i], want[i])
			}
		}
	}
}

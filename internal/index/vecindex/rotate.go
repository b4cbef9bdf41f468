package vecindex

import "math"

// rotator is a fixed pseudo-random orthogonal transform of R^pd (pd is the
// dimension rounded up to a multiple of 64, the input padded with zeros):
// rounds of random sign flips, a normalised fast Walsh-Hadamard transform
// of the leading and of the trailing power-of-two window, and a butterfly
// that mixes the two halves (a step of Kac's walk). Every step is
// orthogonal, so norms and inner products are preserved exactly (up to
// float32 rounding); the mixing spreads any vector's energy over all
// coordinates, which is what makes sign bits of the result a good code.
// It costs O(pd log pd) per vector instead of the O(pd²) of a dense random
// rotation.
//
// A rotator is immutable and safe for concurrent use.
type rotator struct {
	dim, pd int
	seed    uint64
	h       int         // largest power of two <= pd
	signs   [][]float32 // 2 per round, pd each, ±1
}

const rotRounds = 2

func newRotator(dim int, seed uint64) *rotator {
	pd := (dim + 63) / 64 * 64
	h := 1
	for h*2 <= pd {
		h *= 2
	}
	r := &rotator{dim: dim, pd: pd, h: h, seed: seed}
	s := seed
	for i := 0; i < 2*rotRounds; i++ {
		v := make([]float32, pd)
		for j := 0; j < pd; j += 64 {
			bits := splitmix(&s)
			for k := 0; k < 64 && j+k < pd; k++ {
				if bits>>k&1 == 1 {
					v[j+k] = -1
				} else {
					v[j+k] = 1
				}
			}
		}
		r.signs = append(r.signs, v)
	}
	return r
}

// splitmix is the splitmix64 generator: deterministic on every platform.
func splitmix(s *uint64) uint64 {
	*s += 0x9e3779b97f4a7c15
	z := *s
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// rotate writes the rotation of v (len dim) into dst (len pd).
func (r *rotator) rotate(dst, v []float32) {
	copy(dst, v)
	clear(dst[len(v):])
	for round := 0; round < rotRounds; round++ {
		mul(dst, r.signs[2*round])
		fwht(dst[:r.h])
		r.kac(dst)
		mul(dst, r.signs[2*round+1])
		fwht(dst[r.pd-r.h:])
		r.kac(dst)
	}
}

func mul(dst, s []float32) {
	s = s[:len(dst)]
	for i := range dst {
		dst[i] *= s[i]
	}
}

// kac mixes coordinate i with i+pd/2 by a 45° rotation.
func (r *rotator) kac(x []float32) {
	if r.h == r.pd {
		return // one window covers everything: no need to mix halves
	}
	half := r.pd / 2
	a, b := x[:half], x[half:2*half]
	const c = float32(math.Sqrt2 / 2)
	for i := range a {
		u, w := a[i], b[i]
		a[i], b[i] = (u+w)*c, (u-w)*c
	}
}

// fwht is the in-place fast Walsh-Hadamard transform of x (its length a
// power of two), scaled by 1/sqrt(len) so that it is orthogonal.
func fwht(x []float32) {
	n := len(x)
	for h := 1; h < n; h *= 2 {
		for i := 0; i < n; i += 2 * h {
			a, b := x[i:i+h], x[i+h:i+2*h]
			for j := range a {
				u, w := a[j], b[j]
				a[j], b[j] = u+w, u-w
			}
		}
	}
	s := float32(1 / math.Sqrt(float64(n)))
	for i := range x {
		x[i] *= s
	}
}

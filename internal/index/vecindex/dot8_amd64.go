//go:build amd64 && !purego

package vecindex

import "golang.org/x/sys/cpu"

// useAVX2Dot8 selects the AVX2 int8 dot product (dot8_amd64.s).
var useAVX2Dot8 = cpu.X86.HasAVX2

//go:noescape
func dot8AVX2(a, b *int8, n int) int32

// dot8 is Σ a[i]·b[i] in int32 (no overflow below 2^17 dimensions).
func dot8(a, b []int8) int32 {
	b = b[:len(a)]
	n := len(a) &^ 15
	if !useAVX2Dot8 || n == 0 {
		return dot8Go(a, b)
	}
	s := dot8AVX2(&a[0], &b[0], n)
	if n < len(a) {
		s += dot8Go(a[n:], b[n:])
	}
	return s
}

//go:build amd64 && !purego

package vecindex

import "golang.org/x/sys/cpu"

// useAVX2Axpy8 selects the AVX2 int8 axpy (axpy8_amd64.s).
var useAVX2Axpy8 = cpu.X86.HasAVX2

//go:noescape
func axpy8AVX2(acc *float32, col *int8, n int, q float32)

// axpyInt8 adds q·float32(col[i]) to acc[i], with the same rounding as
// axpyInt8Go (a product, then a sum, each rounded to float32), so that
// both give the same bits.
func axpyInt8(acc []float32, col []int8, q float32) {
	col = col[:len(acc)]
	n := len(acc) &^ 7
	if !useAVX2Axpy8 || n == 0 {
		axpyInt8Go(acc, col, q)
		return
	}
	axpy8AVX2(&acc[0], &col[0], n, q)
	if n < len(acc) {
		axpyInt8Go(acc[n:], col[n:], q)
	}
}

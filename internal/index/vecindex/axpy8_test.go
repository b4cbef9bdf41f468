package vecindex

import (
	"math"
	"math/rand"
	"testing"
)

// TestAxpyInt8SameBits: the int8 axpy of the sparse scan (the AVX2 kernel
// where the CPU has it) and the portable loop both give the bits of acc +
// q·code with the product rounded first, for every length through the
// kernel's 32- and 8-element steps and the scalar tail, for the extreme
// codes and for query weights of every magnitude.
func TestAxpyInt8SameBits(t *testing.T) {
	r := rand.New(rand.NewSource(5))
	for n := 0; n <= 200; n++ {
		for _, q := range []float32{0, 1, -1, 0.3, -0.0071, 1e-30, 3e30, float32(r.NormFloat64())} {
			col := make([]int8, n)
			for i := range col {
				switch r.Intn(4) {
				case 0:
					col[i] = -128
				case 1:
					col[i] = 127
				default:
					col[i] = int8(r.Intn(256) - 128)
				}
			}
			acc := make([]float32, n)
			for i := range acc {
				acc[i] = float32(r.NormFloat64())
			}
			want := make([]float32, n)
			for i := range want {
				want[i] = acc[i] + float32(q*float32(col[i]))
			}
			portable := append([]float32(nil), acc...)
			axpyInt8Go(portable, col, q)
			axpyInt8(acc, col, q)
			for i := range acc {
				if math.Float32bits(acc[i]) != math.Float32bits(want[i]) || math.Float32bits(portable[i]) != math.Float32bits(want[i]) {
					t.Fatalf("n=%d q=%g: acc[%d] = %g, portable %g, want %g", n, q, i, acc[i], portable[i], want[i])
				}
			}
		}
	}
}

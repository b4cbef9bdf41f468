package vecindex

import (
	"fmt"
	"math/rand"
	"testing"
)

func randRow(r *rand.Rand, n int) []int8 {
	b := make([]int8, n)
	for i := range b {
		b[i] = int8(r.Intn(255) - 127)
	}
	return b
}

// BenchmarkDot8 is the cost of one int8 row estimate (the refinement of
// one 1-bit candidate).
func BenchmarkDot8(b *testing.B) {
	r := rand.New(rand.NewSource(1))
	for _, dim := range []int{384, 768, 1536} {
		x, y := randRow(r, dim), randRow(r, dim)
		b.Run(fmt.Sprintf("dim=%d", dim), func(b *testing.B) {
			var s int32
			for b.Loop() {
				s += dot8(x, y)
			}
			_ = s
		})
	}
}

// TestDot8 compares dot8 (the AVX2 kernel where the CPU has it) with the
// portable loop, at every length up to 200 and at extreme values.
func TestDot8(t *testing.T) {
	r := rand.New(rand.NewSource(2))
	for n := 0; n <= 200; n++ {
		for rep := 0; rep < 3; rep++ {
			a, b := randRow(r, n), randRow(r, n)
			if rep == 2 {
				for i := range a {
					a[i], b[i] = -127, -127
				}
			}
			var want int64
			for i := range a {
				want += int64(a[i]) * int64(b[i])
			}
			if got := dot8(a, b); int64(got) != want || int64(dot8Go(a, b)) != want {
				t.Fatalf("n=%d: dot8 %d, portable %d, want %d", n, got, dot8Go(a, b), want)
			}
		}
	}
}

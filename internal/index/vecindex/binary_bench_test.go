package vecindex

import (
	"fmt"
	"math/rand"
	"testing"
)

// BenchmarkBinaryKernel is the cost per vector of T (four AND+POPCNT passes
// over a code's words) for the dimensions of common embedders, with the
// kernel in use (AVX-512 where available) and the portable one.
//
//	go test -run xxx -bench BinaryKernel ./internal/index/vecindex
func BenchmarkBinaryKernel(b *testing.B) {
	for _, dim := range []int{384, 512, 768, 1536} {
		r := rand.New(rand.NewSource(1))
		words := (dim + 63) / 64
		const n = 4096
		codes := make([]uint64, n*words)
		for i := range codes {
			codes[i] = r.Uint64()
		}
		planes := make([]uint64, 4*words)
		for i := range planes {
			planes[i] = r.Uint64()
		}
		var f scanFactors
		f.grow(n)
		q := scanQuery{thr: 1e9}
		out := make([]uint32, scanChunk)
		masks := make([]uint8, scanChunk/codeBlock)
		for _, k := range []struct {
			name string
			fn   func([]uint64, int, []uint64, scanFactors, *scanQuery, []uint32, []uint8)
		}{{"kernel", scanBlocks}, {"portable", scanBlocksGo}} {
			b.Run(fmt.Sprintf("dim=%d/%s", dim, k.name), func(b *testing.B) {
				for b.Loop() {
					for s := 0; s < n; s += scanChunk {
						k.fn(codes[s*words:], words, planes, scanFactors{f.a[s:], f.ones[s:], f.err[s:]}, &q, out, masks)
					}
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/vector")
			})
		}
	}
}

// BenchmarkEncode is the cost of one vector's 1-bit code (centring,
// rotation, signs and factors), paid once per vector added.
func BenchmarkEncode(b *testing.B) {
	for _, dim := range []int{384, 768, 1536} {
		r := rand.New(rand.NewSource(1))
		c := newBinCoder(dim, 1, unit(gauss(r, dim, 0.1)))
		v := unit(gauss(r, dim, 1))
		code := make([]uint64, c.words)
		sc := make([]float32, c.pd)
		b.Run(fmt.Sprintf("dim=%d", dim), func(b *testing.B) {
			for b.Loop() {
				c.encode(code, v, sc)
			}
		})
	}
}

package embed

import (
	"context"
	"math"
	"strconv"

	"github.com/viterin/vek/vek32"
)

const (
	randProjVersion     = "randproj-v1"
	defaultRandProjDim  = 768
	defaultRandProjSeed = 1
	maxRandProjDim      = 8192
)

// RandProjOptions tune a [RandProj] embedder. A nil *RandProjOptions, and
// every zero field, means the documented default. Every field changes the
// vectors and is therefore part of Identity.
type RandProjOptions struct {
	// Dimension is the output vector length, 1..8192. Default 768.
	Dimension int
	// Seed selects the projection matrix. Default 1.
	Seed uint64
	// Lexical configures the lexical features that are projected. Default
	// nil: the [Lexical] defaults (768 hashed buckets).
	Lexical *LexicalOptions
}

// RandProj is a dense test embedder that needs nothing outside the binary: it
// computes the [Lexical] vector of a text and multiplies it by a fixed
// Gaussian random matrix (entries drawn from N(0, 1/Dimension) by a
// splitmix64 generator and the Box-Muller transform, so the matrix is the
// same on every machine and Go version), then L2-normalises the result.
//
// By the Johnson-Lindenstrauss lemma the projection roughly preserves the
// cosine similarities of the lexical vectors, so RandProj ranks about as the
// lexical embedder does, but its vectors are dense, like those of a neural
// model: every dimension is non-zero for queries as for documents. It exists
// so that tests, properties and benchmarks exercise the dense-vector path
// hermetically. It is LEXICAL, NOT SEMANTIC, like the embedder it projects.
//
// RandProj is safe for concurrent use.
type RandProj struct {
	lex      *Lexical
	dim      int
	in       int
	seed     uint64
	matrix   []float32 // in x dim, row-major: row i is the image of lexical bucket i
	identity string
}

// NewRandProj returns a random-projection embedder; nil opts means every
// default. Out-of-range dimensions are clamped to 1..8192.
func NewRandProj(opts *RandProjOptions) *RandProj {
	var o RandProjOptions
	if opts != nil {
		o = *opts
	}
	dim := o.Dimension
	if dim <= 0 {
		dim = defaultRandProjDim
	}
	dim = min(dim, maxRandProjDim)
	seed := o.Seed
	if seed == 0 {
		seed = defaultRandProjSeed
	}
	lex := NewLexical(o.Lexical)
	p := &RandProj{lex: lex, dim: dim, in: lex.Dimension(), seed: seed}
	p.matrix = gaussianMatrix(p.in*dim, seed, 1/math.Sqrt(float64(dim)))
	p.identity = randProjVersion + "/d" + strconv.Itoa(dim) + "/s" + strconv.FormatUint(seed, 10) + "/" + lex.Identity()
	return p
}

// gaussianMatrix returns n samples of N(0, sigma²) from a splitmix64 stream
// seeded with seed, by the Box-Muller transform.
func gaussianMatrix(n int, seed uint64, sigma float64) []float32 {
	out := make([]float32, n)
	state := seed
	next := func() float64 {
		state += 0x9e3779b97f4a7c15
		z := state
		z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
		z = (z ^ (z >> 27)) * 0x94d049bb133111eb
		z ^= z >> 31
		return (float64(z>>11) + 0.5) / (1 << 53) // in (0, 1)
	}
	for i := 0; i < n; i += 2 {
		r := math.Sqrt(-2*math.Log(next())) * sigma
		t := 2 * math.Pi * next()
		out[i] = float32(r * math.Cos(t))
		if i+1 < n {
			out[i+1] = float32(r * math.Sin(t))
		}
	}
	return out
}

// Identity encodes the version, the output dimension, the seed and the
// projected lexical embedder, e.g. "randproj-v1/d768/s1/lexical-v1/d768/...".
func (p *RandProj) Identity() string { return p.identity }

// Dimension returns the vector length.
func (p *RandProj) Dimension() int { return p.dim }

// MatchesWords implements [WordMatcher]: a projection of lexical vectors
// encodes words, as they do.
func (p *RandProj) MatchesWords() bool { return true }

// Embed returns one unit vector per text. It fails only if ctx is done.
func (p *RandProj) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	lex, err := p.lex.Embed(ctx, texts)
	if err != nil {
		return nil, err
	}
	out := make([][]float32, len(texts))
	for i, v := range lex {
		if i%16 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		out[i] = p.project(v)
	}
	return out, nil
}

// project multiplies the lexical vector v by the matrix and normalises.
func (p *RandProj) project(v []float32) []float32 {
	dst := make([]float32, p.dim)
	vek32.MatMul_Into(dst, v, p.matrix, p.in)
	n := float64(vek32.Dot(dst, dst))
	if n == 0 || math.IsNaN(n) || math.IsInf(n, 0) {
		clear(dst)
		dst[0] = 1
		return dst
	}
	vek32.MulNumber_Inplace(dst, float32(1/math.Sqrt(n)))
	return dst
}

package embed

import (
	"context"
	"errors"
	"math"
	"testing"
)

func dot(a, b []float32) float64 {
	var s float64
	for i := range a {
		s += float64(a[i]) * float64(b[i])
	}
	return s
}

func TestRandProjDenseUnitDeterministic(t *testing.T) {
	ctx := context.Background()
	texts := []string{
		"Hybrid search runs BM25 and a vector index in parallel.",
		"", "!!!", "the of and", "a",
		string([]byte{0xff, 0xfe, 'x'}),
	}
	a := NewRandProj(nil)
	b := NewRandProj(&RandProjOptions{})
	va, err := a.Embed(ctx, texts)
	if err != nil {
		t.Fatal(err)
	}
	vb, _ := b.Embed(ctx, texts)
	for i, v := range va {
		if len(v) != 768 {
			t.Fatalf("text %d: %d dimensions", i, len(v))
		}
		if n := dot(v, v); math.Abs(n-1) > 1e-4 {
			t.Errorf("text %d: squared norm %v", i, n)
		}
		zero := 0
		for j, f := range v {
			if f != vb[i][j] {
				t.Fatalf("text %d: not deterministic at %d", i, j)
			}
			if f == 0 {
				zero++
			}
		}
		// A dense vector: a Gaussian projection leaves (almost) no zero.
		if zero > 8 {
			t.Errorf("text %d: %d zero dimensions, want a dense vector", i, zero)
		}
	}
	// The matrix is fixed by the seed: a golden value guards against a
	// generator change that would silently invalidate every stored vector.
	if got := va[0][0]; math.Abs(float64(got)-randProjGolden) > 1e-6 {
		t.Errorf("first component %v, want %v (the projection changed: bump randProjVersion)", got, randProjGolden)
	}
}

// randProjGolden is the first component of the default embedding of
// "Hybrid search runs BM25 and a vector index in parallel.".
const randProjGolden = -0.0275114

func TestRandProjPreservesSimilarity(t *testing.T) {
	ctx := context.Background()
	lex := NewLexical(nil)
	rp := NewRandProj(nil)
	texts := []string{
		"Vector search ranks chunks by cosine similarity of their embeddings.",
		"Embeddings of chunks are ranked by cosine similarity in vector search.",
		"The journal is fsynced before a mutation is acknowledged.",
		"Bananas are rich in potassium and grow in tropical climates.",
		"Reciprocal rank fusion merges two ranked lists by their ranks.",
	}
	lv, _ := lex.Embed(ctx, texts)
	rv, _ := rp.Embed(ctx, texts)
	// Johnson-Lindenstrauss: at 768 dimensions cosines move by about
	// 1/sqrt(768) ≈ 0.036; allow three standard deviations.
	for i := range texts {
		for j := i + 1; j < len(texts); j++ {
			if d := math.Abs(dot(lv[i], lv[j]) - dot(rv[i], rv[j])); d > 0.11 {
				t.Errorf("texts %d,%d: lexical cosine %.3f, projected %.3f", i, j, dot(lv[i], lv[j]), dot(rv[i], rv[j]))
			}
		}
	}
	if dot(rv[0], rv[1]) <= dot(rv[0], rv[3]) {
		t.Errorf("paraphrase %.3f not closer than unrelated text %.3f", dot(rv[0], rv[1]), dot(rv[0], rv[3]))
	}
}

func TestParseRandProj(t *testing.T) {
	cases := []struct{ spec, identity string }{
		{"randproj", "randproj-v1/d768/s1/lexical-v1/d768/w1/c3-5x0.35/b0/stem/stop"},
		{"randproj:dim=1536", "randproj-v1/d1536/s1/lexical-v1/d768/w1/c3-5x0.35/b0/stem/stop"},
		{"RANDPROJ: dim=64 , seed=7, lexdim=256, char=0", "randproj-v1/d64/s7/lexical-v1/d256/w1/c0/b0/stem/stop"},
	}
	for _, c := range cases {
		e, err := Parse(c.spec)
		if err != nil {
			t.Fatalf("Parse(%q): %v", c.spec, err)
		}
		if _, ok := e.(*RandProj); !ok {
			t.Fatalf("Parse(%q) = %T", c.spec, e)
		}
		if e.Identity() != c.identity {
			t.Errorf("Parse(%q).Identity() = %q, want %q", c.spec, e.Identity(), c.identity)
		}
		v, _ := e.Embed(context.Background(), []string{"some text"})
		if len(v[0]) != e.Dimension() {
			t.Errorf("Parse(%q): vector of %d, Dimension %d", c.spec, len(v[0]), e.Dimension())
		}
	}
	for _, bad := range []string{"randproj:dim=0", "randproj:dim=9000", "randproj:seed=0", "randproj:seed=x",
		"randproj:dim", "randproj:dim=8,dim=9", "randproj:foo=1", "randproj:lexdim=0"} {
		if _, err := Parse(bad); !errors.Is(err, ErrBadSpec) {
			t.Errorf("Parse(%q) = %v, want ErrBadSpec", bad, err)
		}
	}
}

func TestRandProjSeedsDiffer(t *testing.T) {
	a := NewRandProj(&RandProjOptions{Seed: 1})
	b := NewRandProj(&RandProjOptions{Seed: 2})
	va, _ := a.Embed(context.Background(), []string{"seed check"})
	vb, _ := b.Embed(context.Background(), []string{"seed check"})
	if math.Abs(dot(va[0], vb[0])) > 0.2 {
		t.Errorf("two seeds give cosine %.3f, want independent projections", dot(va[0], vb[0]))
	}
	if a.Identity() == b.Identity() {
		t.Error("seeds share an identity")
	}
}

func TestRandProjContextCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := NewRandProj(nil).Embed(ctx, []string{"x"}); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v", err)
	}
}

func BenchmarkRandProjEmbed(b *testing.B) {
	rp := NewRandProj(nil)
	text := "Hybrid search runs two retrievers over the same collection and merges what they find. " +
		"BM25 scores exact words; the vector index scores meaning. Fusion normalises both lists."
	ctx := context.Background()
	for b.Loop() {
		if _, err := rp.Embed(ctx, []string{text}); err != nil {
			b.Fatal(err)
		}
	}
}

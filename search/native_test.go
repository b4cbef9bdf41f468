package search

import (
	"context"
	"math"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/ragmem/ragmem/index"
	"github.com/ragmem/ragmem/index/driver"
)

// nativeFake is a retriever whose store fuses hybrid queries itself.
type nativeFake struct {
	native     bool
	hits       []driver.HybridHit
	got        *driver.HybridQuery
	singleUsed atomic.Int32 // Search calls both sides concurrently
}

func (n *nativeFake) FullText(context.Context, string, int, index.Filter) ([]driver.Hit, error) {
	n.singleUsed.Add(1)
	return nil, nil
}

func (n *nativeFake) Vector(context.Context, string, int, index.Filter) ([]driver.Hit, error) {
	n.singleUsed.Add(1)
	return nil, nil
}

func (n *nativeFake) NativeHybrid() bool { return n.native }

func (n *nativeFake) Hybrid(_ context.Context, _ string, q driver.HybridQuery) ([]driver.HybridHit, error) {
	n.got = &q
	return n.hits, nil
}

func nhit(id string, score float64, bm25Rank, vecRank int, bm25, sim float64) driver.HybridHit {
	return driver.HybridHit{
		Record: index.Record{ID: id, SourceURL: "https://x/" + id}, Score: score,
		BM25Rank: bm25Rank, VectorRank: vecRank, BM25Score: bm25, VectorSimilarity: sim,
		InBM25: bm25Rank > 0 || bm25 > 0, InVector: vecRank > 0 || sim > 0,
	}
}

func TestNativeHybridRRF(t *testing.T) {
	f := &nativeFake{native: true, hits: []driver.HybridHit{
		nhit("a", 0.5/60+0.5/61, 1, 2, 0, 0.5),
		nhit("b", 0.5/60, 0, 1, 0, 0.6),
		nhit("c", 0.5/62, 3, 0, 0, 0.1),
		nhit("d", 0.5/63, 0, 3, 0, 0.29), // vector only, below the threshold
	}}
	res, err := Search(context.Background(), f, "q", &Options{TopK: 3, Fusion: RRF, DocTypes: []string{"knowledge"}})
	if err != nil {
		t.Fatal(err)
	}
	if f.got == nil || f.singleUsed.Load() != 0 {
		t.Fatalf("native hybrid not used (single-sided calls: %d)", f.singleUsed.Load())
	}
	// Diversification asks for 3×TopK (9) results, and twice that (18)
	// before the threshold.
	if f.got.Fusion != driver.FusionRanked || f.got.Alpha != 0.5 || f.got.K != 18 || !f.got.Similarity {
		t.Fatalf("query = %+v", *f.got)
	}
	if got := ids(res); len(got) != 3 || got[0] != "a" || got[1] != "b" || got[2] != "c" {
		t.Fatalf("diversified results %v, want [a b c]", got)
	}
	res, err = Search(context.Background(), f, "q", &Options{TopK: 3, Fusion: RRF, DocTypes: []string{"knowledge"}, KeepDuplicates: true, MaxPerSource: -1})
	if err != nil {
		t.Fatal(err)
	}
	if f.got.Fusion != driver.FusionRanked || f.got.Alpha != 0.5 || f.got.K != 10 || !f.got.Similarity {
		t.Fatalf("query = %+v", *f.got)
	}
	// d is dropped: a vector-only match below the threshold.
	if got := ids(res); len(got) != 3 || got[0] != "a" || got[1] != "b" || got[2] != "c" {
		t.Fatalf("results %v, want [a b c]", got)
	}
	// Equal weights of 0.5 are undone so that the score is Σ 1/(60+i).
	if want := 1.0/60 + 1.0/61; math.Abs(res[0].Score-want) > 1e-12 || res[0].Explanation.Fused != res[0].Score {
		t.Fatalf("score %v, want %v", res[0].Score, want)
	}
	e := res[0].Explanation
	if e.BM25Rank != 1 || e.VectorRank != 2 || !strings.HasPrefix(e.Method, "native rrf") {
		t.Fatalf("explanation %+v", e)
	}
	// A weighted RRF passes its alpha; scores stay doubled.
	res, err = Search(context.Background(), f, "q", &Options{TopK: 3, Fusion: RRF, Alpha: 0.2})
	if err != nil || f.got.Alpha != 0.2 || len(res) == 0 || res[0].Explanation.Method != "native rrf(k=60,alpha=0.20)" {
		t.Fatalf("weighted rrf: query %+v, results %+v, err %v", *f.got, res, err)
	}
	if want := 2 * (0.5/60 + 0.5/61); math.Abs(res[0].Score-want) > 1e-12 {
		t.Fatalf("weighted rrf score %v, want %v", res[0].Score, want)
	}
}

func TestNativeHybridRelativeAndThreshold(t *testing.T) {
	f := &nativeFake{native: true, hits: []driver.HybridHit{
		nhit("strong", 0.9, 0, 0, 10, 0.8),
		nhit("weakbm25", 0.2, 0, 0, 1, 0.1), // 1/10 of the best BM25 and dissimilar: dropped
		nhit("okbm25", 0.3, 0, 0, 5, 0.1),   // half the best BM25
		nhit("close", 0.25, 0, 0, 0, 0.35),  // similar enough
	}}
	res, err := Search(context.Background(), f, "q", &Options{TopK: 5, Fusion: Relative, Alpha: 0.7})
	if err != nil {
		t.Fatal(err)
	}
	if f.got.Fusion != driver.FusionRelative || f.got.Alpha != 0.7 {
		t.Fatalf("query = %+v", *f.got)
	}
	if got := ids(res); len(got) != 3 || got[0] != "strong" || got[1] != "okbm25" || got[2] != "close" {
		t.Fatalf("results %v, want [strong okbm25 close]", got)
	}
	if res[0].Explanation.BM25Score != 10 || res[0].Explanation.VectorSimilarity != 0.8 || res[0].Score != 0.9 {
		t.Fatalf("explanation %+v", res[0].Explanation)
	}
	// A negative threshold keeps everything.
	res, _ = Search(context.Background(), f, "q", &Options{TopK: 5, Fusion: Relative, SimilarityThreshold: -1, KeepDuplicates: true, MaxPerSource: -1})
	if len(res) != 4 || f.got.K != 5 || f.got.Similarity {
		t.Fatalf("threshold off: %v, k %d", ids(res), f.got.K)
	}
}

func TestNativeHybridNotUsed(t *testing.T) {
	for name, tc := range map[string]struct {
		native bool
		opts   Options
	}{
		"store without native fusion": {false, Options{}},
		"rrf k other than 60":         {true, Options{Fusion: RRF, RRFK: 10}},
		"vector mode":                 {true, Options{Mode: Vector}},
		"full-text mode":              {true, Options{Mode: FullText}},
	} {
		f := &nativeFake{native: tc.native, hits: []driver.HybridHit{nhit("a", 1, 1, 1, 1, 1)}}
		if _, err := Search(context.Background(), f, "q", &tc.opts); err != nil {
			t.Fatal(err)
		}
		if f.got != nil || f.singleUsed.Load() == 0 {
			t.Errorf("%s: native hybrid used", name)
		}
	}
}

// The native path's threshold at its edges: a BM25 score of exactly the
// threshold × the best, or a similarity of exactly the threshold, passes.
func TestNativeHybridThresholdEdges(t *testing.T) {
	f := &nativeFake{native: true, hits: []driver.HybridHit{
		nhit("best", 0.9, 0, 0, 10, 0.8),
		nhit("bm25edge", 0.5, 0, 0, 3, 0.1),   // 3/10 = DefaultThreshold
		nhit("simedge", 0.4, 0, 0, 0, 0.3),    // DefaultThreshold
		nhit("below", 0.3, 0, 0, 2.9, 0.2999), // neither
	}}
	res, err := Search(context.Background(), f, "q", &Options{TopK: 5, Fusion: Relative, Alpha: 0.5})
	if err != nil {
		t.Fatal(err)
	}
	if got := ids(res); !eq(got, []string{"best", "bm25edge", "simedge"}) {
		t.Fatalf("results %v, want [best bm25edge simedge]", got)
	}
}

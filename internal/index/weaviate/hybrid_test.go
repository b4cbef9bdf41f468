package weaviate

import (
	"context"
	"fmt"
	"math"
	"testing"

	"github.com/ragmem/ragmem/index"
	"github.com/ragmem/ragmem/index/driver"
	"github.com/ragmem/ragmem/index/indextest"
	"github.com/ragmem/ragmem/internal/wvtest"
)

// TestHybridExplanations checks the native hybrid search against the two
// single-sided searches: the ranks parsed from Weaviate's ranked-fusion
// explanation must be the hits' ranks in SearchText and SearchVector, the
// scores parsed from relative fusion their BM25 scores and similarities,
// and the fused scores must follow from those.
func TestHybridExplanations(t *testing.T) {
	ctx := context.Background()
	b, err := Open(ctx, wvtest.URL(t), &Options{Namespace: uniqueNS(t, "hybrid")})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Drop(ctx)
	words := []string{"fox", "search", "vector", "hybrid", "rank", "fusion", "memory", "agent"}
	var put []index.Record
	for i := 0; i < 40; i++ {
		c := fmt.Sprintf("%s %s note %d", words[i%len(words)], words[(i*3+1)%len(words)], i)
		put = append(put, indextest.Rec(fmt.Sprintf("https://h.example/%d", i), 0, c, uint64(i+7)))
	}
	if err := b.Apply(ctx, &driver.Batch{Put: put}); err != nil {
		t.Fatal(err)
	}
	qv := indextest.Vec(9)
	text, err := b.SearchText(ctx, "fox fusion", 100, index.Filter{})
	if err != nil || len(text) == 0 {
		t.Fatalf("SearchText: %d, %v", len(text), err)
	}
	vec, err := b.SearchVector(ctx, qv, 100, index.Filter{})
	if err != nil || len(vec) != 40 {
		t.Fatalf("SearchVector: %d, %v", len(vec), err)
	}
	textRank, vecRank := map[string]int{}, map[string]int{}
	textScore, vecScore := map[string]float64{}, map[string]float64{}
	for i, h := range text {
		textRank[h.Record.ID], textScore[h.Record.ID] = i+1, h.Score
	}
	for i, h := range vec {
		vecRank[h.Record.ID], vecScore[h.Record.ID] = i+1, h.Score
	}

	ranked, err := b.SearchHybrid(ctx, driver.HybridQuery{Text: "fox fusion", Vector: qv, K: 10, Alpha: 0.5, Fusion: driver.FusionRanked, Similarity: true})
	if err != nil || len(ranked) != 10 {
		t.Fatalf("ranked hybrid: %d, %v", len(ranked), err)
	}
	for _, h := range ranked {
		id := h.Record.ID
		// Equal scores may come in another order: a rank is right when the
		// single search has this hit's score at that rank.
		okRank := func(rank int, hits []driver.Hit, want int) bool {
			if (rank == 0) != (want == 0) {
				return false
			}
			return rank == 0 || rank <= len(hits) && math.Abs(hits[rank-1].Score-hits[want-1].Score) < 1e-6
		}
		if !okRank(h.BM25Rank, text, textRank[id]) || !okRank(h.VectorRank, vec, vecRank[id]) {
			t.Fatalf("%s: ranks bm25 %d vector %d, single searches say %d and %d\n%s", id, h.BM25Rank, h.VectorRank, textRank[id], vecRank[id], h.Explain)
		}
		var want float64
		for _, r := range []int{h.BM25Rank, h.VectorRank} {
			if r > 0 {
				want += 0.5 / float64(60+r-1)
			}
		}
		if math.Abs(h.Score-want) > 1e-6 {
			t.Fatalf("%s: fused %v, want %v from its ranks", id, h.Score, want)
		}
	}

	rel, err := b.SearchHybrid(ctx, driver.HybridQuery{Text: "fox fusion", Vector: qv, K: 10, Alpha: 0.7, Fusion: driver.FusionRelative})
	if err != nil || len(rel) != 10 {
		t.Fatalf("relative hybrid: %d, %v", len(rel), err)
	}
	for i, h := range rel {
		id := h.Record.ID
		if h.InBM25 != (textRank[id] > 0) || math.Abs(h.BM25Score-textScore[id]) > 1e-4*math.Max(1, textScore[id]) {
			t.Fatalf("%s: bm25 score %v (in=%v), SearchText says %v\n%s", id, h.BM25Score, h.InBM25, textScore[id], h.Explain)
		}
		if !h.InVector || math.Abs(h.VectorSimilarity-vecScore[id]) > 1e-4 {
			t.Fatalf("%s: similarity %v, SearchVector says %v", id, h.VectorSimilarity, vecScore[id])
		}
		if i > 0 && h.Score > rel[i-1].Score {
			t.Fatalf("relative hits not in descending score")
		}
	}

	// Every hit carries its true similarity, whichever list it came from,
	// and no vector.
	for _, h := range ranked {
		if math.Abs(h.VectorSimilarity-vecScore[h.Record.ID]) > 1e-4 || h.Record.Vector != nil {
			t.Fatalf("%s: similarity %v, SearchVector says %v", h.Record.ID, h.VectorSimilarity, vecScore[h.Record.ID])
		}
	}
	// Filters apply to both sides.
	fh, err := b.SearchHybrid(ctx, driver.HybridQuery{Text: "fox", Vector: qv, K: 10, Alpha: 0.5, Fusion: driver.FusionRanked, Filter: index.Filter{SourceURL: "https://h.example/3"}})
	if err != nil || len(fh) != 1 || fh[0].Record.SourceURL != "https://h.example/3" {
		t.Fatalf("filtered hybrid: %v, %v", len(fh), err)
	}
	// A zero vector leaves the BM25 side alone.
	if zh, err := b.SearchHybrid(ctx, driver.HybridQuery{Text: "fox fusion", Vector: make([]float32, indextest.Dim), K: 100, Alpha: 0.5}); err != nil || len(zh) != len(text) {
		t.Fatalf("hybrid with a zero vector: %d hits, want the %d of SearchText; %v", len(zh), len(text), err)
	}
	// A blank query with a zero vector matches nothing.
	if z, err := b.SearchHybrid(ctx, driver.HybridQuery{Text: "  ", Vector: make([]float32, indextest.Dim), K: 5}); err != nil || len(z) != 0 {
		t.Fatalf("empty hybrid query: %v, %v", z, err)
	}
}

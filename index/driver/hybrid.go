package driver

import (
	"context"

	"github.com/ragmem/ragmem/index"
)

// Fusion methods a HybridSearcher may be asked for.
const (
	FusionRanked   = "ranked"   // reciprocal rank fusion: Σ weight/(60 + rank)
	FusionRelative = "relative" // min-max normalised scores, weighted by alpha
)

// HybridQuery is one native hybrid query: BM25 over Text and vector
// similarity to Vector, fused by the backend.
type HybridQuery struct {
	Text   string    // the query text (BM25 side)
	Vector []float32 // the query embedding (vector side)
	K      int       // at most K hits
	Fusion string    // FusionRanked or FusionRelative
	Alpha  float64   // weight of the vector side in [0, 1]; the BM25 side weighs 1−Alpha
	Filter index.Filter
	// Similarity asks for every hit's cosine similarity to Vector, whichever
	// list it came from (a backend may have to fetch the hits' vectors).
	Similarity bool
}

// HybridHit is one fused result. Rank and score fields the backend does not
// report are zero.
type HybridHit struct {
	Record           index.Record // Vector is nil
	Score            float64      // the fused score, descending
	BM25Rank         int          // 1-based rank in the BM25 list; 0 = absent or not reported
	BM25Score        float64      // the BM25 score; 0 = absent or not reported
	VectorRank       int          // 1-based rank in the vector list; 0 = absent or not reported
	VectorSimilarity float64      // cosine similarity to the query; 0 = not reported
	InBM25, InVector bool         // whether the hit came from each list, when the backend says
	Explain          string       // the backend's own explanation, verbatim
}

// HybridSearcher is implemented by backends that fuse BM25 and vector
// results themselves in one query (for example Weaviate). It is optional:
// search falls back to running both sides and fusing them in ragmem.
// Implementations must be safe for concurrent use.
type HybridSearcher interface {
	SearchHybrid(ctx context.Context, q HybridQuery) ([]HybridHit, error)
}

package search

import (
	"context"

	"github.com/ragmem/ragmem/index"
	"github.com/ragmem/ragmem/index/driver"
)

// nativeHybridRetriever is a Retriever whose store can fuse a hybrid query
// itself in one request (for example a Weaviate backend); *engine.Index
// implements it. Search uses it for hybrid queries when NativeHybrid reports
// true and the options can be expressed natively.
type nativeHybridRetriever interface {
	Retriever
	NativeHybrid() bool
	Hybrid(ctx context.Context, query string, q driver.HybridQuery) ([]driver.HybridHit, error)
}

// nativeRRFK is the k of the backend's ranked fusion (Weaviate's is fixed).
const nativeRRFK = 60

// searchNative runs a hybrid query through the store's own fusion. ok is
// false when the store has none or the options cannot be expressed by it
// (an RRF k other than 60, DBSF, per-query weighting); Search then fuses in
// ragmem.
//
// Mapping: RRF is ranked fusion with the same alpha, its scores doubled so
// that with equal weights (alpha 0.5) they read Σ 1/(60 + i) over the lists
// a result is in, with i its 0-based position; relative fusion is relative-score fusion with
// the same alpha. The threshold keeps, as in ragmem's own fusion, a result
// that passes on either side: its cosine similarity is at least the
// threshold, or it is a BM25 match whose score is at least threshold × the
// best BM25 score among the fused candidates (where the store reports BM25
// scores: Weaviate does for relative fusion; with ranked fusion, which
// reports only ranks, every BM25 match passes). The store's candidate pools
// are its own (Weaviate: 100 per side); the fused list is cut to
// max(2·TopK, 10) candidates before the threshold and TopK apply. Without a
// threshold no similarity is asked for (it costs fetching vectors), and
// results carry only what the store's fusion reports.
func searchNative(ctx context.Context, r Retriever, query string, f index.Filter, o *Options, rc *recall) ([]Result, bool, error) {
	nr, ok := r.(nativeHybridRetriever)
	if !ok || o.Mode != Hybrid || !nr.NativeHybrid() || o.Fusion == DBSF || o.Agreement > 0 || (o.Fusion == RRF && o.RRFK != nativeRRFK) {
		return nil, false, nil
	}
	q := driver.HybridQuery{K: o.TopK, Filter: f}
	if o.SimilarityThreshold >= 0 {
		q.K, q.Similarity = max(2*o.TopK, 10), true
	}
	if rc != nil {
		q.K = max(q.K, o.CandidatePool) // memory signals rerank a pool
	}
	method := ""
	scale := 1.0
	switch o.Fusion {
	case Relative:
		q.Fusion, q.Alpha = driver.FusionRelative, o.Alpha
		method = "native " + methodName(o.Fusion, o.RRFK, o.Alpha, o.weightedBy, false, 0)
	default:
		// The backend weights ranked fusion as alpha·vector + (1−alpha)·BM25;
		// doubled, that is ragmem's weighted RRF (weights 2·alpha, 2·(1−alpha)).
		q.Fusion, q.Alpha, scale = driver.FusionRanked, o.Alpha, 2
		method = "native " + methodName(o.Fusion, nativeRRFK, o.Alpha, o.weightedBy, false, 0)
	}
	hits, err := nr.Hybrid(ctx, query, q)
	if err != nil {
		return nil, true, err
	}
	bestBM25 := 0.0
	for _, h := range hits {
		bestBM25 = max(bestBM25, h.BM25Score)
	}
	out := make([]Result, 0, len(hits))
	for _, h := range hits {
		if thr := o.SimilarityThreshold; thr >= 0 {
			textOK := h.InBM25 && (h.BM25Score == 0 || bestBM25 > 0 && h.BM25Score/bestBM25 >= thr)
			vecOK := h.VectorSimilarity >= thr
			if !textOK && !vecOK {
				continue
			}
		}
		s := h.Score * scale
		out = append(out, Result{Record: h.Record, Score: s, Explanation: Explanation{
			BM25Rank: h.BM25Rank, BM25Score: h.BM25Score,
			VectorRank: h.VectorRank, VectorSimilarity: h.VectorSimilarity,
			Fused: s, Method: method,
		}})
	}
	sortResults(out)
	out = rc.boost(out)
	if len(out) > o.TopK {
		out = out[:o.TopK]
	}
	return out, true, nil
}

package engine

import (
	"context"
	"math"

	"github.com/ragmem/ragmem/index/driver"
)

// Vectors returns the stored vectors of ids (L2-normalised), in the order
// asked, nil for a record the store does not hold.
func (ix *Index) Vectors(ctx context.Context, ids []string) ([][]float32, error) {
	recs, err := ix.be.Get(ctx, ids)
	if err != nil {
		return nil, err
	}
	by := make(map[string][]float32, len(recs))
	for i := range recs {
		by[recs[i].ID] = recs[i].Vector
	}
	out := make([][]float32, len(ids))
	for i, id := range ids {
		out[i] = by[id]
	}
	return out, nil
}

// Similarities returns sims with sims[j][i] the dot product of the stored
// vector of ids[i] with vecs[j] (their cosine similarity when vecs[j] has
// unit length), NaN for a record the store does not hold. A backend that
// scores in place (driver.Scorer) does it without copying the records.
func (ix *Index) Similarities(ctx context.Context, vecs [][]float32, ids []string) ([][]float64, error) {
	if s, ok := ix.be.(driver.Scorer); ok {
		return s.Similarities(ctx, vecs, ids)
	}
	stored, err := ix.Vectors(ctx, ids)
	if err != nil {
		return nil, err
	}
	out := make([][]float64, len(vecs))
	for j, v := range vecs {
		out[j] = make([]float64, len(ids))
		for i, s := range stored {
			out[j][i] = dot(v, s)
		}
	}
	return out, nil
}

// dot is the dot product of a and b, NaN when their lengths differ (a
// record without a vector).
func dot(a, b []float32) float64 {
	if len(a) != len(b) || len(a) == 0 {
		return math.NaN()
	}
	var s float64
	for i := range a {
		s += float64(a[i]) * float64(b[i])
	}
	return s
}

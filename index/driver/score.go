package driver

import (
	"context"
)

// Scorer is implemented by backends that can score stored records against
// query vectors in place, without copying the records out (index/local). It
// is optional: engine.Index scores the vectors Get returns for other backends.
// Implementations must be safe for concurrent use.
type Scorer interface {
	// Similarities returns sims with sims[j][i] the dot product of the
	// stored vector of ids[i] with vecs[j] (the cosine similarity, as stored
	// vectors are L2-normalised, when vecs[j] is too), or NaN when the
	// backend holds no record ids[i] or it has no vector. Every vecs[j] has
	// the store's dimension.
	Similarities(ctx context.Context, vecs [][]float32, ids []string) ([][]float64, error)
}

package local

import (
	"context"
	"fmt"
	"math"

	"github.com/viterin/vek/vek32"

	"github.com/ragmem/ragmem/index/driver"
)

var _ driver.Scorer = (*Backend)(nil)

// Similarities implements driver.Scorer over the vectors the records hold
// (mapped from the snapshot or kept since their write), under the read lock
// searches take.
func (b *Backend) Similarities(ctx context.Context, vecs [][]float32, ids []string) ([][]float64, error) {
	b.mu.RLock()
	defer b.mu.RUnlock()
	if err := b.readable(); err != nil {
		return nil, err
	}
	for _, v := range vecs {
		if b.dim != 0 && len(v) != b.dim {
			return nil, fmt.Errorf("%w: query vector has %d dimensions, the store holds %d", driver.ErrInvalid, len(v), b.dim)
		}
	}
	out := make([][]float64, len(vecs))
	for j := range out {
		out[j] = make([]float64, len(ids))
	}
	for i, id := range ids {
		if i%256 == 255 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		r := b.records[id]
		for j, v := range vecs {
			if r == nil || len(r.Vector) != len(v) {
				out[j][i] = math.NaN()
				continue
			}
			out[j][i] = float64(vek32.Dot(v, r.Vector))
		}
	}
	return out, nil
}

package engine

import (
	"context"
	"errors"

	"github.com/ragmem/ragmem/index/driver"
)

// ErrNoNativeHybrid is returned by Hybrid when the backend does not fuse
// hybrid queries itself.
var ErrNoNativeHybrid = errors.New("index: backend has no native hybrid search")

// NativeHybrid reports whether the backend fuses BM25 and vector results
// itself in one query (driver.HybridSearcher), as Weaviate does.
func (ix *Index) NativeHybrid() bool {
	_, ok := ix.be.(driver.HybridSearcher)
	return ok
}

// Hybrid embeds query and runs the backend's own hybrid search with q (whose
// Text and Vector it sets).
func (ix *Index) Hybrid(ctx context.Context, query string, q driver.HybridQuery) ([]driver.HybridHit, error) {
	hs, ok := ix.be.(driver.HybridSearcher)
	if !ok {
		return nil, ErrNoNativeHybrid
	}
	v, err := ix.EmbedQuery(ctx, query)
	if err != nil {
		return nil, err
	}
	q.Text, q.Vector = query, v
	return hs.SearchHybrid(ctx, q)
}

package local

import (
	"context"
	"fmt"

	"github.com/ragmem/ragmem/index/driver"
	"github.com/ragmem/ragmem/index/vecindex"
)

// The vector side. chromem-go holds the records' vectors; queries are
// answered by a vecindex.Index over the same vectors (referenced, not
// copied): an exact scan with SIMD dot products below its graph threshold,
// an HNSW graph with an exact scan of the vectors it does not cover yet
// above it, and metadata filters applied before scoring. chromem-go's own
// QueryEmbedding is an exhaustive scan that sends every document through a
// channel before scoring it, about five times slower than vecindex's scan
// at 10,000 chunks and far slower than the graph beyond.

// vecItem is the vecindex entry of a record.
func vecItem(r *driver.Record) vecindex.Item {
	return vecindex.Item{ID: r.ID, Vector: r.Vector, DocType: r.DocType, Source: r.SourceURL}
}

// loadVectors indexes every record; it runs on open with the records final.
func (b *Backend) loadVectors() error {
	b.vx = vecindex.New(b.vecOpts)
	items := make([]vecindex.Item, 0, len(b.records))
	for _, r := range b.records {
		items = append(items, vecItem(r))
	}
	if err := b.vx.Add(items); err != nil {
		return fmt.Errorf("index: load vector index: %w", err)
	}
	return nil
}

// applyVectors brings the vector index in line with an applied batch.
func (b *Backend) applyVectors(del []string, put []driver.Record) {
	if len(del) > 0 {
		b.vx.Delete(del...)
	}
	if len(put) == 0 {
		return
	}
	items := make([]vecindex.Item, len(put))
	for i := range put {
		items[i] = vecItem(&put[i])
	}
	if err := b.vx.Add(items); err != nil {
		// Cannot happen for validated records; the data is durable and the
		// next open rebuilds the index from it.
		b.log.Error("index: vector index rejected a batch", "err", err)
	}
}

// searchVectors answers SearchVector from the vector index.
func (b *Backend) searchVectors(ctx context.Context, vec []float32, k int, f driver.Filter) ([]driver.Hit, error) {
	b.mu.RLock()
	defer b.mu.RUnlock()
	if err := b.readable(); err != nil {
		return nil, err
	}
	if b.dim != 0 && len(vec) != b.dim {
		return nil, fmt.Errorf("%w: query vector has %d dimensions, the store holds %d", driver.ErrInvalid, len(vec), b.dim)
	}
	var norm float64
	for _, x := range vec {
		norm += float64(x) * float64(x)
	}
	if norm == 0 || norm != norm || norm > 1e30 {
		return nil, nil // a zero or non-finite query matches nothing
	}
	vf := vecindex.Filter{DocTypes: f.DocTypes, Source: f.SourceURL}
	if f.RecordLevel() {
		// Called under b.mu, which this search holds for reading.
		vf.Accept = func(id string) bool {
			r := b.records[id]
			return r != nil && f.Match(r)
		}
	}
	res, err := b.vx.Search(vec, k, &vf)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", driver.ErrInvalid, err)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	hits := make([]driver.Hit, 0, len(res))
	for _, r := range res {
		rec, ok := b.records[r.ID]
		if !ok {
			continue // removed by a mutation in flight
		}
		hits = append(hits, driver.Hit{Record: copyRecord(rec, false), Score: float64(r.Score)})
	}
	return hits, nil
}

// VectorIndexStats describes the vector index (for benchmarks and stats).
func (b *Backend) VectorIndexStats() vecindex.Stats { return b.vx.Stats() }

// VectorRecall measures the recall@k of the vector index's approximate
// search against its exact scan over the given query vectors, unfiltered.
func (b *Backend) VectorRecall(queries [][]float32, k int) (float64, error) {
	return b.vx.Recall(queries, k, nil)
}

// VectorSearchExact runs the vector index's exhaustive scan for the top k
// knowledge chunks (benchmarks compare it with the approximate search).
func (b *Backend) VectorSearchExact(vec []float32, k int) ([]vecindex.Result, error) {
	return b.vx.SearchExact(vec, k, &vecindex.Filter{DocTypes: []string{driver.DocKnowledge}})
}

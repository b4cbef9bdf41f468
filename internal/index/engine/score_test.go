package engine_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"testing"

	"github.com/ragmem/ragmem/index"
	"github.com/ragmem/ragmem/index/driver"
	"github.com/ragmem/ragmem/internal/index/engine"
	"github.com/ragmem/ragmem/internal/index/local"
)

// hidden is a backend that does not score in place, so engine.Index scores
// the vectors Get returns (as it does for Weaviate).
type hidden struct{ driver.Backend }

// Similarities is each stored vector's dot product with each query vector,
// computed in place by the local backend and from Get's copies otherwise,
// with NaN for an id the store does not hold; Vectors returns the stored
// vectors in the order asked.
func TestSimilarities(t *testing.T) {
	ctx := context.Background()
	for _, inPlace := range []bool{true, false} {
		t.Run(fmt.Sprint("in place ", inPlace), func(t *testing.T) {
			be, err := local.Open(ctx, t.TempDir(), nil)
			if err != nil {
				t.Fatal(err)
			}
			var b driver.Backend = be
			if !inPlace {
				b = hidden{be}
			}
			if _, ok := b.(driver.Scorer); ok != inPlace {
				t.Fatalf("scorer %v", ok)
			}
			ix, err := engine.Open(ctx, "", &engine.Options{Backend: b})
			if err != nil {
				t.Fatal(err)
			}
			defer ix.Close()
			var docs []index.Document
			for i := range 4 {
				docs = append(docs, index.Document{SourceURL: fmt.Sprintf("https://s.test/%d", i), Content: fmt.Sprintf("document %d about topic%d and word%d.", i, i%2, i)})
			}
			if _, err := ix.AddMany(ctx, docs); err != nil {
				t.Fatal(err)
			}
			hits, err := ix.FullText(ctx, "document", 10, index.Filter{})
			if err != nil || len(hits) != 4 {
				t.Fatalf("hits %d %v", len(hits), err)
			}
			ids := []string{hits[2].Record.ID, "no-such-id", hits[0].Record.ID}
			stored, err := ix.Vectors(ctx, ids)
			if err != nil || len(stored) != 3 || stored[1] != nil || len(stored[0]) == 0 || len(stored[2]) != len(stored[0]) {
				t.Fatalf("vectors %v %v", len(stored), err)
			}
			q1, _ := ix.EmbedQuery(ctx, "topic1 word3")
			q2 := stored[2]
			sims, err := ix.Similarities(ctx, [][]float32{q1, q2}, ids)
			if err != nil {
				t.Fatal(err)
			}
			for j, q := range [][]float32{q1, q2} {
				for i, v := range stored {
					want := math.NaN()
					if v != nil {
						want = 0
						for d := range v {
							want += float64(v[d]) * float64(q[d])
						}
					}
					got := sims[j][i]
					if math.IsNaN(want) != math.IsNaN(got) || (!math.IsNaN(want) && math.Abs(got-want) > 1e-5) {
						t.Errorf("sims[%d][%d] = %v, want %v", j, i, got, want)
					}
				}
			}
			if math.Abs(sims[1][2]-1) > 1e-5 {
				t.Errorf("a stored vector's similarity to itself is %v", sims[1][2])
			}
			if inPlace {
				if _, err := ix.Similarities(ctx, [][]float32{{1, 2}}, ids); !errors.Is(err, driver.ErrInvalid) {
					t.Errorf("a query of the wrong dimension: %v", err)
				}
			}
		})
	}
}

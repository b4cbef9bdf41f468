package vecindex

import (
	"context"
	"fmt"
	"math/rand"
	"testing"

	chromem "github.com/philippgille/chromem-go"
)

// BenchmarkSearch compares, on the same 384-dimensional clustered vectors,
// the exact scan, the HNSW graph (top 50, the hybrid candidate pool) and
// chromem-go's exhaustive QueryEmbedding. RAGMEM_BENCH_N is not read: the
// sizes are 10k and 100k; `ragmem bench` covers 1M.
func BenchmarkSearch(b *testing.B) {
	for _, n := range []int{10000, 100000} {
		r := rand.New(rand.NewSource(1))
		vecs := clustered(r, n, 384)
		x := New(&Options{GraphThreshold: -1}) // the graph is built below, in the foreground
		items := make([]Item, n)
		for i, v := range vecs {
			items[i] = Item{ID: fmt.Sprint(i), Vector: v, DocType: "knowledge"}
		}
		if err := x.Add(items); err != nil {
			b.Fatal(err)
		}
		queries := make([][]float32, 64)
		for i := range queries {
			queries[i] = unit(gauss(r, 384, 1))
			copy(queries[i], vecs[r.Intn(n)])
		}
		f := &Filter{DocTypes: []string{"knowledge"}}
		b.Run(fmt.Sprintf("exact/n=%d", n), func(b *testing.B) {
			i := 0
			for b.Loop() {
				x.SearchExact(queries[i%len(queries)], 50, f)
				i++
			}
		})
		x.mu.Lock()
		x.opt.GraphThreshold = 1000
		x.g = newGraph(x.opt)
		for x.g.n < len(x.vecs) {
			x.g.insert(x)
		}
		x.mu.Unlock()
		rec, _ := x.Recall(queries, 10, f)
		b.Run(fmt.Sprintf("graph/n=%d", n), func(b *testing.B) {
			i := 0
			for b.Loop() {
				x.Search(queries[i%len(queries)], 50, f)
				i++
			}
			b.ReportMetric(rec, "recall@10")
		})
		x.Close()
		db := chromem.NewDB()
		coll, _ := db.CreateCollection("b", nil, func(context.Context, string) ([]float32, error) { return nil, nil })
		for i, v := range vecs {
			coll.AddDocument(context.Background(), chromem.Document{ID: fmt.Sprint(i), Embedding: v, Metadata: map[string]string{"docType": "knowledge"}, Content: "x"})
		}
		b.Run(fmt.Sprintf("chromem/n=%d", n), func(b *testing.B) {
			i := 0
			for b.Loop() {
				coll.QueryEmbedding(context.Background(), queries[i%len(queries)], 50, map[string]string{"docType": "knowledge"}, nil)
				i++
			}
		})
	}
}

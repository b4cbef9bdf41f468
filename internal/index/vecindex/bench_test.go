package vecindex

import (
	"context"
	"fmt"
	"math/rand"
	"testing"

	chromem "github.com/philippgille/chromem-go"
)

// BenchmarkSearch compares, on the same 384-dimensional clustered vectors
// (no data set needed), the exact scan, Search (the 1-bit scan with exact
// rescoring; top 100, the hybrid candidate pool) and chromem-go's
// exhaustive QueryEmbedding. The real embedders' vectors are in
// BenchmarkIndexSearch and BenchmarkDenseExperiment (experiment_test.go).
//
//	go test -run xxx -bench 'Search$' -benchtime 50x ./internal/index/vecindex
func BenchmarkSearch(b *testing.B) {
	for _, n := range []int{10000, 100000} {
		r := rand.New(rand.NewSource(1))
		vecs := clustered(r, n, 384)
		x := New(nil)
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
				x.SearchExact(queries[i%len(queries)], 100, f)
				i++
			}
		})
		rec, _ := x.Recall(queries, 10, f)
		b.Run(fmt.Sprintf("index/n=%d", n), func(b *testing.B) {
			i := 0
			for b.Loop() {
				x.Search(queries[i%len(queries)], 100, f)
				i++
			}
			b.ReportMetric(rec, "recall@10")
		})
		db := chromem.NewDB()
		coll, _ := db.CreateCollection("b", nil, func(context.Context, string) ([]float32, error) { return nil, nil })
		for i, v := range vecs {
			coll.AddDocument(context.Background(), chromem.Document{ID: fmt.Sprint(i), Embedding: v, Metadata: map[string]string{"docType": "knowledge"}, Content: "x"})
		}
		b.Run(fmt.Sprintf("chromem/n=%d", n), func(b *testing.B) {
			i := 0
			for b.Loop() {
				coll.QueryEmbedding(context.Background(), queries[i%len(queries)], 100, map[string]string{"docType": "knowledge"}, nil)
				i++
			}
		})
	}
}

package vecindex

import (
	"context"
	"fmt"
	"testing"

	"github.com/ragmem/ragmem/embed"
	"github.com/ragmem/ragmem/internal/benchdata"
)

// TestQuantisedScanRecall embeds a synthetic corpus and known-item queries
// with the default lexical embedder (sparse queries: the quantised scan
// answers them) and requires recall@10 and @50 >= 0.98 against the exact
// float32 scan.
func TestQuantisedScanRecall(t *testing.T) {
	n := 5000
	emb := embed.Default()
	texts := make([]string, n)
	for i := range texts {
		d := benchdata.NewSynthDoc(int64(i), i, 110)
		texts[i] = d.Title + "\n" + d.Text
	}
	vecs, err := emb.Embed(context.Background(), texts)
	if err != nil {
		t.Fatal(err)
	}
	qs := benchdata.NewSynth(9)
	var qv [][]float32
	for i := 0; i < 200; i++ {
		d := benchdata.NewSynthDoc(int64(i*23), i*23, 110)
		v, _ := emb.Embed(context.Background(), []string{qs.KnownItem("q", d).Text})
		qv = append(qv, v[0])
	}
	x := New(nil)
	defer x.Close()
	items := make([]Item, n)
	for i := range items {
		items[i] = Item{ID: fmt.Sprint(i), Vector: vecs[i], DocType: "knowledge"}
	}
	if err := x.Add(items); err != nil {
		t.Fatal(err)
	}
	if nz := len(sparsify(qv[0]).dims); nz > x.Dim()/2 {
		t.Fatalf("query has %d non-zero dimensions; the test needs sparse queries", nz)
	}
	for _, k := range []int{10, 50} {
		r, err := x.Recall(qv, k, &Filter{DocTypes: []string{"knowledge"}})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("recall@%d %.4f", k, r)
		if r < 0.98 {
			t.Errorf("recall@%d = %.4f, want >= 0.98", k, r)
		}
	}
	if st := x.Stats(); st.GraphNodes != 0 {
		t.Errorf("sparse queries started a graph: %+v", st)
	}
}

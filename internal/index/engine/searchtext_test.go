package engine

import (
	"math"
	"testing"

	"github.com/ragmem/ragmem/index"

	"github.com/ragmem/ragmem/index/driver"
	"github.com/ragmem/ragmem/internal/index/local"
)

// The embedder and the BM25 index see the same text of a record
// (driver.SearchText: title, headings, content): a word that only a
// heading holds is found by both, and every stored vector is the embedding
// of that text. (index/weaviate checks its BM25 terms in records_test.go.)
func TestEmbedderAndBM25SearchTheSameText(t *testing.T) {
	// No separate title field: only the searched text holds the headings.
	dir := t.TempDir()
	be, err := local.Open(ctx, dir, &local.Options{FullText: &local.FullTextOptions{TitleWeight: -1}})
	if err != nil {
		t.Fatal(err)
	}
	ix := open(t, dir, &Options{Backend: be})
	defer ix.Close()
	src := "https://example.com/travel"
	recs := []index.Record{
		{ID: "z", SourceURL: src, Title: "Travel notes", HeadingPath: []string{"Travel notes", "Zanzibar"}, Content: "Ferries leave the harbour every morning.", End: 40},
		{ID: "l", SourceURL: src, Title: "Travel notes", HeadingPath: []string{"Lisbon"}, Content: "Trams climb the hills.", Position: 1, End: 22},
	}
	if err := ix.Put(ctx, recs); err != nil {
		t.Fatal(err)
	}
	recs, err = ix.Records(ctx, index.Filter{SourceURL: src})
	if err != nil || len(recs) != 2 {
		t.Fatalf("%d records, %v", len(recs), err)
	}
	var zanzibar string
	for i := range recs {
		r := &recs[i]
		if r.ID == "z" {
			zanzibar = r.ID
		}
		vs, err := ix.Embedder().Embed(ctx, []string{driver.SearchText(r)})
		if err != nil {
			t.Fatal(err)
		}
		hits, err := ix.VectorByEmbedding(ctx, vs[0], 1, index.Filter{SourceURL: src})
		if err != nil || len(hits) != 1 || hits[0].Record.ID != r.ID || math.Abs(hits[0].Score-1) > 1e-4 {
			t.Errorf("record %q: the stored vector is not the embedding of its search text: %+v, %v", r.Content, hits, err)
		}
	}
	if zanzibar == "" {
		t.Fatalf("record z is missing: %+v", recs)
	}
	for name, search := range map[string]func() ([]driver.Hit, error){
		"BM25":   func() ([]driver.Hit, error) { return ix.FullText(ctx, "zanzibar", 1, index.Filter{}) },
		"vector": func() ([]driver.Hit, error) { return ix.Vector(ctx, "zanzibar", 1, index.Filter{}) },
	} {
		hits, err := search()
		if err != nil || len(hits) == 0 || hits[0].Record.ID != zanzibar {
			t.Errorf("%s search for a word only the heading holds: %+v, %v", name, hits, err)
		}
	}
}

package rag_test

import (
	"context"
	"testing"

	"github.com/ragmem/ragmem/index"
	"github.com/ragmem/ragmem/internal/embed"
	"github.com/ragmem/ragmem/rag"
	"github.com/ragmem/ragmem/search"
)

// What a search leaves zero comes from the engine's configuration, and
// only what it leaves zero.
func TestSearchDefaultsComeFromConfig(t *testing.T) {
	c := rag.Config{SearchMode: search.FullText, TopK: 2, SimilarityThreshold: -1, Fusion: search.RRF}
	if o := c.SearchOptions(nil); o.Mode != search.FullText || o.TopK != 2 || o.SimilarityThreshold != -1 || o.Fusion != search.RRF {
		t.Fatalf("nil options: %+v", o)
	}
	if o := c.SearchOptions(&search.Options{Mode: search.Vector, TopK: 7, SimilarityThreshold: 0.5, Fusion: search.Relative}); o.Mode != search.Vector || o.TopK != 7 || o.SimilarityThreshold != 0.5 || o.Fusion != search.Relative {
		t.Fatalf("given options overridden: %+v", o)
	}
	if o := (rag.Config{}).SearchOptions(&search.Options{}); o.Mode != search.Hybrid || o.TopK != search.DefaultTopK || o.SimilarityThreshold != search.DefaultThreshold || o.Fusion != search.DefaultFusion {
		t.Fatalf("zero config: %+v", o)
	}

	ctx := context.Background()
	eng, err := rag.Open(ctx, t.TempDir(), &rag.Options{Embedder: embed.NewLexical(nil), Config: c})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	for i, s := range []string{"otters sleep", "otters swim", "otters eat", "otters play"} {
		if _, err := eng.IndexDocument(ctx, index.Document{SourceURL: "https://zoo.example/" + string(rune('a'+i)), Content: "Sea " + s + " in kelp forests."}); err != nil {
			t.Fatal(err)
		}
	}
	res, rep, err := eng.RetrieveReport(ctx, "otters", &search.Options{DocTypes: []string{index.DocKnowledge}})
	if err != nil || rep.Mode != search.FullText || len(res) != 2 {
		t.Fatalf("partial options: mode %s, %d results, %v", rep.Mode, len(res), err)
	}
}

package rag

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/ragmem/ragmem/index"
	"github.com/ragmem/ragmem/internal/embed"
	"github.com/ragmem/ragmem/search"
)

// semanticLexical embeds as the lexical embedder does without saying that it
// matches words, so the engine treats it as a semantic embedder.
type semanticLexical struct{ *embed.Lexical }

func (s semanticLexical) MatchesWords() bool { return false }

// With a semantic embedder the engine measures the store's fusion weight
// once it has enough chunks, and hybrid search says it uses it.
func TestEngineCalibratesFusion(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	emb := semanticLexical{embed.NewLexical(nil)}
	e, err := Open(ctx, dir, &Options{Embedder: emb, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	var docs []index.Document
	for i := 0; i < search.MinCalibrationChunks+10; i++ {
		docs = append(docs, index.Document{SourceURL: fmt.Sprintf("https://example.test/%d", i),
			Content: fmt.Sprintf("Note %d: topic%d is discussed with word%d and term%d in some detail here.", i, i, i*7, i*13)})
	}
	if _, err := e.IndexDocuments(ctx, docs); err != nil {
		t.Fatal(err)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	e, err = Open(ctx, dir, &Options{Embedder: emb, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	cal, ok := search.StoredCalibration(ctx, e.Store())
	if !ok || cal.Types[index.DocKnowledge].Chunks != len(docs) {
		t.Fatalf("calibration %+v %v", cal, ok)
	}
	rs, err := e.Retrieve(ctx, "topic7 word49", &search.Options{Mode: search.Hybrid, TopK: 3})
	if err != nil || len(rs) == 0 || !strings.Contains(rs[0].Explanation.Method, ", calibrated") {
		t.Fatalf("search: %+v %v", rs, err)
	}
}

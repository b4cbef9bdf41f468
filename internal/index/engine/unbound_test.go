package engine

import (
	"context"
	"errors"
	"testing"

	"github.com/ragmem/ragmem/index"

	"github.com/ragmem/ragmem/internal/embed"
)

func randproj(dim int) embed.Embedder {
	return embed.NewRandProj(&embed.RandProjOptions{Dimension: dim})
}

// failing is an embedder whose every call fails, as one whose server is
// down.
type failing struct{ embed.Embedder }

var errDown = errors.New("embedder down")

func (failing) Embed(context.Context, []string) ([][]float32, error) { return nil, errDown }

// TestStoreWaitsForTheRightEmbedder: a store without records is not bound
// to an embedder. Opening it, searching it or a write that fails records
// nothing; the first write records the embedder that made it, and only
// then is another refused. A store whose records were all removed takes a
// new embedder (and its dimension) the same way.
func TestStoreWaitsForTheRightEmbedder(t *testing.T) {
	dir := t.TempDir()
	recorded := func(ix *Index) string {
		t.Helper()
		v, _, err := ix.Backend().Meta(ctx, metaEmbedder)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	// Opened with the default, searched: nothing recorded.
	ix := open(t, dir, nil)
	if _, err := ix.Vector(ctx, "zebras", 3, index.Filter{}); err != nil {
		t.Fatal(err)
	}
	if r := recorded(ix); r != "" {
		t.Fatalf("opening and searching recorded %q", r)
	}
	if _, ok, _ := ix.EmbedderRecord(ctx); ok {
		t.Error("EmbedderRecord of a new store")
	}
	if st, _ := ix.Stats(ctx); st.EmbedderSpec != "" {
		t.Errorf("stats of a new store say %q is recorded", st.EmbedderSpec)
	}
	ix.Close()
	// A first write that fails (the embedder is down) records nothing.
	ix = open(t, dir, &Options{Embedder: failing{randproj(16)}})
	if _, err := ix.Add(ctx, index.Document{SourceURL: "u", Content: "Zebras have stripes."}); !errors.Is(err, errDown) {
		t.Fatalf("add with the embedder down: %v", err)
	}
	if r := recorded(ix); r != "" {
		t.Fatalf("a failed write recorded %q", r)
	}
	ix.Close()
	// Another embedder is welcome, and its first write binds the store.
	ix = open(t, dir, &Options{Embedder: randproj(24)})
	if _, err := ix.Add(ctx, index.Document{SourceURL: "u", Content: "Zebras have stripes."}); err != nil {
		t.Fatal(err)
	}
	if r := recorded(ix); r != randproj(24).Identity() {
		t.Fatalf("recorded %q after the first write", r)
	}
	if rec, ok, _ := ix.EmbedderRecord(ctx); !ok || rec.Spec.String() != "randproj:dim=24" {
		t.Errorf("record %+v %v", rec, ok)
	}
	ix.Close()
	if _, err := Open(ctx, dir, &Options{Embedder: randproj(32)}); !errors.Is(err, ErrEmbedderMismatch) {
		t.Fatalf("another embedder on a store with records: %v", err)
	}
	// Every record removed: the store takes a new embedder again, of the
	// dimension its vectors had.
	ix = open(t, dir, &Options{Embedder: randproj(24)})
	if _, err := ix.RemoveSource(ctx, "u"); err != nil {
		t.Fatal(err)
	}
	ix.Close()
	other := embed.NewLexical(&embed.LexicalOptions{Dimension: 24})
	ix = open(t, dir, &Options{Embedder: other})
	if _, err := ix.Add(ctx, index.Document{SourceURL: "v", Content: "Okapis are shy."}); err != nil {
		t.Fatal(err)
	}
	if hits, err := ix.Vector(ctx, "okapis", 3, index.Filter{}); err != nil || len(hits) != 1 {
		t.Fatalf("search after rebinding: %v %v", hits, err)
	}
	if r := recorded(ix); r != other.Identity() {
		t.Errorf("after rebinding: %q", r)
	}
	ix.Close()
	open(t, dir, nil).Close() // rebuilt from the record
}

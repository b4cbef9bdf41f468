package engine_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"testing"

	"github.com/ragmem/ragmem/index"
	"github.com/ragmem/ragmem/index/driver"
	"github.com/ragmem/ragmem/index/indextest"
	"github.com/ragmem/ragmem/internal/index/engine"
	"github.com/ragmem/ragmem/internal/index/local"
	"github.com/ragmem/ragmem/internal/index/weaviate"
	"github.com/ragmem/ragmem/internal/wvtest"
)

// TestCopyLocalToWeaviate copies knowledge, preferences and memories with
// their vectors and settings, and refuses a destination of another embedder.
func TestCopyLocalToWeaviate(t *testing.T) {
	ctx := context.Background()
	src, err := local.Open(ctx, t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	var put []index.Record
	for i := 0; i < 30; i++ {
		r := indextest.Rec(fmt.Sprintf("https://copy.example/%d", i/3), i%3, fmt.Sprintf("chunk %d", i), uint64(i))
		switch {
		case i >= 27:
			r.DocType = index.DocMemory
		case i >= 24:
			r.DocType, r.Attrs = index.DocPreference, map[string]string{"preferenceType": "style"}
		}
		put = append(put, r)
	}
	if err := src.Apply(ctx, &driver.Batch{Put: put}); err != nil {
		t.Fatal(err)
	}
	_ = src.SetMeta(ctx, "embedder", "lexical-v1/d16")
	_ = src.SetMeta(ctx, "dimension", "16")

	url := wvtest.URL(t)
	dst, err := weaviate.Open(ctx, url, &weaviate.Options{Namespace: fmt.Sprintf("copy%d", os.Getpid())})
	if err != nil {
		t.Fatal(err)
	}
	defer dst.Drop(ctx)
	rep, err := engine.Copy(ctx, dst, src, &engine.CopyOptions{BatchRecords: 7})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Verified || rep.Records != 30 || rep.Chunks[index.DocMemory] != 3 || rep.Chunks[index.DocPreference] != 3 {
		t.Fatalf("report %+v", rep)
	}
	want, _ := src.Records(ctx, index.Filter{})
	got, err := dst.Records(ctx, index.Filter{})
	if err != nil || len(got) != len(want) {
		t.Fatalf("destination has %d records, want %d (%v)", len(got), len(want), err)
	}
	for i := range want {
		g, w := got[i], want[i]
		if g.ID != w.ID || g.Content != w.Content || g.DocType != w.DocType || len(g.Vector) != len(w.Vector) || g.Attrs["preferenceType"] != w.Attrs["preferenceType"] {
			t.Fatalf("record %d: got %+v, want %+v", i, g, w)
		}
		for j := range w.Vector {
			if g.Vector[j] != w.Vector[j] {
				t.Fatalf("record %s: vector differs at %d", w.ID, j)
			}
		}
	}
	if v, ok, _ := dst.Meta(ctx, "embedder"); !ok || v != "lexical-v1/d16" {
		t.Fatalf("embedder setting %q %v", v, ok)
	}
	// Copying again changes nothing.
	if rep, err := engine.Copy(ctx, dst, src, nil); err != nil || rep.Records != 30 {
		t.Fatalf("second copy: %+v %v", rep, err)
	}
	if st, _ := dst.Stats(ctx); st.Records != 30 {
		t.Fatalf("after a second copy: %d records", st.Records)
	}
	// Another embedder's store is refused before anything is written.
	_ = src.SetMeta(ctx, "embedder", "openai:other/d16")
	if _, err := engine.Copy(ctx, dst, src, nil); !errors.Is(err, engine.ErrCopyMismatch) {
		t.Fatalf("copy of another embedder's store: %v", err)
	}
}

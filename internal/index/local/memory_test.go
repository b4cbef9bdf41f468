package local

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/ragmem/ragmem/index"
	"github.com/ragmem/ragmem/index/driver"
	"github.com/ragmem/ragmem/index/indextest"
)

// TestInMemory runs mutations of every kind through checkpoints on an
// in-memory store, checks that both indexes agree with the records and
// answer queries, and that nothing was written to disk.
func TestInMemory(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "store")
	b, err := Open(ctx, dir, &Options{InMemory: true, CheckpointBytes: 2048, CheckpointRatio: -1})
	if err != nil {
		t.Fatal(err)
	}
	src := "https://x.example/"
	for i := 0; i < 40; i++ {
		bt := driver.Batch{DeleteSources: []string{src}, Put: []index.Record{indextest.Rec(src, 0, "alpha words", uint64(i)), indextest.Rec(src, 1, "beta words", 2)}}
		if i%3 == 0 {
			bt.Put = append(bt.Put, indextest.Rec("https://y.example/", i, "gamma words", 3))
		}
		if err := b.Apply(ctx, &bt); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.SetMeta(ctx, "embedder", "test"); err != nil {
		t.Fatal(err)
	}
	if probs, err := b.Check(ctx); err != nil || len(probs) != 0 {
		t.Fatalf("check: %v %v", probs, err)
	}
	st, err := b.Stats(ctx)
	if err != nil || st.Records != 2+14 || st.Sources != 2 || st.LastSync.IsZero() {
		t.Fatalf("stats %+v %v", st, err)
	}
	hits, err := b.SearchText(ctx, "gamma", 5, index.Filter{})
	if err != nil || len(hits) != 5 {
		t.Fatalf("full text: %v %v", hits, err)
	}
	vhits, err := b.SearchVector(ctx, indextest.Rec(src, 0, "", 2).Vector, 3, index.Filter{SourceURL: src})
	if err != nil || len(vhits) != 2 {
		t.Fatalf("vector: %v %v", vhits, err)
	}
	names, err := b.fs.ReadDir(dir)
	if err != nil || len(names) < 2 {
		t.Fatalf("the in-memory directory holds %v (%v); want a journal and a snapshot", names, err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("the in-memory store touched the disk: %v", err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	// A second in-memory store of the same name is a new, empty one.
	b, err = Open(ctx, dir, &Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if st, _ := b.Stats(ctx); st.Records != 0 {
		t.Fatalf("a new in-memory store holds %d records", st.Records)
	}
}

func BenchmarkOpenInMemory(b *testing.B) {
	ctx := context.Background()
	for i := 0; i < b.N; i++ {
		s, err := Open(ctx, "bench", &Options{InMemory: true})
		if err != nil {
			b.Fatal(err)
		}
		if err := s.Close(); err != nil {
			b.Fatal(err)
		}
	}
}

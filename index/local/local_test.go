package local

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/ragmem/ragmem/index/driver"
	"github.com/ragmem/ragmem/index/indextest"
)

func TestConformance(t *testing.T) {
	root := t.TempDir()
	indextest.Run(t, func(t *testing.T, key string) driver.Backend {
		b, err := Open(context.Background(), filepath.Join(root, key), nil)
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		return b
	})
}

// TestIndexesHoldExactlyTheRecords runs mutations of every kind and checks,
// through Check, that bleve and chromem-go agree with the records.
func TestIndexesHoldExactlyTheRecords(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	b, err := Open(ctx, dir, &Options{CheckpointBytes: 4096})
	if err != nil {
		t.Fatal(err)
	}
	src := "https://x.example/"
	steps := []driver.Batch{
		{Put: []driver.Record{indextest.Rec(src, 0, "alpha", 1), indextest.Rec(src, 1, "beta", 2)}},
		{Put: []driver.Record{indextest.Rec("https://y.example/", 0, "gamma", 3)}},
		{DeleteSources: []string{src}, Put: []driver.Record{indextest.Rec(src, 5, "delta", 4)}},
		{DeleteIDs: []string{indextest.Rec("https://y.example/", 0, "", 0).ID}},
		{DeleteSources: []string{src}},
	}
	for i := range steps {
		if err := b.Apply(ctx, &steps[i]); err != nil {
			t.Fatal(err)
		}
		probs, err := b.Check(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(probs) != 0 {
			t.Fatalf("after step %d: %v", i, probs)
		}
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	b, err = Open(ctx, dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if probs, _ := b.Check(ctx); len(probs) != 0 {
		t.Fatalf("after reopen: %v", probs)
	}
	if r := b.Recovery(); !r.OpenedCleanShut || len(r.Problems) != 0 {
		t.Fatalf("clean reopen reported recovery work: %+v", r)
	}
}

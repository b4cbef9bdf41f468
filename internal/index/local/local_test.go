package local

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/ragmem/ragmem/index"
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
	b, err := Open(ctx, dir, &Options{CheckpointBytes: 4096, CheckpointRatio: -1})
	if err != nil {
		t.Fatal(err)
	}
	src := "https://x.example/"
	steps := []driver.Batch{
		{Put: []index.Record{indextest.Rec(src, 0, "alpha", 1), indextest.Rec(src, 1, "beta", 2)}},
		{Put: []index.Record{indextest.Rec("https://y.example/", 0, "gamma", 3)}},
		{DeleteSources: []string{src}, Put: []index.Record{indextest.Rec(src, 5, "delta", 4)}},
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

// TestRecordsByTypeAndSource checks Records, which reads the by-type and
// by-source sets, against a filter applied to every record, through puts,
// a record changing type and source, deletes, and a reopen.
func TestRecordsByTypeAndSource(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	b, err := Open(ctx, dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	types := []string{index.DocKnowledge, index.DocPreference, "memory"}
	var put []index.Record
	for i := 0; i < 30; i++ {
		r := indextest.Rec(fmt.Sprintf("https://s%d.example/", i%4), i, fmt.Sprint("text ", i), uint64(i+1))
		r.DocType = types[i%3]
		put = append(put, r)
	}
	moved := put[7]
	moved.DocType, moved.SourceURL = index.DocKnowledge, "https://moved.example/"
	filters := []index.Filter{
		{},
		{DocTypes: []string{index.DocPreference}},
		{DocTypes: []string{index.DocKnowledge, "memory", index.DocKnowledge}},
		{DocTypes: []string{"nothing"}},
		{SourceURL: "https://s1.example/"},
		{SourceURL: "https://moved.example/", DocTypes: []string{index.DocKnowledge}},
		{SourceURL: "https://s2.example/", DocTypes: []string{"memory"}},
	}
	check := func(step string, want map[string]index.Record) {
		t.Helper()
		for _, f := range filters {
			got, err := b.Records(ctx, f)
			if err != nil {
				t.Fatal(err)
			}
			n := 0
			for _, r := range want {
				if f.Match(&r) {
					n++
				}
			}
			if len(got) != n {
				t.Fatalf("%s: filter %+v: %d records, want %d", step, f, len(got), n)
			}
			for _, r := range got {
				w, ok := want[r.ID]
				if !ok || !f.Match(&r) || w.DocType != r.DocType || w.SourceURL != r.SourceURL {
					t.Fatalf("%s: filter %+v returned %s (%s, %s)", step, f, r.ID, r.DocType, r.SourceURL)
				}
			}
		}
	}
	want := map[string]index.Record{}
	for _, r := range put {
		want[r.ID] = r
	}
	if err := b.Apply(ctx, &driver.Batch{Put: put}); err != nil {
		t.Fatal(err)
	}
	check("put", want)
	if err := b.Apply(ctx, &driver.Batch{Put: []index.Record{moved}}); err != nil {
		t.Fatal(err)
	}
	want[moved.ID] = moved
	check("moved", want)
	if err := b.Apply(ctx, &driver.Batch{DeleteSources: []string{"https://s1.example/"}, DeleteIDs: []string{put[2].ID}}); err != nil {
		t.Fatal(err)
	}
	for id, r := range want {
		if r.SourceURL == "https://s1.example/" || id == put[2].ID {
			delete(want, id)
		}
	}
	check("deleted", want)
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if b, err = Open(ctx, dir, nil); err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	check("reopened", want)
}

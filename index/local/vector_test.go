package local

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/ragmem/ragmem/index/driver"
	"github.com/ragmem/ragmem/index/vecindex"
	"github.com/ragmem/ragmem/internal/wal"
)

// denseBatch is n records of one source each with random unit vectors of
// dim dimensions.
func denseBatch(r *rand.Rand, from, n, dim int) *driver.Batch {
	bt := &driver.Batch{}
	for i := from; i < from+n; i++ {
		v := make([]float32, dim)
		var s float64
		for j := range v {
			v[j] = float32(r.NormFloat64())
			s += float64(v[j]) * float64(v[j])
		}
		for j := range v {
			v[j] = float32(float64(v[j]) / math.Sqrt(s))
		}
		src := fmt.Sprintf("https://v/%d", i)
		bt.DeleteSources = append(bt.DeleteSources, src)
		bt.Put = append(bt.Put, driver.Record{ID: fmt.Sprintf("v%d", i), SourceURL: src, Title: "t", Content: fmt.Sprintf("chunk %d", i), DocType: driver.DocKnowledge, Vector: v})
	}
	return bt
}

// TestVectorsMappedAndIndexReady checks the vector side of the storage: after
// a checkpoint the records' vectors are rows of the mapped snapshot, not heap
// copies; Get returns copies; a reopen loads the persisted codes (no
// rebuild) and answers the first query through the 1-bit scan with the
// same results; and a vector written after the snapshot is searchable as
// soon as its write returns, and is mapped by the next checkpoint.
func TestVectorsMappedAndIndexReady(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	opts := &Options{Logger: quietLogger(), Vectors: &vecindex.Options{ExactBelow: 100}}
	b := mustOpen(t, dir, opts)
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 2000; i += 500 {
		if err := b.Apply(ctx, denseBatch(r, i, 500, 48)); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Checkpoint(ctx); err != nil {
		t.Fatal(err)
	}
	if !canMap || !littleEndian {
		t.Skip("vectors are read into memory on this platform")
	}
	b.mu.RLock()
	for id, rec := range b.records {
		if !b.vecs.contains(rec.Vector) {
			b.mu.RUnlock()
			t.Fatalf("%s: vector not in the mapped snapshot after a checkpoint", id)
		}
	}
	b.mu.RUnlock()
	got, err := b.Get(ctx, []string{"v7"})
	if err != nil || len(got) != 1 || b.vecs.contains(got[0].Vector) {
		t.Fatalf("Get returned %v (%v); want a copy of the vector", got, err)
	}
	q := got[0].Vector
	before, err := b.SearchVector(ctx, q, 10, driver.Filter{})
	if err != nil || len(before) == 0 || before[0].Record.ID != "v7" {
		t.Fatalf("search before reopen: %v %v", before, err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}

	b = mustOpen(t, dir, opts)
	defer b.Close()
	if rep := b.Recovery(); rep.VectorIndexRebuilt || len(rep.Problems) > 0 {
		t.Fatalf("reopen rebuilt the vector index: %+v", rep)
	}
	after, err := b.SearchVector(ctx, q, 10, driver.Filter{})
	if err != nil || len(after) != len(before) {
		t.Fatalf("search after reopen: %v %v", after, err)
	}
	for i := range after {
		if after[i].Record.ID != before[i].Record.ID {
			t.Fatalf("result %d after reopen is %s, before %s", i, after[i].Record.ID, before[i].Record.ID)
		}
	}
	// Written after the snapshot: searchable once Apply returns, in memory.
	nb := denseBatch(r, 5000, 1, 48)
	if err := b.Apply(ctx, nb); err != nil {
		t.Fatal(err)
	}
	hits, err := b.SearchVector(ctx, nb.Put[0].Vector, 1, driver.Filter{})
	if err != nil || len(hits) != 1 || hits[0].Record.ID != "v5000" {
		t.Fatalf("fresh write not found: %v %v", hits, err)
	}
	b.mu.RLock()
	inMap := b.vecs.contains(b.records["v5000"].Vector)
	b.mu.RUnlock()
	if inMap {
		t.Fatal("a vector written after the snapshot is in its mapping")
	}
	if err := b.Checkpoint(ctx); err != nil {
		t.Fatal(err)
	}
	b.mu.RLock()
	inMap = b.vecs.contains(b.records["v5000"].Vector)
	b.mu.RUnlock()
	if !inMap {
		t.Fatal("the next checkpoint did not map the new vector")
	}
	if hits, _ := b.SearchVector(ctx, nb.Put[0].Vector, 1, driver.Filter{}); len(hits) != 1 || hits[0].Record.ID != "v5000" {
		t.Fatalf("after the checkpoint: %v", hits)
	}
	assertClean(t, b, 2001)
}

// TestFormat1SnapshotUpgraded opens a store whose snapshot is in the format
// older versions wrote (vectors inline, one not of unit length): everything
// reads back, Close rewrites it in format 2 with its codes, and the next
// open maps it and loads the codes.
func TestFormat1SnapshotUpgraded(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	b := mustOpen(t, dir, &Options{Logger: quietLogger()})
	putSource(t, b, "https://a/", 3, 1)
	putSource(t, b, "https://b/", 2, 10)
	recs, err := b.Records(ctx, driver.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	seq := b.seq
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	// Replace the store's files by a format-1 snapshot at the same sequence.
	for _, pat := range []string{"snap-*", "vidx-*", "journal-*"} {
		m, _ := filepath.Glob(filepath.Join(dir, pat))
		for _, f := range m {
			os.Remove(f)
		}
	}
	ptrs := make([]*driver.Record, len(recs))
	for i := range recs {
		ptrs[i] = &recs[i]
	}
	long := append([]float32(nil), recs[0].Vector...)
	for i := range long {
		long[i] *= 3
	}
	ptrs[0] = &driver.Record{}
	*ptrs[0] = recs[0]
	ptrs[0].Vector = long
	var buf bytes.Buffer
	if err := encodeSnapshotV1(&buf, seq, map[string]string{"embedder": "test"}, ptrs); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, snapName(seq)), buf.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	b = mustOpen(t, dir, &Options{Logger: quietLogger()})
	if b.snapVersion != 1 {
		t.Fatalf("opened format %d", b.snapVersion)
	}
	got, _ := b.Get(ctx, []string{recs[0].ID})
	if len(got) != 1 || !sameDirection(got[0].Vector, recs[0].Vector) || math.Abs(float64(dot(got[0].Vector, got[0].Vector))-1) > 1e-5 {
		t.Fatalf("format-1 record's vector not read back at unit length: %v", got)
	}
	assertClean(t, b, len(recs))
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	sd, err := readSnapshot(wal.OS{}, filepath.Join(dir, snapName(seq)))
	if err != nil || sd.version != 2 {
		t.Fatalf("Close did not rewrite the snapshot in format 2: %v", err)
	}
	sd.vecs.close()
	b = mustOpen(t, dir, &Options{Logger: quietLogger()})
	defer b.Close()
	if r := b.Recovery(); r.VectorIndexRebuilt || b.snapVersion != 2 {
		t.Fatalf("reopen after the upgrade: format %d, %+v", b.snapVersion, r)
	}
	assertClean(t, b, len(recs))
}

func dot(a, b []float32) float32 {
	var s float32
	for i := range a {
		s += a[i] * b[i]
	}
	return s
}

// TestEmptiedStoreReopens: a store whose every record was removed keeps its
// dimension; its snapshot has no rows and reopens.
func TestEmptiedStoreReopens(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	b := mustOpen(t, dir, &Options{Logger: quietLogger()})
	putSource(t, b, "https://a/", 3, 1)
	if err := b.Apply(ctx, removeSource("https://a/")); err != nil {
		t.Fatal(err)
	}
	if err := b.Checkpoint(ctx); err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	b = mustOpen(t, dir, &Options{Logger: quietLogger()})
	defer b.Close()
	assertClean(t, b, 0)
	putSource(t, b, "https://b/", 2, 5)
	assertClean(t, b, 2)
}

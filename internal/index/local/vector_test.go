package local

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ragmem/ragmem/index"
	"github.com/ragmem/ragmem/index/driver"
	"github.com/ragmem/ragmem/internal/index/vecindex"
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
		bt.Put = append(bt.Put, index.Record{ID: fmt.Sprintf("v%d", i), SourceURL: src, Title: "t", Content: fmt.Sprintf("chunk %d", i), DocType: index.DocKnowledge, Vector: v})
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
	before, err := b.SearchVector(ctx, q, 10, index.Filter{})
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
	after, err := b.SearchVector(ctx, q, 10, index.Filter{})
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
	hits, err := b.SearchVector(ctx, nb.Put[0].Vector, 1, index.Filter{})
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
	if hits, _ := b.SearchVector(ctx, nb.Put[0].Vector, 1, index.Filter{}); len(hits) != 1 || hits[0].Record.ID != "v5000" {
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
	recs, err := b.Records(ctx, index.Filter{})
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
	ptrs := make([]*index.Record, len(recs))
	for i := range recs {
		ptrs[i] = &recs[i]
	}
	long := append([]float32(nil), recs[0].Vector...)
	for i := range long {
		long[i] *= 3
	}
	ptrs[0] = &index.Record{}
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

// TestSnapshotVectorsVerifiedAndMapped: the open path maps each record to its
// own row of the snapshot's vector section (every vector read back after a
// reopen is bit for bit the one written), and it verifies the section: a
// single flipped byte in one row of the newest snapshot makes open
// quarantine that snapshot and recover every vector exactly from the
// fallback snapshot and its journal, and a read-only Check names the
// damaged snapshot.
func TestSnapshotVectorsVerifiedAndMapped(t *testing.T) {
	ctx := context.Background()
	const dim = 24
	dir := filepath.Join(t.TempDir(), "store")
	b := mustOpen(t, dir, &Options{Logger: quietLogger()})
	r := rand.New(rand.NewPCG(3, 4))
	want := map[string][]float32{}
	for from := 0; from < 900; from += 300 {
		bt := denseBatch(r, from, 300, dim)
		for _, rec := range bt.Put {
			want[rec.ID] = rec.Vector
		}
		if err := b.Apply(ctx, bt); err != nil {
			t.Fatal(err)
		}
		if from < 600 {
			if err := b.Checkpoint(ctx); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := b.Checkpoint(ctx); err != nil {
		t.Fatal(err)
	}
	newest := snapName(b.snapSeq)
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	ids := make([]string, 0, len(want))
	for id := range want {
		ids = append(ids, id)
	}
	sameVectors := func(b *Backend, what string) {
		t.Helper()
		got, err := b.Get(ctx, ids)
		if err != nil || len(got) != len(ids) {
			t.Fatalf("%s: Get returned %d of %d records (%v)", what, len(got), len(ids), err)
		}
		for _, rec := range got {
			w := want[rec.ID]
			if len(rec.Vector) != len(w) {
				t.Fatalf("%s: %s has %d dimensions, want %d", what, rec.ID, len(rec.Vector), len(w))
			}
			for i := range w {
				if math.Float32bits(rec.Vector[i]) != math.Float32bits(w[i]) {
					t.Fatalf("%s: %s dimension %d is %v, written %v", what, rec.ID, i, rec.Vector[i], w[i])
				}
			}
		}
	}

	// A clean reopen maps the rows back to their records.
	clean := filepath.Join(t.TempDir(), "clean")
	copyDir(t, dir, clean)
	b = mustOpen(t, clean, &Options{Logger: quietLogger()})
	if rep := b.Recovery(); rep.Snapshot != newest || len(rep.Quarantined) > 0 || rep.VectorIndexRebuilt {
		t.Fatalf("clean reopen: %+v", rep)
	}
	sameVectors(b, "clean reopen")
	b.Close()

	// One byte of row 457 of the newest snapshot's vector section.
	damage := func(to string) {
		copyDir(t, dir, to)
		path := filepath.Join(to, newest)
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		data[snapVecOff+457*dim*4+5] ^= 0x10
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	ro := filepath.Join(t.TempDir(), "readonly")
	damage(ro)
	b = mustOpen(t, ro, &Options{Logger: quietLogger(), ReadOnly: true})
	probs, err := b.Check(ctx)
	b.Close()
	named := false
	for _, p := range probs {
		named = named || strings.Contains(p.String(), newest)
	}
	if err != nil || !named {
		t.Fatalf("read-only Check of a damaged vector section: %v %+v", err, probs)
	}

	dmg := filepath.Join(t.TempDir(), "damaged")
	damage(dmg)
	b = mustOpen(t, dmg, &Options{Logger: quietLogger()})
	defer b.Close()
	rep := b.Recovery()
	quarantined := false
	for _, q := range rep.Quarantined {
		quarantined = quarantined || strings.Contains(q, newest)
	}
	if !quarantined || rep.Snapshot == newest || rep.Lost != "" {
		t.Fatalf("open of a damaged vector section: %+v", rep)
	}
	sameVectors(b, "recovered from the fallback")
	assertClean(t, b, len(want))
}

// TestOpenComputesFullTextStats: a reopened store has the full-text
// collection statistics of its index computed by Open, so that its first
// search does not walk the index for them, and they are the statistics a
// search computes.
func TestOpenComputesFullTextStats(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	b := mustOpen(t, dir, &Options{Logger: quietLogger()})
	if err := b.Apply(ctx, denseBatch(rand.New(rand.NewPCG(5, 6)), 0, 50, 8)); err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	b = mustOpen(t, dir, &Options{Logger: quietLogger()})
	defer b.Close()
	b.ft.statsMu.Lock()
	got := b.ft.stats
	b.ft.statsMu.Unlock()
	if got.reader == nil || got.body.docs != 50 {
		t.Fatalf("statistics after open: %d documents (reader set: %v), want 50", got.body.docs, got.reader != nil)
	}
	if _, err := b.SearchText(ctx, "chunk", 5, index.Filter{}); err != nil {
		t.Fatal(err)
	}
	b.ft.statsMu.Lock()
	after := b.ft.stats
	b.ft.statsMu.Unlock()
	if after.reader != got.reader {
		t.Fatalf("a search computed the statistics again (%+v), open had %+v", after, got)
	}
}

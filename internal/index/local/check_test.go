package local

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/ragmem/ragmem/index"
	"github.com/ragmem/ragmem/index/driver"
	"github.com/ragmem/ragmem/index/indextest"
	"github.com/ragmem/ragmem/internal/index/vecindex"
	"github.com/ragmem/ragmem/internal/wal"
)

func problemKeys(probs []Problem) []string {
	var out []string
	for _, p := range probs {
		out = append(out, p.Kind+" "+p.ID+" "+p.Source)
	}
	sort.Strings(out)
	return out
}

// TestCheckFindsAndRepairs damages each index behind the store's back in
// every way Check knows, and checks that each is named, that Repair fixes
// all but the one only re-indexing can fix, and that the fix survives a reopen.
func TestCheckFindsAndRepairs(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	b := mustOpen(t, dir, &Options{Logger: quietLogger()})
	for i, src := range []string{"https://a/", "https://b/", "https://c/", "https://d/"} {
		if err := b.Apply(ctx, putVersion(src, 4+i)); err != nil { // 1..4 chunks
			t.Fatal(err)
		}
	}
	// A snapshot with its vector codes, and one chunk in the journal after it.
	if err := b.Checkpoint(ctx); err != nil {
		t.Fatal(err)
	}
	if err := b.Apply(ctx, putVersion("https://e/", 1)); err != nil {
		t.Fatal(err)
	}
	if probs, err := b.Check(ctx); err != nil || len(probs) > 0 {
		t.Fatalf("healthy store: %v %v", probs, err)
	}
	a, bb, c := versionRecords("https://a/", 4)[0], versionRecords("https://b/", 5)[0], versionRecords("https://c/", 6)[0]
	d := versionRecords("https://c/", 6)[1]
	if err := b.bl.Delete(a.ID); err != nil { // missing from bleve
		t.Fatal(err)
	}
	ghost := versionRecords("https://ghost/", 1)[0]
	if err := b.bl.Index(ghost.ID, storeDoc(&ghost)); err != nil { // extra in bleve
		t.Fatal(err)
	}
	changed := bb
	changed.Content = "something else entirely"
	if err := b.bl.Index(bb.ID, storeDoc(&changed)); err != nil { // stale in bleve
		t.Fatal(err)
	}
	b.vx.Delete(c.ID)                                                  // missing from vectors
	if err := b.vx.Add([]vecindex.Item{vecItem(&ghost)}); err != nil { // extra in vectors
		t.Fatal(err)
	}
	other := vecItem(&d) // stale in vectors: another vector
	other.Vector = indextest.Vec(999)
	if err := b.vx.Add([]vecindex.Item{other}); err != nil {
		t.Fatal(err)
	}
	codes := filepath.Join(dir, codesName(b.snapSeq)) // damaged codes file
	data, err := os.ReadFile(codes)
	if err != nil {
		t.Fatal(err)
	}
	data[len(data)/2] ^= 0x10
	if err := os.WriteFile(codes, data, 0o600); err != nil {
		t.Fatal(err)
	}
	// A chunk of another version of d put next to d's own: mixed versions.
	odd := versionRecords("https://d/", 9)[1]
	if err := b.Apply(ctx, &driver.Batch{Put: []index.Record{odd}}); err != nil {
		t.Fatal(err)
	}
	probs, err := b.Check(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"fulltext-extra " + ghost.ID + " https://ghost/",
		"fulltext-missing " + a.ID + " https://a/",
		"fulltext-stale " + bb.ID + " https://b/",
		"mixed-version  https://d/",
		"vector-codes " + codesName(b.snapSeq) + " ",
		"vector-extra " + ghost.ID + " ",
		"vector-missing " + c.ID + " https://c/",
		"vector-stale " + d.ID + " https://c/",
	}
	if got := problemKeys(probs); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("check found\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	fixed, remaining, err := b.Repair(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(fixed) != 7 || len(remaining) != 1 || remaining[0].Kind != "mixed-version" {
		t.Fatalf("repair fixed %v, left %v", fixed, remaining)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	b = mustOpen(t, dir, &Options{Logger: quietLogger()})
	defer b.Close()
	if r := b.Recovery(); !r.OpenedCleanShut || len(r.Problems) > 0 {
		t.Fatalf("reopen after repair had work to do: %v", r.Problems)
	}
	probs, _ = b.Check(ctx)
	if len(probs) != 1 || probs[0].Kind != "mixed-version" {
		t.Fatalf("after reopen: %v", probs)
	}
}

func fileDigest(t *testing.T, dir string) string {
	t.Helper()
	var parts []string
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Name() == "LOCK" {
			return nil
		}
		data, _ := os.ReadFile(p)
		rel, _ := filepath.Rel(dir, p)
		parts = append(parts, fmt.Sprintf("%s %x", rel, sha256.Sum256(data)))
		return nil
	})
	return strings.Join(parts, "\n")
}

// snapshotEachWrite returns the directory of a closed store written three
// times (https://s/0 to 2, versions 1 to 3) with a snapshot after each.
func snapshotEachWrite(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	b := mustOpen(t, dir, &Options{Logger: quietLogger(), CheckpointBytes: 1, CheckpointRatio: -1})
	for i := 0; i < 3; i++ {
		if err := b.Apply(context.Background(), putVersion(fmt.Sprintf("https://s/%d", i), i+1)); err != nil {
			t.Fatal(err)
		}
	}
	b.Close()
	return dir
}

// TestReadOnlyReportsAndChangesNothing opens a crashed, damaged store
// read-only: Check reports what a normal open would repair, writes are
// refused, and not a byte on disk changes. A normal open then repairs it.
func TestReadOnlyReportsAndChangesNothing(t *testing.T) {
	ctx := context.Background()
	dir := snapshotEachWrite(t)
	old := filepath.Join(t.TempDir(), "bleve")
	copyDir(t, filepath.Join(dir, "bleve"), old)
	b := mustOpen(t, dir, &Options{Logger: quietLogger()})
	want := state{"https://s/0": 1, "https://s/1": 2, "https://s/2": 3}
	for i := 0; i < 2; i++ {
		if err := b.Apply(ctx, putVersion("https://s/9", 10+i)); err != nil {
			t.Fatal(err)
		}
	}
	want["https://s/9"] = 11
	jpath := b.journal.Path()
	abandon(b)
	os.RemoveAll(filepath.Join(dir, "bleve")) // bleve lost its last writes
	copyDir(t, old, filepath.Join(dir, "bleve"))
	appendBytes(t, jpath, []byte{50, 0, 0, 0, 1, 2}) // an unfinished write
	snaps, _ := filepath.Glob(filepath.Join(dir, "snap-*.rgs"))
	data, _ := os.ReadFile(snaps[0]) // the older snapshot is damaged
	data[len(data)/2] ^= 1
	os.WriteFile(snaps[0], data, 0o600)

	before := fileDigest(t, dir)
	ro := mustOpen(t, dir, &Options{ReadOnly: true})
	probs, err := ro.Check(ctx)
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]bool{}
	for _, p := range probs {
		kinds[p.Kind] = true
	}
	for _, k := range []string{"journal-tail", "fulltext-behind", "damaged"} {
		if !kinds[k] {
			t.Errorf("read-only check does not report %s: %v", k, probs)
		}
	}
	if got, err := readState(ctx, ro); err != nil || got.String() != want.String() {
		t.Errorf("read-only store holds %v (%v), want %v", got, err, want)
	}
	if err := ro.Apply(ctx, putVersion("https://x/", 1)); !errors.Is(err, ErrReadOnly) {
		t.Errorf("write to a read-only store: %v", err)
	}
	if err := ro.Close(); err != nil {
		t.Fatal(err)
	}
	if after := fileDigest(t, dir); after != before {
		t.Fatalf("a read-only open changed the store:\n%s\n---\n%s", before, after)
	}
	// A normal open recovers all but the damaged fallback snapshot, which it
	// does not read; Repair quarantines that.
	b = mustOpen(t, dir, &Options{Logger: quietLogger()})
	defer b.Close()
	probs, _ = b.Check(ctx)
	if len(probs) != 1 || probs[0].Kind != "damaged" || probs[0].ID != filepath.Base(snaps[0]) {
		t.Fatalf("after a normal open: %v", probs)
	}
	if _, remaining, err := b.Repair(ctx); err != nil || len(remaining) > 0 {
		t.Fatalf("repair: %v %v", remaining, err)
	}
	expectState(t, b, want)
}

// TestCheckReadsFallbackJournal: a journal kept only for the fallback
// snapshot is not read at open (everything in it is in the newer snapshot),
// so damage to it costs nothing at open; Check reads it and reports it.
func TestCheckReadsFallbackJournal(t *testing.T) {
	ctx := context.Background()
	dir := snapshotEachWrite(t)
	js, err := listGenerations(wal.OS{}, dir, journalPrefix, journalSuffix)
	if err != nil || len(js) < 2 {
		t.Fatalf("journals %v (%v): want at least two", js, err)
	}
	old := filepath.Join(dir, journalName(js[0]))
	data, err := os.ReadFile(old)
	if err != nil || len(data) < 16 {
		t.Fatalf("journal %s: %d bytes (%v)", old, len(data), err)
	}
	data[len(data)-3] ^= 0x40
	if err := os.WriteFile(old, data, 0o600); err != nil {
		t.Fatal(err)
	}
	b := mustOpen(t, dir, &Options{Logger: quietLogger()})
	defer b.Close()
	if r := b.Recovery(); len(r.Problems) > 0 || r.Lost != "" {
		t.Fatalf("open read the fallback journal: %+v", r)
	}
	probs, err := b.Check(ctx)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, p := range probs {
		found = found || p.Kind == "damaged" && p.ID == journalName(js[0])
	}
	if !found {
		t.Fatalf("Check did not report the damaged fallback journal %s: %v", journalName(js[0]), probs)
	}
}

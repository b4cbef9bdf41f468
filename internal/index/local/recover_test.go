package local

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ragmem/ragmem/index"
	"github.com/ragmem/ragmem/index/driver"
	"github.com/ragmem/ragmem/index/indextest"
	"github.com/ragmem/ragmem/internal/wal"
)

// abandon drops a backend the way a crash would: its files stay as they
// are (no checkpoint, no closed marker), only the process's handles go.
func abandon(b *Backend) {
	b.mu.Lock()
	b.closed = true
	b.mu.Unlock()
	if b.bl != nil {
		b.bl.Close()
	}
	b.journal.close()
	b.lock.Unlock()
}

func appendBytes(t *testing.T, path string, data []byte) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(data); err != nil {
		t.Fatal(err)
	}
	f.Close()
}

func mustOpen(t *testing.T, dir string, opts *Options) *Backend {
	t.Helper()
	b, err := Open(context.Background(), dir, opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return b
}

func putSource(t *testing.T, b *Backend, src string, n int, seed uint64) {
	t.Helper()
	var recs []index.Record
	for i := 0; i < n; i++ {
		recs = append(recs, indextest.Rec(src, i, fmt.Sprintf("%s chunk %d searchable", src, i), seed+uint64(i)))
	}
	if err := b.Apply(context.Background(), &driver.Batch{DeleteSources: []string{src}, Put: recs}); err != nil {
		t.Fatal(err)
	}
}

func assertClean(t *testing.T, b *Backend, wantRecords int) {
	t.Helper()
	probs, err := b.Check(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(probs) != 0 {
		t.Fatalf("inconsistent store: %v", probs)
	}
	st, _ := b.Stats(context.Background())
	if st.Records != wantRecords {
		t.Fatalf("records = %d, want %d", st.Records, wantRecords)
	}
}

func copyDir(t *testing.T, src, dst string) {
	t.Helper()
	if out, err := exec.Command("cp", "-a", src, dst).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v %s", err, out)
	}
}

func TestTornJournalTailIsCut(t *testing.T) {
	dir := t.TempDir()
	b := mustOpen(t, dir, nil)
	putSource(t, b, "https://a/", 3, 1)
	putSource(t, b, "https://b/", 2, 10)
	jpath := b.journal.Path()
	size := b.journal.Size()
	abandon(b)
	// Simulate a crash in the middle of appending a third operation.
	appendBytes(t, jpath, []byte{200, 1, 0, 0, 9, 9, 9, 9, 1, 2, 3})

	b = mustOpen(t, dir, nil)
	defer b.Close()
	r := b.Recovery()
	if r.TornTailBytes != 11 {
		t.Fatalf("TornTailBytes = %d, want 11 (%+v)", r.TornTailBytes, r)
	}
	if st, _ := os.Stat(jpath); st.Size() != size {
		t.Fatalf("journal size %d after recovery, want %d", st.Size(), size)
	}
	assertClean(t, b, 5)
	putSource(t, b, "https://c/", 1, 20) // appends after the cut
	assertClean(t, b, 6)
}

func TestBleveLostIsRebuilt(t *testing.T) {
	dir := t.TempDir()
	b := mustOpen(t, dir, nil)
	putSource(t, b, "https://a/", 4, 1)
	b.Close()
	if err := os.RemoveAll(filepath.Join(dir, "bleve")); err != nil {
		t.Fatal(err)
	}
	b = mustOpen(t, dir, nil)
	defer b.Close()
	if !b.Recovery().BleveRebuilt {
		t.Fatalf("bleve not rebuilt: %+v", b.Recovery())
	}
	assertClean(t, b, 4)
	hits, _ := b.SearchText(context.Background(), "searchable", 10, index.Filter{})
	if len(hits) != 4 {
		t.Fatalf("rebuilt bleve finds %d chunks", len(hits))
	}
}

func TestBleveBehindIsReplayed(t *testing.T) {
	dir := t.TempDir()
	b := mustOpen(t, dir, nil)
	putSource(t, b, "https://a/", 3, 1)
	b.Close()
	old := filepath.Join(t.TempDir(), "bleve-old")
	copyDir(t, filepath.Join(dir, "bleve"), old)
	b = mustOpen(t, dir, nil)
	putSource(t, b, "https://a/", 2, 50) // replace
	putSource(t, b, "https://b/", 2, 60)
	b.Close()
	// bleve loses its last two batches, as after a crash before they persisted.
	os.RemoveAll(filepath.Join(dir, "bleve"))
	copyDir(t, old, filepath.Join(dir, "bleve"))

	b = mustOpen(t, dir, nil)
	defer b.Close()
	if r := b.Recovery(); r.BleveReplayed != 2 || r.BleveRebuilt {
		t.Fatalf("recovery = %+v, want 2 operations replayed into bleve", r)
	}
	assertClean(t, b, 4)
}

func TestCorruptSnapshotFallsBack(t *testing.T) {
	dir := t.TempDir()
	b := mustOpen(t, dir, &Options{CheckpointBytes: 1, CheckpointRatio: -1})
	putSource(t, b, "https://a/", 2, 1) // checkpoint after each write
	putSource(t, b, "https://b/", 2, 10)
	b.Close()
	snaps, _ := listGenerations(wal.OS{}, dir, snapPrefix, snapSuffix)
	if len(snaps) < 2 {
		t.Fatalf("expected two snapshot generations, have %v", snaps)
	}
	newest := filepath.Join(dir, snapName(snaps[len(snaps)-1]))
	data, _ := os.ReadFile(newest)
	data[len(data)/2] ^= 0xff
	os.WriteFile(newest, data, 0o600)

	b = mustOpen(t, dir, nil)
	defer b.Close()
	r := b.Recovery()
	if len(r.Quarantined) != 1 {
		t.Fatalf("quarantined = %v", r.Quarantined)
	}
	assertClean(t, b, 4)
}

func TestSecondOpenIsRefused(t *testing.T) {
	dir := t.TempDir()
	b := mustOpen(t, dir, nil)
	defer b.Close()
	_, err := Open(context.Background(), dir, nil)
	if err == nil {
		t.Fatal("second Open of a locked store succeeded")
	}
	want := fmt.Sprintf("store is locked by pid %d", os.Getpid())
	if got := err.Error(); !strings.Contains(got, want) {
		t.Fatalf("error %q does not say %q", got, want)
	}
}

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

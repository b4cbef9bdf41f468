package local

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/ragmem/ragmem/index"
)

// TestDamageEveryFile truncates or corrupts, one at a time, every file of a
// small store (snapshots, the vector index's codes, journals, the closed
// marker, the lock, and each of bleve's files) at several offsets, then
// opens it. The open must not panic
// or fail; the store must then be consistent (Check clean, every source
// wholly one version, full-text search finding every chunk); and if it holds
// anything other than what was written, recovery must have said that data
// was lost. Damage to bleve or to the vector codes alone must lose nothing:
// they are rebuilt.
func TestDamageEveryFile(t *testing.T) {
	ctx := context.Background()
	template := filepath.Join(t.TempDir(), "store")
	b := mustOpen(t, template, &Options{Logger: quietLogger(), CheckpointBytes: 4 << 10, CheckpointRatio: -1})
	want := state{}
	for i := 0; i < 24; i++ {
		src := fmt.Sprintf("https://d/%d", i%7)
		if i%5 == 4 {
			if err := b.Apply(ctx, removeSource(src)); err != nil {
				t.Fatal(err)
			}
			delete(want, src)
			continue
		}
		if err := b.Apply(ctx, putVersion(src, i)); err != nil {
			t.Fatal(err)
		}
		want[src] = i
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	// The last writes stay in the journal: no checkpoint at this size.
	b = mustOpen(t, template, &Options{Logger: quietLogger()})
	for i := 30; i < 34; i++ {
		src := fmt.Sprintf("https://d/%d", i%9)
		if err := b.Apply(ctx, putVersion(src, i)); err != nil {
			t.Fatal(err)
		}
		want[src] = i
	}
	if err := b.SetMeta(ctx, "embedder", "test/d16"); err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	var files []string
	_ = filepath.WalkDir(template, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			rel, _ := filepath.Rel(template, p)
			files = append(files, rel)
		}
		return nil
	})
	sort.Strings(files)
	t.Logf("files: %v", files)
	kinds := map[string]bool{}
	for _, f := range files {
		kinds[strings.SplitN(filepath.Base(f), "-", 2)[0]] = true
	}
	for _, k := range []string{"snap", "vidx", "journal", "closed.rgm", "root.bolt", "index_meta.json"} {
		if !kinds[k] {
			t.Fatalf("the template store has no %s file: %v", k, files)
		}
	}

	type damage struct {
		name  string
		apply func(data []byte) []byte
	}
	damages := func(size int) []damage {
		var ds []damage
		seen := map[string]bool{}
		add := func(name string, f func([]byte) []byte) {
			if !seen[name] {
				seen[name] = true
				ds = append(ds, damage{name, f})
			}
		}
		for _, n := range []int{0, size / 2, size - 1} {
			if n >= 0 && n < size {
				n := n
				add(fmt.Sprintf("truncate-%d", n), func(d []byte) []byte { return d[:n] })
			}
		}
		// 12 lands in a snapshot's or journal's sequence field.
		for _, off := range []int{0, 12, size / 3, size / 2, size - 1} {
			if off >= 0 && off < size {
				off := off
				add(fmt.Sprintf("flip-%d", off), func(d []byte) []byte { d[off] ^= 0x5a; return d })
			}
		}
		return ds
	}

	cases, identical, reportedLoss := 0, 0, 0
	for _, rel := range files {
		orig, err := os.ReadFile(filepath.Join(template, rel))
		if err != nil {
			t.Fatal(err)
		}
		for _, dmg := range damages(len(orig)) {
			name := rel + "/" + dmg.name
			cases++
			dir := filepath.Join(t.TempDir(), "store")
			copyDir(t, template, dir)
			data := dmg.apply(append([]byte(nil), orig...))
			if err := os.WriteFile(filepath.Join(dir, rel), data, 0o600); err != nil {
				t.Fatal(err)
			}
			var logBuf bytes.Buffer
			b, err := openNoPanic(dir, &Options{Logger: slog.New(slog.NewTextHandler(&logBuf, nil))})
			if err != nil {
				t.Errorf("%s: open failed: %v", name, err)
				continue
			}
			r := b.Recovery()
			if rel == codesName(b.snapSeq) && !r.VectorIndexRebuilt {
				t.Errorf("%s: damaged vector codes were not rebuilt: %+v", name, r)
			}
			got, err := readState(ctx, b)
			if err != nil {
				t.Errorf("%s: store is inconsistent: %v", name, err)
			}
			probs, err := b.Check(ctx)
			if err == nil && len(probs) == 1 && probs[0].Kind == "damaged" && probs[0].ID == filepath.Base(rel) {
				// A damaged fallback snapshot, which opening does not read:
				// Check names it and Repair quarantines it.
				_, probs, err = b.Repair(ctx)
			}
			if err != nil || len(probs) > 0 {
				t.Errorf("%s: check: %v %v", name, err, probs)
			}
			hits, err := b.SearchText(ctx, "durable", 1000, index.Filter{})
			st, _ := b.Stats(ctx)
			if err != nil || len(hits) != st.Records {
				t.Errorf("%s: full-text search finds %d of %d chunks (%v)", name, len(hits), st.Records, err)
			}
			switch {
			case got.String() == want.String():
				identical++
			case strings.HasPrefix(rel, "bleve"):
				t.Errorf("%s: damage to the full-text index lost data: %v, want %v", name, got, want)
			case strings.HasPrefix(rel, codesPrefix):
				t.Errorf("%s: damage to the vector index's codes lost data: %v, want %v", name, got, want)
			case r.Lost == "":
				t.Errorf("%s: opened with %v instead of %v without reporting lost data; recovery: %+v", name, got, want, r)
			default:
				reportedLoss++
			}
			if err := b.Close(); err != nil {
				t.Errorf("%s: close: %v", name, err)
			}
			// What recovery repaired stays repaired: the next open has nothing to do.
			b, err = openNoPanic(dir, &Options{Logger: quietLogger()})
			if err != nil {
				t.Errorf("%s: second open: %v", name, err)
				continue
			}
			if r := b.Recovery(); !r.OpenedCleanShut || len(r.Problems) > 0 {
				t.Errorf("%s: second open still had work to do: %v", name, r.Problems)
			}
			b.Close()
		}
	}
	t.Logf("%d files, %d damaged copies: %d opened with all data, %d reported the data they lost", len(files), cases, identical, reportedLoss)
}

// openNoPanic opens a store, turning a panic into an error.
func openNoPanic(dir string, opts *Options) (b *Backend, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("panic: %v", p)
		}
	}()
	return Open(context.Background(), dir, opts)
}

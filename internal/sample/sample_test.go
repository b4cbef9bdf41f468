package sample

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestSameAsTestdata: the embedded corpus is testdata/corpus, file for file
// and byte for byte, so the demo shows what the tests measure.
func TestSameAsTestdata(t *testing.T) {
	want, err := filepath.Glob("../../testdata/corpus/*")
	if err != nil || len(want) == 0 {
		t.Fatalf("testdata/corpus: %v", err)
	}
	var names []string
	for _, p := range want {
		names = append(names, filepath.Base(p))
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		got, err := fs.ReadFile(Corpus(), filepath.Base(p))
		if err != nil {
			t.Fatalf("%s is not embedded: copy testdata/corpus to internal/sample/corpus", filepath.Base(p))
		}
		if !bytes.Equal(got, b) {
			t.Errorf("%s differs from testdata/corpus: copy testdata/corpus to internal/sample/corpus", filepath.Base(p))
		}
	}
	entries, err := fs.ReadDir(Corpus(), ".")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if !slices.Contains(names, e.Name()) {
			t.Errorf("%s is embedded but not in testdata/corpus", e.Name())
		}
	}
}

// TestWrite writes the corpus, leaves unchanged files alone, restores a
// changed one and keeps files of its own.
func TestWrite(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "demo", "corpus")
	paths, err := Write(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(paths) != 8 || !slices.IsSorted(paths) {
		t.Fatalf("paths: %v", paths)
	}
	own := filepath.Join(dir, "mine.txt")
	if err := os.WriteFile(own, []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(paths[0], []byte("changed"), 0o644); err != nil {
		t.Fatal(err)
	}
	st, _ := os.Stat(paths[1])
	if _, err := Write(dir); err != nil {
		t.Fatal(err)
	}
	want, _ := fs.ReadFile(Corpus(), filepath.Base(paths[0]))
	if got, _ := os.ReadFile(paths[0]); !bytes.Equal(got, want) {
		t.Fatalf("changed file not restored: %q", got)
	}
	if st2, _ := os.Stat(paths[1]); !os.SameFile(st, st2) {
		t.Fatal("an unchanged file was rewritten")
	}
	if b, _ := os.ReadFile(own); string(b) != "mine" {
		t.Fatal("a file of the folder's own was touched")
	}
	if _, err := Write(own); err == nil {
		t.Fatal("writing into a file succeeded")
	}
}

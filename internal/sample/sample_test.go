package sample

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

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

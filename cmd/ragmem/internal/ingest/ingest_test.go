package ingest

import (
	"errors"
	"path/filepath"
	"testing"

	"github.com/ragmem/ragmem/index"
)

// TestFileURLs: a file's source URL names its absolute path, escaped, and
// gives it back; the prefix of a folder's sources ends in one slash.
func TestFileURLs(t *testing.T) {
	for _, p := range []string{"/notes/a.md", "/notes/with space.md", "/notes/50% #1?.md", "/notes/été/ü.md"} {
		u := FileURL(p)
		if got, ok := FilePath(u); !ok || got != filepath.FromSlash(p) {
			t.Errorf("FilePath(FileURL(%q) = %q) = %q, %v", p, u, got, ok)
		}
	}
	if _, ok := FilePath("https://example.com/a.md"); ok {
		t.Error("an https URL has a file path")
	}
	if got := folderPrefix("/notes"); got != "file:///notes/" || UnderURL(got) != got {
		t.Errorf("folderPrefix(/notes) = %q", got)
	}
}

func TestSummary(t *testing.T) {
	var s Summary
	s.add(index.Result{Chunks: 3, Removed: 2})
	s.add(index.Result{Unchanged: true})
	s.add(index.Result{Err: errors.New("boom")})
	s.Skipped, s.Removed = 1, 4
	want := "indexed 1 documents (3 chunks), 1 unchanged, 2 old chunks replaced, 1 skipped, 4 removed, 1 failed"
	if got := s.String(); got != want || s.Total != 3 || s.Failed != 1 {
		t.Errorf("%+v: %q, want %q", s, got, want)
	}
}

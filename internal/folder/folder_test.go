package folder

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing/format/gitignore"
)

func write(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for name, body := range files {
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func walk(t *testing.T, w *Walker, root string) []string {
	t.Helper()
	var got []string
	if err := w.Walk(func(p string, d fs.DirEntry) error {
		rel, _ := filepath.Rel(root, p)
		got = append(got, filepath.ToSlash(rel))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return got
}

func TestWalkHonoursIgnoreFiles(t *testing.T) {
	root := t.TempDir()
	write(t, root, map[string]string{
		".gitignore":             "\uFEFF# build output\r\nbuild/\n*.log\n!keep.log\n/top-only.md\n",
		".ragmemignore":          "private/\n",
		"a.md":                   "a",
		"top-only.md":            "x",
		"keep.log":               "k",
		"debug.log":              "d",
		"build/out.md":           "b",
		"private/secret.md":      "s",
		"docs/top-only.md":       "kept: the pattern is anchored at the top",
		"docs/.gitignore":        "draft-*.md\n",
		"docs/draft-1.md":        "d",
		"docs/final.md":          "f",
		"docs/sub/draft-2.md":    "nested folders inherit",
		"docs/sub/notes.txt":     "n",
		".hidden/x.md":           "h",
		"node_modules/m/r.md":    "m",
		"other/.gitignore":       "*\n!*.md\n",
		"other/a.md":             "a",
		"other/b.txt":            "b",
		"gen/x/generated/out.md": "g",
	})
	w, err := New(root, &Options{Exclude: []string{"**/generated/**", "docs/final.md"}})
	if err != nil {
		t.Fatal(err)
	}
	got := walk(t, w, root)
	want := []string{".gitignore", ".ragmemignore", "a.md", "docs/.gitignore", "docs/sub/notes.txt", "docs/top-only.md", "keep.log", "other/a.md"} // other/.gitignore ignores itself, as in git
	// The ignore files themselves are files of the folder; callers keep
	// the formats they index.
	if !slices.Equal(got, want) {
		t.Fatalf("walked\n %v\nwant\n %v", got, want)
	}
	// Excluded agrees with Walk on every file and folder of the tree.
	_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if p == root {
			return nil
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			return nil
		}
		walked := slices.Contains(got, rel)
		if ex := w.Excluded(p, false); ex == walked {
			t.Errorf("Excluded(%s) = %v but Walk visited it: %v", rel, ex, walked)
		}
		return nil
	})
	if !w.Excluded(filepath.Join(root, "build"), true) || w.Excluded(filepath.Join(root, "docs"), true) {
		t.Errorf("folders: build should be excluded, docs not")
	}
	if !w.Excluded(filepath.Join(filepath.Dir(root), "elsewhere.md"), false) {
		t.Errorf("a path outside the folder is not excluded")
	}
}

func TestBadExcludePatterns(t *testing.T) {
	for _, p := range []string{"", "  ", "!", "a\x00b", strings.Repeat("x", MaxPatternBytes+1)} {
		if _, err := New(t.TempDir(), &Options{Exclude: []string{p}}); !errors.Is(err, ErrBadPattern) {
			t.Errorf("pattern %q: %v", p, err)
		}
	}
}

func TestLongIgnoreFileIsCut(t *testing.T) {
	root := t.TempDir()
	write(t, root, map[string]string{
		".gitignore": "a.md\n" + strings.Repeat("#", MaxIgnoreFileBytes) + "\nb.md\n",
		"a.md":       "a", "b.md": "b",
	})
	var warned []string
	w, _ := New(root, &Options{Warn: func(p string, err error) { warned = append(warned, err.Error()) }})
	got := walk(t, w, root)
	if !slices.Equal(got, []string{".gitignore", "b.md"}) || len(warned) == 0 {
		t.Fatalf("walked %v, warnings %v", got, warned)
	}
}

func FuzzParseIgnore(f *testing.F) {
	for _, s := range []string{"*.log\n!keep.log\nbuild/\n", "\uFEFF# c\r\n/a/**/b\n", "\\#x\n\\!y\n[a-z]*.md\n", "**\n!**/\n", "a/\x00b\n"} {
		f.Add([]byte(s))
	}
	paths := [][]string{{"a.md"}, {"build", "x.md"}, {"a", "b", "c.log"}, {"keep.log"}, {"[x]", "y"}}
	f.Fuzz(func(t *testing.T, data []byte) {
		ps := ParseIgnore(data, []string{"sub"})
		m := gitignore.NewMatcher(ps)
		for _, p := range paths {
			m.Match(append([]string{"sub"}, p...), false)
			m.Match(append([]string{"sub"}, p...), true)
		}
	})
}

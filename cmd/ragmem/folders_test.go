package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestExcludeIsRemembered: `--exclude` is remembered for the folder, so the
// next plain `ragmem index FOLDER` does not add back what it excluded; the
// excluding run says the excluded files were removed as excluded, not as
// gone; a file really gone is still reported as gone; `--exclude ”`
// forgets.
func TestExcludeIsRemembered(t *testing.T) {
	dir, docs := t.TempDir(), t.TempDir()
	writeFile(t, filepath.Join(docs, "herons.md"), "# Herons\n\nThe grey heron wades in shallow water.\n")
	writeFile(t, filepath.Join(docs, "storks.md"), "# Storks\n\nThe white stork nests on rooftops.\n")
	for i, name := range []string{"one", "two", "three"} {
		writeFile(t, filepath.Join(docs, "drafts", name+".md"), "# Draft\n\nA draft about cranes, number "+name+strings.Repeat(".", i+1)+"\n")
	}
	sources := func() string {
		t.Helper()
		return mustRun(t, "--dir", dir, "sources")
	}
	mustRun(t, "--dir", dir, "index", docs)
	if s := sources(); !strings.Contains(s, "drafts") {
		t.Fatalf("sources after the first run:\n%s", s)
	}
	_, stderr, err := runCLI(t, "--dir", dir, "index", "--exclude", "drafts/", docs)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(stderr, "no longer in the folder") || !strings.Contains(stderr, "removed 3 files now excluded") {
		t.Errorf("the excluding run said:\n%s", stderr)
	}
	if s := sources(); strings.Contains(s, "drafts") {
		t.Errorf("drafts still indexed:\n%s", s)
	}
	// A plain run excludes them still, and says so.
	_, stderr, err = runCLI(t, "--dir", dir, "index", docs)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(stderr, `excluding "drafts/", as the last --exclude said`) {
		t.Errorf("the plain run said:\n%s", stderr)
	}
	if s := sources(); strings.Contains(s, "drafts") {
		t.Errorf("a plain index added the excluded files back:\n%s", s)
	}
	// Another folder is not affected.
	other := t.TempDir()
	writeFile(t, filepath.Join(other, "drafts", "x.md"), "# Kept\n\nOkapis are shy.\n")
	mustRun(t, "--dir", dir, "index", other)
	if s := sources(); !strings.Contains(s, filepath.Join(other, "drafts")) {
		t.Errorf("another folder's drafts were excluded:\n%s", s)
	}
	// A file really gone is reported as gone.
	if err := os.Remove(filepath.Join(docs, "storks.md")); err != nil {
		t.Fatal(err)
	}
	_, stderr, _ = runCLI(t, "--dir", dir, "index", docs)
	if !strings.Contains(stderr, "storks.md: no longer in the folder; removed") {
		t.Errorf("the run after a deletion said:\n%s", stderr)
	}
	// --exclude '' forgets.
	_, stderr, err = runCLI(t, "--dir", dir, "index", "--exclude", "", docs)
	if err != nil || strings.Contains(stderr, "excluding") {
		t.Fatalf("%v\n%s", err, stderr)
	}
	if s := sources(); strings.Count(s, filepath.Join(docs, "drafts")) != 3 {
		t.Errorf("after forgetting, the drafts are not back:\n%s", s)
	}
	if b, err := os.ReadFile(filepath.Join(dir, foldersFile)); err != nil || strings.Contains(string(b), docs) {
		t.Errorf("folders.json after forgetting: %s %v", b, err)
	}
	// A damaged file is an error that names it, not a silent reset.
	if err := os.WriteFile(filepath.Join(dir, foldersFile), []byte(`{"v":1,"folders":{"relative":{}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, err := runCLI(t, "--dir", dir, "index", docs); err == nil || !strings.Contains(err.Error(), foldersFile) {
		t.Errorf("damaged folders.json: %v", err)
	}
}

// FuzzDecodeFolders: any bytes are refused or give settings this program
// would have written.
func FuzzDecodeFolders(f *testing.F) {
	f.Add([]byte(`{"v":1,"folders":{"/home/u/notes":{"exclude":["drafts/","*.log"]}}}`))
	f.Add([]byte(`{"v":1,"folders":{}}`))
	f.Add([]byte(`{"v":2}`))
	f.Add([]byte(`{"v":1,"folders":{"/x":{"exclude":[""]}}}`))
	f.Add([]byte(`not json`))
	f.Fuzz(func(t *testing.T, b []byte) {
		set, err := decodeFolders(b)
		if err != nil {
			return
		}
		if set.Version != 1 || set.Folders == nil {
			t.Fatalf("accepted %+v", set)
		}
		for dir, s := range set.Folders {
			if !filepath.IsAbs(dir) || len(s.Exclude) > maxExcludes {
				t.Fatalf("accepted folder %q with %d patterns", dir, len(s.Exclude))
			}
			for _, p := range s.Exclude {
				if p == "" || len(p) > maxPatternBytes {
					t.Fatalf("accepted pattern %q", p)
				}
			}
		}
	})
}

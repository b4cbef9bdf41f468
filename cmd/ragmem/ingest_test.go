package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ragmem/ragmem/cmd/ragmem/internal/ingest"
	"github.com/ragmem/ragmem/index"
)

// sources lists the source URLs of a store.
func sourcesOf(t *testing.T, dir string) map[string]index.SourceInfo {
	t.Helper()
	out := mustRun(t, "--dir", dir, "sources", "--json", "--limit", "0")
	var v struct{ Sources []index.SourceInfo }
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("sources --json: %v\n%s", err, out)
	}
	m := map[string]index.SourceInfo{}
	for _, s := range v.Sources {
		m[s.SourceURL] = s
	}
	return m
}

func TestIndexFolderSync(t *testing.T) {
	dir, docs := t.TempDir(), t.TempDir()
	exe, err := os.ReadFile("/bin/ls")
	if err != nil {
		exe = bytes.Repeat([]byte("\x7fELF\x02\x01\x01\x00\x00\x00"), 100)
	}
	files := map[string]string{
		"keep.md":            "# Keep\n\nQuokkas smile at cameras.\n",
		"bom.md":             "\uFEFF# Byte Order\n\nThe first heading survives the mark.\n",
		"empty.md":           "",
		"blank.txt":          "   \n\n",
		"gone.md":            "# Gone\n\nThis file is deleted after the first run.\n",
		"ignored.log.md":     "# Ignored by .gitignore\n",
		"drafts/wip.md":      "# Draft\n\nexcluded by .ragmemignore\n",
		"build/out.md":       "# Build\n\nexcluded by --exclude\n",
		"sub/notes.txt":      "Notes about quetzals.\n",
		".gitignore":         "*.log.md\n",
		".ragmemignore":      "drafts/\n",
		"sub/deeper/page.md": "# Deeper\n\nA nested page.\n",
	}
	for name, body := range files {
		writeFile(t, filepath.Join(docs, filepath.FromSlash(name)), body)
	}
	if err := os.WriteFile(filepath.Join(docs, "ls.txt"), exe, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"guide.pdf", "guide.docx", "guide.epub", "encrypted.pdf", "scanned.pdf"} {
		data, err := os.ReadFile(filepath.Join("..", "..", "testdata", "documents", name))
		if err != nil {
			t.Fatal(err)
		}
		writeFile(t, filepath.Join(docs, "books", name), string(data))
	}
	out, stderr, err := runCLI(t, "--dir", dir, "index", "--exclude", "build/", "--attr", "team=search", "--attr", "lang=en", docs)
	if err != nil {
		t.Fatalf("index: %v\n%s", err, stderr)
	}
	if !strings.Contains(out, "indexed 8 documents") || !strings.Contains(out, "5 skipped") {
		t.Fatalf("summary %q\n%s", out, stderr)
	}
	for _, want := range []string{"ls.txt: skipped: binary data", "empty.md: skipped: empty file", "blank.txt: skipped: no text",
		"encrypted.pdf: skipped: the document is encrypted: it needs a password to open; decrypt it first\n",
		"scanned.pdf: skipped: the PDF has no text layer (scanned or image-only pages); run OCR on it first\n"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
	srcs := sourcesOf(t, dir)
	if len(srcs) != 8 {
		t.Fatalf("sources %v", keys(srcs))
	}
	// PDF, DOCX and EPUB: their titles, and their structure as heading paths.
	for _, name := range []string{"guide.pdf", "guide.docx", "guide.epub"} {
		if s := srcs[ingest.FileURL(filepath.Join(docs, "books", name))]; s.Title != "The Otter Field Guide" {
			t.Errorf("%s title %q", name, s.Title)
		}
		out := mustRun(t, "--dir", dir, "search", "--json", "--source", filepath.Join(docs, "books", name), "holts dens")
		if !strings.Contains(out, `"Dens"`) {
			t.Errorf("%s: no chunk under the heading Dens: %s", name, out)
		}
	}
	for _, name := range []string{"ignored.log.md", "drafts/wip.md", "build/out.md", "ls.txt", "empty.md"} {
		if _, ok := srcs[ingest.FileURL(filepath.Join(docs, name))]; ok {
			t.Errorf("%s was indexed", name)
		}
	}
	if s := srcs[ingest.FileURL(filepath.Join(docs, "bom.md"))]; s.Title != "Byte Order" {
		t.Errorf("BOM file title %q", s.Title)
	}
	// The BOM file's chunk has its heading path.
	out = mustRun(t, "--dir", dir, "search", "--json", "first heading survives")
	if !strings.Contains(out, `"headingPath": [`) || !strings.Contains(out, `"Byte Order"`) {
		t.Errorf("BOM heading lost: %s", out)
	}
	// Attributes: filter on them.
	out = mustRun(t, "--dir", dir, "search", "--filter", "team = search AND lang IN [en, de]", "quokkas")
	if !strings.Contains(out, "keep.md") {
		t.Errorf("attribute filter found nothing: %s", out)
	}
	out = mustRun(t, "--dir", dir, "search", "--filter", "team = infra", "quokkas")
	if !strings.Contains(out, "no results") {
		t.Errorf("wrong attribute matched: %s", out)
	}
	if _, _, err := runCLI(t, "--dir", dir, "search", "--filter", "team = ", "quokkas"); err == nil || !strings.Contains(err.Error(), "column 8") {
		t.Errorf("bad filter: %v", err)
	}
	if _, _, err := runCLI(t, "--dir", dir, "index", "--attr", "bad key=x", docs); err == nil || !strings.Contains(err.Error(), "invalid attributes") {
		t.Errorf("bad attribute: %v", err)
	}
	// --source with a folder path searches under it.
	out = mustRun(t, "--dir", dir, "search", "--source", filepath.Join(docs, "sub"), "--threshold", "-1", "page quetzals")
	if !strings.Contains(out, "notes.txt") || !strings.Contains(out, "page.md") || strings.Contains(out, "keep.md") {
		t.Errorf("--source folder: %s", out)
	}

	// Delete a file and exclude another: the next run removes both.
	if err := os.Remove(filepath.Join(docs, "gone.md")); err != nil {
		t.Fatal(err)
	}
	out, stderr, err = runCLI(t, "--dir", dir, "index", "--exclude", "build/", "--exclude", "sub/deeper/", docs)
	if err != nil {
		t.Fatalf("second run: %v\n%s", err, stderr)
	}
	if !strings.Contains(out, "2 removed") {
		t.Fatalf("second run %q\n%s", out, stderr)
	}
	srcs = sourcesOf(t, dir)
	if _, ok := srcs[ingest.FileURL(filepath.Join(docs, "gone.md"))]; ok || len(srcs) != 6 {
		t.Fatalf("after sync: %v", keys(srcs))
	}
	// --keep-missing keeps them.
	writeFile(t, filepath.Join(docs, "later.md"), "# Later\n\nindexed then deleted\n")
	mustRun(t, "--dir", dir, "index", docs)
	os.Remove(filepath.Join(docs, "later.md"))
	out = mustRun(t, "--dir", dir, "index", "--keep-missing", docs)
	if strings.Contains(out, "removed") {
		t.Fatalf("--keep-missing removed: %q", out)
	}
	if _, ok := sourcesOf(t, dir)[ingest.FileURL(filepath.Join(docs, "later.md"))]; !ok {
		t.Fatalf("--keep-missing lost later.md")
	}
	// rm takes a path, relative or absolute, and a folder.
	wd, _ := os.Getwd()
	defer os.Chdir(wd)
	if err := os.Chdir(docs); err != nil {
		t.Fatal(err)
	}
	out = mustRun(t, "--dir", dir, "rm", "keep.md")
	if !strings.Contains(out, "removed keep.md") {
		t.Fatalf("rm path: %q", out)
	}
	out = mustRun(t, "--dir", dir, "rm", "later.md") // gone from disk, still a path
	if !strings.Contains(out, "removed later.md") {
		t.Fatalf("rm missing path: %q", out)
	}
	// sub/deeper stays excluded: the plain runs above remembered --exclude.
	out = mustRun(t, "--dir", dir, "rm", "sub")
	if !strings.Contains(out, "removed 1 sources under sub") {
		t.Fatalf("rm folder: %q", out)
	}
	if _, _, err := runCLI(t, "--dir", dir, "rm", "keep.md"); err == nil {
		t.Fatalf("removing twice succeeded")
	}
}

func keys(m map[string]index.SourceInfo) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// URL variants read from stdin are one source; rm finds it by any variant.
func TestIndexURLVariants(t *testing.T) {
	dir := t.TempDir()
	for _, u := range []string{"https://Example.com/a?utm_source=x#top", "https://example.com:443/a", "HTTPS://EXAMPLE.COM/a?fbclid=1"} {
		root := newRootCmd()
		var out bytes.Buffer
		root.SetOut(&out)
		root.SetErr(&out)
		root.SetIn(strings.NewReader("<html><head><title>Shared-State Concurrency - My Book</title></head><body><main><h1>Shared-State Concurrency</h1><p>Mutexes guard data.</p></main></body></html>"))
		root.SetArgs([]string{"--dir", dir, "index", "-", "--url", u, "--format", "html"})
		if err := root.ExecuteContext(context.Background()); err != nil {
			t.Fatalf("%s: %v\n%s", u, err, out.String())
		}
	}
	srcs := sourcesOf(t, dir)
	if len(srcs) != 1 {
		t.Fatalf("sources %v", keys(srcs))
	}
	if s, ok := srcs["https://example.com/a"]; !ok || s.Title != "Shared-State Concurrency" {
		t.Fatalf("source %+v", srcs)
	}
	out := mustRun(t, "--dir", dir, "rm", "https://EXAMPLE.com/a#x")
	if !strings.Contains(out, "removed") {
		t.Fatalf("rm variant: %q", out)
	}
}

// syncBuffer is a bytes.Buffer safe for a writer and a reader.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func waitFor(t *testing.T, buf *syncBuffer, what string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !strings.Contains(buf.String(), what) {
		if time.Now().After(deadline) {
			t.Fatalf("no %q after 20 s; output:\n%s", what, buf.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestIndexWatch keeps a folder in sync, as the owner of the store and
// as the client of a running serve.
func TestIndexWatch(t *testing.T) {
	t.Run("owner", func(t *testing.T) { testIndexWatch(t, false) })
	t.Run("through serve", func(t *testing.T) {
		if testing.Short() {
			t.Skip("starts a server process")
		}
		testIndexWatch(t, true)
	})
}

func testIndexWatch(t *testing.T, served bool) {
	dir, docs := t.TempDir(), t.TempDir()
	if served {
		s := startServe(t, dir)
		defer s.stop()
	}
	writeFile(t, filepath.Join(docs, "a.md"), "# A\n\nalpha text\n")
	ctx, cancel := context.WithCancel(context.Background())
	var out, errb syncBuffer
	done := make(chan error, 1)
	go func() {
		root := newRootCmd()
		root.SetOut(&out)
		root.SetErr(&errb)
		root.SetArgs([]string{"--dir", dir, "index", "--watch", docs})
		done <- root.ExecuteContext(ctx)
	}()
	waitFor(t, &errb, "watching")
	writeFile(t, filepath.Join(docs, "b.md"), "# B\n\nbeta text\n")
	waitFor(t, &out, "indexed 1 documents")
	writeFile(t, filepath.Join(docs, "new", "c.md"), "# C\n\ngamma in a new folder\n")
	waitFor(t, &out, "indexed 1 documents (1 chunks), 0 unchanged\n")
	if err := os.Remove(filepath.Join(docs, "a.md")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, &out, "removed "+filepath.Join(docs, "a.md"))
	writeFile(t, filepath.Join(docs, ".ragmemignore"), "new/\n")
	waitFor(t, &out, "ignore rules changed")
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("watch: %v\n%s", err, errb.String())
	}
	srcs := sourcesOf(t, dir)
	if len(srcs) != 1 {
		t.Fatalf("after watching: %v\nout:\n%s", keys(srcs), out.String())
	}
	if _, ok := srcs[ingest.FileURL(filepath.Join(docs, "b.md"))]; !ok {
		t.Fatalf("b.md missing: %v", keys(srcs))
	}
}

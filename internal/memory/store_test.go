package memory

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ragmem/ragmem/index"
	"github.com/ragmem/ragmem/internal/embed"
	"github.com/ragmem/ragmem/internal/index/engine"
	"github.com/ragmem/ragmem/internal/wal"
)

func newMem(title string, when ...string) NewMemory {
	return NewMemory{Frontmatter: Frontmatter{Title: title, WhenToUse: when, Importance: High, DiscoveredBy: "developer"}, Content: "# " + title + "\n\nBody of " + title + "."}
}

func memorySources(t *testing.T, s *Store) map[string]index.SourceInfo {
	t.Helper()
	srcs, _, err := s.Index().Sources(bg, index.Filter{DocTypes: []string{index.DocMemory, docPattern}, Attrs: map[string]string{AttrDir: s.abs}}, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]index.SourceInfo{}
	for _, si := range srcs {
		out[si.SourceURL] = si
	}
	return out
}

// A new memory is written to <slug>.md and indexed (content and its
// natural-language patterns); the same slug again is appended after a
// "---" separator, and nothing earlier changes.
func TestAddAppendsAndIndexes(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "mem")
	s := openStore(t, dir)
	r1, err := s.Add(bg, newMem("Retry flaky uploads", "upload|retry", "When uploads fail intermittently"))
	if err != nil {
		t.Fatal(err)
	}
	if r1.Appended || r1.Memory.Slug != "retry-flaky-uploads" || r1.Memory.Path != filepath.Join(s.abs, "retry-flaky-uploads.md") {
		t.Fatalf("%+v", r1)
	}
	first, _ := os.ReadFile(r1.Memory.Path)
	srcs := memorySources(t, s)
	if _, ok := srcs[r1.Memory.URL]; !ok {
		t.Fatalf("content not indexed: %v", srcs)
	}
	if si, ok := srcs[r1.Memory.URL+patternFragment]; !ok || si.Chunks != 1 {
		t.Fatalf("natural-language pattern not indexed: %v", srcs)
	}
	second := newMem("Retry flaky uploads!", "When the upload service times out")
	second.Importance = Critical
	second.DiscoveredBy = "tester"
	r2, err := s.Add(bg, second)
	if err != nil {
		t.Fatal(err)
	}
	if !r2.Appended || r2.Memory.Entries != 2 {
		t.Fatalf("%+v", r2)
	}
	data, _ := os.ReadFile(r1.Memory.Path)
	if !strings.HasPrefix(string(data), string(first)) || !strings.Contains(string(data[len(first):]), "\n---\n\n---\ntitle: Retry flaky uploads!\n") {
		t.Fatalf("append did not keep the file as it was:\n%s", data)
	}
	m := r2.Memory
	if m.Importance != Critical || len(m.WhenToUse) != 3 || m.DiscoveredBy != "tester" || strings.Join(m.Discoverers, ",") != "developer,tester" || m.Title != "Retry flaky uploads" {
		t.Errorf("merged metadata %+v", m)
	}
	es, err := s.Entries(bg, "retry-flaky-uploads")
	if err != nil || len(es) != 2 || es[1].Body != "# Retry flaky uploads!\n\nBody of Retry flaky uploads!." {
		t.Fatalf("entries %+v %v", es, err)
	}
	if si := memorySources(t, s)[m.URL+patternFragment]; si.Chunks != 2 || si.DocType != docPattern {
		t.Errorf("patterns indexed: %d of type %q, want 2 of type %q", si.Chunks, si.DocType, docPattern)
	}
	if st, _ := s.Index().Stats(bg); st.MemoryCount != 1 {
		t.Errorf("index counts %d memories, want 1", st.MemoryCount)
	}
}

func TestAddValidates(t *testing.T) {
	s, err := Open(bg, t.TempDir(), &Options{Logger: quiet(), MaxContentBytes: 100})
	if err != nil {
		t.Fatal(err)
	}
	for _, nm := range []NewMemory{
		{Frontmatter: Frontmatter{Title: "", WhenToUse: []string{"a"}}},
		{Frontmatter: Frontmatter{Title: "t"}},
		{Frontmatter: Frontmatter{Title: "t", WhenToUse: []string{"a"}, Importance: 9}},
		{Frontmatter: Frontmatter{Title: strings.Repeat("t", 300), WhenToUse: []string{"a"}}},
		{Frontmatter: Frontmatter{Title: "t", WhenToUse: []string{"a"}}, Content: " \x00\r\n "},
	} {
		if _, err := s.Add(bg, nm); !errors.Is(err, ErrInvalid) {
			t.Errorf("%+v: err %v, want ErrInvalid", nm.Frontmatter, err)
		}
	}
	big := newMem("Big", "a")
	big.Content = strings.Repeat("x", 101)
	if _, err := s.Add(bg, big); !errors.Is(err, ErrTooLarge) {
		t.Errorf("err %v, want ErrTooLarge", err)
	}
	if ents, _ := os.ReadDir(s.abs); len(ents) > 1 { // only the lock file
		t.Errorf("files written for rejected memories: %v", ents)
	}
}

// Files changed, added, broken and removed behind the store's back are
// seen on refresh and the index follows them.
func TestRefreshFollowsTheDirectory(t *testing.T) {
	dir := writeFixture(t, example1)
	s, err := Open(bg, dir, &Options{Index: openIndex(t), Logger: quiet(), Now: clock, RefreshInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(memorySources(t, s)); n != 7 { // 4 contents + 3 sets of natural-language patterns
		t.Fatalf("%d sources indexed", n)
	}
	gen := s.gen.Load()
	rep, err := s.Refresh(bg)
	if err != nil || rep.changed() || s.gen.Load() != gen {
		t.Fatalf("refresh of an unchanged directory: %+v %v", rep, err)
	}
	// Change one file (same size and time would not hide it: it was
	// written within the racy window, so it is hashed again).
	p := filepath.Join(dir, "database-schema-version-2-1.md")
	data, _ := os.ReadFile(p)
	changed := strings.Replace(string(data), "audit_log", "audit_lag", 1)
	if err := os.WriteFile(p, []byte(changed), 0o644); err != nil {
		t.Fatal(err)
	}
	// A new file, a broken file and a removed file.
	if err := os.WriteFile(filepath.Join(dir, "new-one.md"), FormatEntry(Frontmatter{Title: "New one", WhenToUse: []string{"newthing"}, Importance: Low}, "new"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "broken.md"), []byte("---\ntitle: b\nwhenToUse: x\nimportance: extreme\n---\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir, "express-middleware-pattern.md")); err != nil {
		t.Fatal(err)
	}
	rep, err = s.Refresh(bg)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(rep.Changed, ",") != "database-schema-version-2-1" || strings.Join(rep.Added, ",") != "broken,new-one" || strings.Join(rep.Removed, ",") != "express-middleware-pattern" {
		t.Fatalf("report %+v", rep)
	}
	if len(rep.Problems) != 1 || rep.Problems[0].File != "broken.md" || rep.Problems[0].Line != 4 {
		t.Fatalf("problems %+v", rep.Problems)
	}
	if s.gen.Load() == gen {
		t.Error("generation did not move")
	}
	srcs := memorySources(t, s)
	for u := range srcs {
		if strings.Contains(u, "express-middleware") || strings.Contains(u, "broken") {
			t.Errorf("%s still indexed", u)
		}
	}
	if _, ok := srcs[fileURL(filepath.Join(s.abs, "new-one.md"))]; !ok {
		t.Error("new file not indexed")
	}
	hits, err := s.Index().FullText(bg, "audit_lag", 5, index.Filter{DocTypes: []string{index.DocMemory}})
	if err != nil || len(hits) != 1 {
		t.Errorf("changed content not re-indexed: %v %v", hits, err)
	}
	// The list skips the broken file; Get explains it.
	ms, _ := s.List(bg)
	if len(ms) != 4 {
		t.Errorf("%d memories listed", len(ms))
	}
	if _, err := s.Get(bg, "broken"); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "broken.md:4") {
		t.Errorf("Get(broken): %v", err)
	}
}

// A store opened on a directory whose files were deleted while no store
// was open removes their stale index entries.
func TestOpenSweepsStaleIndexEntries(t *testing.T) {
	dir := writeFixture(t, example1)
	ix := openIndex(t)
	if _, err := Open(bg, dir, &Options{Index: ix, Logger: quiet()}); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir, "project-uses-jwt-authentication.md")); err != nil {
		t.Fatal(err)
	}
	s, err := Open(bg, dir, &Options{Index: ix, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	for u := range memorySources(t, s) {
		if strings.Contains(u, "jwt") {
			t.Errorf("%s still indexed", u)
		}
	}
}

// Bodies are not held in memory: Entries reads them from disk.
func TestContentOnDemand(t *testing.T) {
	dir := writeFixture(t, example3)
	s, err := Open(bg, dir, &Options{Logger: quiet(), RefreshInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "middleware-pattern.md")
	data, _ := os.ReadFile(p)
	if err := os.WriteFile(p, []byte(strings.Replace(string(data), "All middleware", "Every middleware", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	es, err := s.Entries(bg, "middleware-pattern")
	if err != nil || !strings.Contains(es[0].Body, "Every middleware") {
		t.Fatalf("%v %v", es, err)
	}
}

func TestNamesCannotEscape(t *testing.T) {
	s, err := Open(bg, t.TempDir(), &Options{Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"../etc/passwd", "..", "a/b", `a\b`, ".hidden", "", "x\x00y"} {
		if _, err := s.Get(bg, name); !errors.Is(err, ErrInvalid) {
			t.Errorf("Get(%q): %v", name, err)
		}
		if _, err := s.Raw(bg, name); !errors.Is(err, ErrInvalid) {
			t.Errorf("Raw(%q): %v", name, err)
		}
	}
	r, err := s.Add(bg, newMem("../../outside", "x"))
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Dir(r.Memory.Path) != s.abs {
		t.Errorf("written outside the directory: %s", r.Memory.Path)
	}
}

// crashFS fails a write at one step, as a crash or an I/O error would:
// "write" and "sync" of the temporary file, or "rename" over the target.
type crashFS struct {
	wal.OS
	step string
	err  error
}

func (c *crashFS) OpenFile(name string, flag int, perm os.FileMode) (wal.File, error) {
	f, err := c.OS.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return &crashFile{File: f, fs: c}, nil
}

func (c *crashFS) Rename(o, n string) error {
	if c.step == "rename" {
		return c.err
	}
	return c.OS.Rename(o, n)
}

type crashFile struct {
	wal.File
	fs *crashFS
}

func (f *crashFile) Write(b []byte) (int, error) {
	if f.fs.step == "write" {
		return 0, f.fs.err
	}
	return f.File.Write(b)
}

func (f *crashFile) Sync() error {
	if f.fs.step == "sync" {
		return f.fs.err
	}
	return f.File.Sync()
}

// A crash at any step of a write leaves the file as it was (and no
// temporary file in the listing); the store keeps working afterwards.
func TestWriteIsCrashSafe(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(bg, dir, &Options{Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	r, err := s.Add(bg, newMem("Crash target", "crash"))
	if err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(r.Memory.Path)
	crash := errors.New("simulated crash")
	for _, step := range []string{"write", "sync", "rename"} {
		s.fs = &crashFS{step: step, err: crash}
		_, err := s.Add(bg, newMem("Crash target", "crash again"))
		s.fs = wal.OS{}
		if !errors.Is(err, crash) {
			t.Fatalf("step %s: err %v", step, err)
		}
		after, _ := os.ReadFile(r.Memory.Path)
		if string(after) != string(before) {
			t.Fatalf("step %s: file changed", step)
		}
		ents, _ := os.ReadDir(dir)
		for _, e := range ents {
			if strings.HasSuffix(e.Name(), ".tmp") {
				t.Errorf("step %s: temporary file %s left", step, e.Name())
			}
		}
	}
	if _, err := s.Add(bg, newMem("Crash target", "after")); err != nil {
		t.Fatal(err)
	}
	if es, err := s.Entries(bg, "crash-target"); err != nil || len(es) != 2 {
		t.Fatalf("%d entries, %v", len(es), err)
	}
}

// Concurrent writers (here two stores on one directory, as two processes
// would be) never lose an append.
func TestConcurrentAppends(t *testing.T) {
	dir := t.TempDir()
	a, err := Open(bg, dir, &Options{Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	b, err := Open(bg, dir, &Options{Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i := 0; i < 10; i++ {
		for _, s := range []*Store{a, b} {
			wg.Add(1)
			go func(s *Store) {
				defer wg.Done()
				if _, err := s.Add(bg, newMem("Shared topic", "shared")); err != nil {
					t.Error(err)
				}
			}(s)
		}
	}
	wg.Wait()
	es, err := a.Entries(bg, "shared-topic")
	if err != nil || len(es) != 20 {
		t.Fatalf("%d entries, %v", len(es), err)
	}
}

func TestStaleTempsAreRemoved(t *testing.T) {
	dir := t.TempDir()
	old := filepath.Join(dir, ".x.md.0123456789ab.tmp")
	if err := os.WriteFile(old, []byte("torn"), 0o600); err != nil {
		t.Fatal(err)
	}
	past := time.Now().Add(-time.Hour)
	_ = os.Chtimes(old, past, past)
	if _, err := Open(bg, dir, &Options{Logger: quiet()}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(old); !errors.Is(err, os.ErrNotExist) {
		t.Error("stale temporary file kept")
	}
}

// A directory that cannot be read fails Open and Match; a missing one is
// simply empty.
func TestUnreadableDirectory(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "not-yet")
	s, err := Open(bg, missing, &Options{Logger: quiet(), RefreshInterval: time.Nanosecond})
	if err != nil {
		t.Fatal(err)
	}
	if ms, err := s.Match(bg, MatchRequest{Task: "anything"}); err != nil || len(ms) != 0 {
		t.Fatalf("%v %v", ms, err)
	}
	// Replace the directory by a file: reading it fails.
	if err := os.WriteFile(missing, []byte("not a directory"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Match(bg, MatchRequest{Task: "anything"}); err == nil {
		t.Fatal("Match on an unreadable directory succeeded")
	}
	if _, err := Open(bg, missing, nil); err == nil {
		t.Fatal("Open on a file succeeded")
	}
}

func TestStoresReopenOnNewIndex(t *testing.T) {
	dir := writeFixture(t, example3)
	ss := NewStores(&Options{Logger: quiet()})
	ix1 := openIndex(t)
	a, err := ss.Get(bg, dir, ix1)
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := ss.Get(bg, dir, ix1); b != a {
		t.Error("same directory and index opened twice")
	}
	ix1.Close()
	ix2 := openIndex(t)
	c, err := ss.Get(bg, dir, ix2)
	if err != nil || c == a {
		t.Fatalf("not reopened over the new index: %v", err)
	}
	if ms, err := c.Match(bg, MatchRequest{Task: "Implement password reset feature", Agent: "developer"}); err != nil || len(ms) == 0 {
		t.Fatalf("%v %v", ms, err)
	}
}

// flakyEmbedder is the lexical embedder that fails while down is set.
type flakyEmbedder struct {
	embed.Embedder
	down atomic.Bool
}

func (f *flakyEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	if f.down.Load() {
		return nil, errors.New("embedding server unavailable")
	}
	return f.Embedder.Embed(ctx, texts)
}

// When the embedder is down, memories are still read and matched (BM25 and
// patterns); indexing waits and catches up once it is back.
func TestEmbedderDown(t *testing.T) {
	emb := &flakyEmbedder{Embedder: embed.Default()}
	ix, err := engine.Open(bg, t.TempDir(), &engine.Options{Embedder: emb, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	dir := writeFixture(t, example1)
	s, err := Open(bg, dir, &Options{Index: ix, Logger: quiet(), Now: clock, RefreshInterval: time.Nanosecond})
	if err != nil {
		t.Fatal(err)
	}
	emb.down.Store(true)
	fm := Frontmatter{Title: "OAuth scopes need review", WhenToUse: []string{"oauth"}, Importance: Critical}
	if err := os.WriteFile(filepath.Join(dir, "oauth-scopes.md"), FormatEntry(fm, "Every scope is reviewed."), 0o600); err != nil {
		t.Fatal(err)
	}
	ms, err := s.Match(bg, MatchRequest{Task: "Add OAuth integration to existing auth system", Agent: "developer"})
	if err != nil {
		t.Fatalf("Match with the embedder down: %v", err)
	}
	if !strings.Contains(strings.Join(slugs(ms), ","), "oauth-scopes") {
		t.Fatalf("new memory not matched: %v", slugs(ms))
	}
	if _, err := s.Refresh(bg); !errors.Is(err, engine.ErrEmbedding) {
		t.Fatalf("explicit refresh: %v", err)
	}
	emb.down.Store(false)
	if _, err := s.Refresh(bg); err != nil {
		t.Fatal(err)
	}
	if _, ok := memorySources(t, s)[fileURL(filepath.Join(s.abs, "oauth-scopes.md"))]; !ok {
		t.Error("not indexed once the embedder is back")
	}
}

func TestSymlinksAreReported(t *testing.T) {
	dir := writeFixture(t, example3)
	target := filepath.Join(t.TempDir(), "outside.md")
	os.WriteFile(target, FormatEntry(Frontmatter{Title: "Outside", WhenToUse: []string{"x"}, Importance: High}, "secret"), 0o600)
	if err := os.Symlink(target, filepath.Join(dir, "outside.md")); err != nil {
		t.Skip("no symlinks here:", err)
	}
	s, err := Open(bg, dir, &Options{Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	ps := s.Problems()
	if len(ps) != 1 || ps[0].File != "outside.md" || !strings.Contains(ps[0].Msg, "symbolic links") {
		t.Fatalf("%+v", ps)
	}
	if ms, _ := s.List(bg); len(ms) != 2 {
		t.Errorf("%d memories", len(ms))
	}
}

// mergeEntries: lists are unions in first-seen order (tags and
// discoverers without case), single values come from the entries in
// order, and a merged entry confirms without changing what happened.
func TestMergeEntriesFolds(t *testing.T) {
	day := func(d int) time.Time { return time.Date(2026, 1, d, 0, 0, 0, 0, time.UTC) }
	es := []Entry{
		{Frontmatter: Frontmatter{Title: "First", WhenToUse: []string{"a", "b"}, Tags: []string{"Auth"}, Importance: Low,
			DiscoveredAt: day(2), DiscoveredBy: "Dev", Source: "s1", Author: AuthorExtraction, Supersedes: []string{"old"}}},
		{Frontmatter: Frontmatter{Title: "Second", WhenToUse: []string{"b", "c"}, Tags: []string{"auth", "DB"}, Importance: High,
			DiscoveredAt: day(5), DiscoveredBy: "dev", OccurredAt: day(4), Provenance: "user", Author: AuthorExtraction,
			Supersedes: []string{"old", "older"}, Conflicts: []string{"rival"}}},
		{Frontmatter: Frontmatter{Title: "Third", WhenToUse: []string{"a"}, Importance: Medium, Merged: true,
			DiscoveredAt: day(3), DiscoveredBy: "ops", OccurredAt: day(9), Provenance: "similarity 0.9", Author: AuthorExtraction}},
		{Frontmatter: Frontmatter{Title: "Link", WhenToUse: []string{"a"}, Merged: true, Supersedes: []string{"oldest"}, Author: AuthorExtraction}},
	}
	m, err := mergeEntries(es)
	if err != nil {
		t.Fatal(err)
	}
	check := func(what string, got, want any) {
		t.Helper()
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s = %v, want %v", what, got, want)
		}
	}
	check("Title", m.Title, "First")
	check("WhenToUse", m.WhenToUse, []string{"a", "b", "c"})
	check("Tags", m.Tags, []string{"Auth", "DB"})
	check("Discoverers", m.Discoverers, []string{"Dev", "ops"})
	check("Supersedes", m.Supersedes, []string{"old", "older", "oldest"})
	check("Conflicts", m.Conflicts, []string{"rival"})
	check("Importance", m.Importance, High)
	check("DiscoveredAt", m.DiscoveredAt, day(5))
	check("DiscoveredBy", m.DiscoveredBy, "ops")
	check("Source", m.Source, "s1")
	check("OccurredAt", m.OccurredAt, day(4))
	check("ValidFrom", m.ValidFrom, day(4))
	check("Provenance", m.Provenance, "user")
	check("Confirmations", m.Confirmations, 1)
	check("links", m.links, 1)
	check("Author", m.Author, AuthorExtraction)
	check("Entries", m.Entries, 4)

	es[1].Author, es[1].OccurredAt = "", time.Time{}
	if m, err = mergeEntries(es); err != nil {
		t.Fatal(err)
	}
	check("Author with a user's entry", m.Author, AuthorUser)
	check("ValidFrom without OccurredAt", m.ValidFrom, day(2))
}

package engine

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/ragmem/ragmem/index"
	"github.com/ragmem/ragmem/index/driver"

	"github.com/ragmem/ragmem/chunk"
)

// Variants of one page's URL are one source on every path into the index.
func TestURLVariantsAreOneSource(t *testing.T) {
	ix := open(t, t.TempDir(), nil)
	defer ix.Close()
	variants := []string{
		"https://Example.com/guide?utm_source=news#install",
		"https://example.com:443/guide",
		"HTTPS://EXAMPLE.COM/guide?fbclid=x",
		"https://example.com/guide#faq",
	}
	for i, u := range variants {
		r, err := ix.Add(ctx, index.Document{SourceURL: u, Title: "Guide", Content: longDoc(300, "installing widgets")})
		if err != nil {
			t.Fatal(err)
		}
		if r.SourceURL != "https://example.com/guide" {
			t.Fatalf("variant %q stored as %q", u, r.SourceURL)
		}
		if i > 0 && !r.Unchanged {
			t.Fatalf("variant %q was indexed again: %+v", u, r)
		}
	}
	srcs, total, err := ix.Sources(ctx, index.Filter{}, 0, 0)
	if err != nil || total != 1 || srcs[0].SourceURL != "https://example.com/guide" {
		t.Fatalf("sources %+v (total %d), %v", srcs, total, err)
	}
	// One batch with two variants: the last wins, the first is superseded.
	rs, err := ix.AddMany(ctx, []index.Document{
		{SourceURL: "https://example.com/b?utm_medium=x", Content: "first version of b"},
		{SourceURL: "https://EXAMPLE.com/b", Content: "second version of b"},
	})
	if err != nil || !rs[0].Superseded || rs[1].Err != nil {
		t.Fatalf("AddMany: %+v, %v", rs, err)
	}
	recs, err := ix.Source(ctx, "https://example.com/b#top")
	if err != nil || len(recs) != 1 || recs[0].Content != "second version of b" {
		t.Fatalf("Source by a variant: %+v, %v", recs, err)
	}
	hits, err := ix.FullText(ctx, "widgets", 10, index.Filter{SourceURL: "https://example.com:443/guide#x"})
	if err != nil || len(hits) == 0 {
		t.Fatalf("search filtered by a variant: %d hits, %v", len(hits), err)
	}
	n, err := ix.Remove(ctx, "http://example.com/guide")
	if err != nil || n != 0 {
		t.Fatalf("another scheme is another page: removed %d, %v", n, err)
	}
	n, err = ix.Remove(ctx, "https://example.com/guide?utm_source=x")
	if err != nil || n == 0 {
		t.Fatalf("Remove by a variant: %d, %v", n, err)
	}
	// The job of a background page reports the canonical URL.
	id := ix.IndexPageAsync(index.Document{SourceURL: "https://example.com/c#x", Content: "async page"})
	if j, ok := ix.Job(id); !ok || j.SourceURL != "https://example.com/c" {
		t.Fatalf("job %+v", j)
	}
}

// The store remembers the parameters kept, so that a later process that
// names no rules canonicalises alike.
func TestURLRulesAreRemembered(t *testing.T) {
	dir := t.TempDir()
	ix := open(t, dir, &Options{URLRules: &index.URLRules{KeepParams: []string{"Ref_Src", "ref_src"}}})
	r, err := ix.Add(ctx, index.Document{SourceURL: "https://x.org/p?ref_src=feed&utm_source=a", Content: "a page"})
	if err != nil || r.SourceURL != "https://x.org/p?ref_src=feed" {
		t.Fatalf("%+v, %v", r, err)
	}
	if err := ix.Close(); err != nil {
		t.Fatal(err)
	}
	ix = open(t, dir, nil)
	if got := ix.URLRules().KeepParams; len(got) != 1 || got[0] != "ref_src" {
		t.Fatalf("remembered %v", got)
	}
	if got := ix.CanonicalURL("https://x.org/p?ref_src=feed"); got != "https://x.org/p?ref_src=feed" {
		t.Fatalf("reopened: %q", got)
	}
	ix.Close()
	ix = open(t, dir, &Options{URLRules: &index.URLRules{}})
	defer ix.Close()
	if got := ix.CanonicalURL("https://x.org/p?ref_src=feed"); got != "https://x.org/p" {
		t.Fatalf("rules reset: %q", got)
	}
}

// A source stored before canonicalisation (under a non-canonical URL) can
// still be read and removed by the URL it was stored under.
func TestLegacySourceURL(t *testing.T) {
	ix := open(t, t.TempDir(), nil)
	defer ix.Close()
	legacy := "https://Example.com/old#x"
	if err := ix.be.Apply(ctx, &driver.Batch{Put: []index.Record{{ID: "l1", SourceURL: legacy, Content: "legacy", DocType: index.DocKnowledge, CreatedAt: time.Now(), Vector: unitVector(ix)}}}); err != nil {
		t.Fatal(err)
	}
	if recs, err := ix.Source(ctx, legacy); err != nil || len(recs) != 1 {
		t.Fatalf("Source: %d, %v", len(recs), err)
	}
	if n, err := ix.Remove(ctx, legacy); err != nil || n != 1 {
		t.Fatalf("Remove: %d, %v", n, err)
	}
}

func unitVector(ix *Index) []float32 {
	v := make([]float32, ix.emb.Dimension())
	v[0] = 1
	return v
}

func TestFilterExpressionsInSearches(t *testing.T) {
	ix := open(t, t.TempDir(), nil)
	defer ix.Close()
	docs := []index.Document{
		{SourceURL: "https://docs.rs/serde/", Content: "serde serializes rust data structures", Attrs: map[string]string{"lang": "en", "team": "infra"}},
		{SourceURL: "https://docs.rs/tokio/", Content: "tokio runs rust futures and serializes nothing", Attrs: map[string]string{"lang": "en", "team": "runtime"}},
		{SourceURL: "https://crates.io/serde", Content: "serde on crates serializes rust data", Attrs: map[string]string{"lang": "de"}},
	}
	if _, err := ix.AddMany(ctx, docs); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		expr string
		want []string
	}{
		{`source STARTS WITH "HTTPS://Docs.RS/"`, []string{"https://docs.rs/serde/", "https://docs.rs/tokio/"}},
		{`lang = de`, []string{"https://crates.io/serde"}},
		{`team IN [infra, runtime] AND NOT source = "https://docs.rs/tokio/#x"`, []string{"https://docs.rs/serde/"}},
		{`lang = de OR team = runtime`, []string{"https://crates.io/serde", "https://docs.rs/tokio/"}},
		{`created > now-1h AND team EXISTS`, []string{"https://docs.rs/serde/", "https://docs.rs/tokio/"}},
		{`created < now-1h`, nil},
	}
	for _, c := range cases {
		e, err := index.ParseFilter(c.expr)
		if err != nil {
			t.Fatal(err)
		}
		f := index.Filter{Where: e}
		for name, search := range map[string]func() ([]driver.Hit, error){
			"fulltext": func() ([]driver.Hit, error) { return ix.FullText(ctx, "serializes rust", 10, f) },
			"vector":   func() ([]driver.Hit, error) { return ix.Vector(ctx, "serializes rust", 10, f) },
		} {
			hits, err := search()
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]bool{}
			for _, h := range hits {
				got[h.Record.SourceURL] = true
			}
			if len(got) != len(c.want) {
				t.Errorf("%s %q: got %v, want %v", name, c.expr, got, c.want)
				continue
			}
			for _, w := range c.want {
				if !got[w] {
					t.Errorf("%s %q: got %v, want %v", name, c.expr, got, c.want)
				}
			}
		}
		srcs, total, err := ix.Sources(ctx, f, 0, 0)
		if err != nil || total != len(c.want) {
			t.Errorf("Sources %q: %+v (%d), %v", c.expr, srcs, total, err)
		}
	}
}

func TestBinaryAndBOM(t *testing.T) {
	ix := open(t, t.TempDir(), nil)
	defer ix.Close()
	if _, err := ix.Add(ctx, index.Document{SourceURL: "bin", Content: "ELF\x02\x01\x01\x00\x00\x00\x00binary"}); !errors.Is(err, ErrBinaryContent) {
		t.Fatalf("binary text: %v", err)
	}
	a, err := ix.Add(ctx, index.Document{SourceURL: "bom", Content: "\uFEFF# Heading\n\nBody text.", Format: chunk.Markdown})
	if err != nil {
		t.Fatal(err)
	}
	recs, _ := ix.Source(ctx, "bom")
	if len(recs) != 1 || len(recs[0].HeadingPath) != 1 || recs[0].HeadingPath[0] != "Heading" || strings.HasPrefix(recs[0].Content, "\uFEFF") {
		t.Fatalf("BOM file: %+v", recs)
	}
	// The same text without the mark is the same content.
	b, _ := ix.Add(ctx, index.Document{SourceURL: "bom", Content: "# Heading\n\nBody text.", Format: chunk.Markdown})
	if !b.Unchanged || b.ContentHash != a.ContentHash {
		t.Fatalf("BOM changes the content hash: %+v %+v", a, b)
	}
}

// Every HTML document goes through the main-content extraction: menus,
// help pop-ups and footers are not indexed, and the title is intact.
func TestHTMLMainContent(t *testing.T) {
	ix := open(t, t.TempDir(), nil)
	defer ix.Close()
	page := `<html><head><title>Shared-State Concurrency - My Book</title></head><body>
<div id="menu-bar"><h1 class="menu-title">My Book</h1><button>Print this book</button></div>
<div id="help"><h2>Keyboard shortcuts</h2><p>Press ← or → to navigate between chapters</p></div>
<nav><ol><li><a href="a.html">Chapter one</a></li><li><a href="b.html">Chapter two</a></li></ol></nav>
<main><h1>Shared-State Concurrency</h1><p>` + strings.Repeat("Mutexes let threads share data one at a time. ", 12) + `</p>
<h2>Using Mutexes</h2><p>` + strings.Repeat("Lock the mutex, then use the data it guards. ", 12) + `</p></main>
<footer>© 2026 My Book authors</footer></body></html>`
	r, err := ix.Add(ctx, index.Document{SourceURL: "https://book.example/ch16-03.html", Content: page, Format: chunk.HTML})
	if err != nil {
		t.Fatal(err)
	}
	recs, _ := ix.Source(ctx, r.SourceURL)
	var all strings.Builder
	for _, rec := range recs {
		all.WriteString(rec.Content)
		if rec.Title != "Shared-State Concurrency" {
			t.Errorf("title %q", rec.Title)
		}
	}
	for _, junk := range []string{"Keyboard shortcuts", "Press ←", "Print this book", "Chapter one", "©"} {
		if strings.Contains(all.String(), junk) {
			t.Errorf("indexed %q:\n%s", junk, all.String())
		}
	}
	if !strings.Contains(all.String(), "Lock the mutex") || recs[len(recs)-1].HeadingPath[len(recs[len(recs)-1].HeadingPath)-1] != "Using Mutexes" {
		t.Errorf("content or headings lost: %+v", recs)
	}
	// Already extracted HTML (a reader's, or the server's) is chunked as it is.
	r, err = ix.Add(ctx, index.Document{SourceURL: "doc", Content: "<nav><p>kept as given</p></nav><p>body</p>", Format: chunk.HTML, Extracted: true})
	if err != nil {
		t.Fatal(err)
	}
	recs, _ = ix.Source(ctx, "doc")
	if len(recs) != 1 || !strings.Contains(recs[0].Content, "body") {
		t.Fatalf("extracted HTML: %+v", recs)
	}
}

// Re-indexing a source with other attributes stores them.
func TestAttrsChangeIsAChange(t *testing.T) {
	ix := open(t, t.TempDir(), nil)
	defer ix.Close()
	d := index.Document{SourceURL: "u", Content: "same text", Attrs: map[string]string{"team": "a"}}
	if _, err := ix.Add(ctx, d); err != nil {
		t.Fatal(err)
	}
	d.Attrs = map[string]string{"team": "b"}
	r, err := ix.Add(ctx, d)
	if err != nil || r.Unchanged {
		t.Fatalf("%+v, %v", r, err)
	}
	recs, _ := ix.Source(ctx, "u")
	if len(recs) != 1 || recs[0].Attrs["team"] != "b" {
		t.Fatalf("%+v", recs)
	}
}

package extract_test

import (
	"errors"
	"os"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/ragmem/ragmem/chunk"
	"github.com/ragmem/ragmem/internal/extract"
)

func readFile(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// furniture are the marker words of testdata/article.html that sit in page
// furniture; none may survive extraction.
var furniture = []string{
	"TRACKING-SCRIPT-TEXT", "STYLE-TEXT", "COOKIE-BANNER-TEXT", "NAV-LINK-TEXT", "ADVERT-TEXT",
	"SHARE-TEXT", "COMMENT-TEXT", "SIDEBAR-TEXT", "FOOTER-TEXT", "SCRIPT-TEXT", "Accept all",
}

func TestArticle(t *testing.T) {
	p, err := extract.HTML(readFile(t, "testdata/article.html"), "https://blog.example/bm25", nil)
	if err != nil {
		t.Fatal(err)
	}
	if p.Method != extract.MethodReadability {
		t.Errorf("method = %q, want readability", p.Method)
	}
	if !strings.Contains(p.Title, "Tuning BM25 for short documents") {
		t.Errorf("title = %q", p.Title)
	}
	if p.SiteName != "The Retrieval Blog" {
		t.Errorf("site name = %q", p.SiteName)
	}
	for _, want := range []string{"saturation parameter k1", "Term saturation", "Length normalisation",
		"A worked example", "Lowering b to 0.3", "reward keyword stuffing"} {
		if !strings.Contains(p.Text, want) {
			t.Errorf("text lacks %q:\n%s", want, p.Text)
		}
	}
	for _, bad := range furniture {
		if strings.Contains(p.Text, bad) || strings.Contains(p.HTML, bad) {
			t.Errorf("furniture %q survived:\n%s", bad, p.HTML)
		}
	}
	if strings.Contains(strings.ToLower(p.HTML), "<script") || strings.Contains(p.HTML, "class=") {
		t.Errorf("HTML keeps scripts or classes:\n%s", p.HTML)
	}

	// What extraction hands on is chunked with the headings intact.
	chunks := chunk.Split(p.HTML, chunk.HTML, &chunk.Options{MaxTokens: 60, Overlap: 0})
	paths := map[string]bool{}
	for _, c := range chunks {
		paths[strings.Join(c.HeadingPath, " / ")] = true
	}
	for _, want := range []string{
		"Tuning BM25 for short documents / Term saturation",
		"Tuning BM25 for short documents / Length normalisation / A worked example",
	} {
		if !paths[want] {
			t.Errorf("no chunk under heading path %q; paths: %v", want, paths)
		}
	}
}

func TestFallbackKeepsShortPages(t *testing.T) {
	src := `<html><head><title>Note</title></head><body>
	<nav>Home | Blog NAVTEXT</nav>
	<p>Short note: the deploy key lives in the vault under ops/deploy.</p>
	<div class="advert">ADTEXT</div>
	<footer>FOOTTEXT</footer></body></html>`
	p, err := extract.HTML(src, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(p.Text, "the deploy key lives in the vault") {
		t.Errorf("text = %q", p.Text)
	}
	for _, bad := range []string{"NAVTEXT", "ADTEXT", "FOOTTEXT"} {
		if strings.Contains(p.Text, bad) {
			t.Errorf("%s survived: %q", bad, p.Text)
		}
	}
	if p.Title != "Note" {
		t.Errorf("title = %q", p.Title)
	}
}

func TestFurnitureNames(t *testing.T) {
	cases := []struct {
		attr string
		kept bool
	}{
		{`class="ad"`, false},
		{`id="sidebar-left"`, false},
		{`class="cookie_notice"`, false},
		{`class="main-content"`, true},
		{`class="article-body"`, true},
		{`class="header"`, true}, // a word we do not judge
		{`class="download"`, true},
		{`class="shadow"`, true}, // "ad" only as a whole word
		{`style="display: none"`, false},
		{`role="navigation"`, false},
		{`aria-hidden="true"`, false},
		{`hidden`, false},
	}
	for _, c := range cases {
		src := `<html><body><p>Intro paragraph that stays.</p><div ` + c.attr + `><p>MARKER inside the element.</p></div></body></html>`
		p, err := extract.HTML(src, "", nil)
		if err != nil {
			t.Fatalf("%s: %v", c.attr, err)
		}
		if got := strings.Contains(p.Text, "MARKER"); got != c.kept {
			t.Errorf("%s: kept = %v, want %v (text %q)", c.attr, got, c.kept, p.Text)
		}
	}
}

func TestBadInput(t *testing.T) {
	if _, err := extract.HTML("", "", nil); !errors.Is(err, extract.ErrNoContent) {
		t.Errorf("empty: %v", err)
	}
	if _, err := extract.HTML("<html><head><script>x()</script></head><body><nav>menu</nav></body></html>", "", nil); !errors.Is(err, extract.ErrNoContent) {
		t.Errorf("only furniture: %v", err)
	}
	if _, err := extract.HTML(strings.Repeat("a", 101), "", &extract.Options{MaxBytes: 100}); !errors.Is(err, extract.ErrTooLarge) {
		t.Errorf("too large: %v", err)
	}
	p, err := extract.HTML("<p>caf\xe9 ol\xffé and more words</p>", "::bad url::", nil)
	if err != nil {
		t.Fatal(err)
	}
	if !utf8.ValidString(p.Text) || !utf8.ValidString(p.HTML) || !strings.Contains(p.Text, "more words") {
		t.Errorf("invalid UTF-8 not repaired: %q", p.Text)
	}
	// Unsafe links are dropped, text is kept.
	p, err = extract.HTML(`<p>Click <a href="javascript:alert(1)">here</a> now.</p>`, "", nil)
	if err != nil || strings.Contains(p.HTML, "javascript:") || !strings.Contains(p.Text, "here") {
		t.Errorf("javascript link: %v %q", err, p.HTML)
	}
}

func TestDeepNestingAndManyElements(t *testing.T) {
	deep := strings.Repeat("<div>", 50000) + "deep text survives" + strings.Repeat("</div>", 50000)
	start := time.Now()
	p, err := extract.HTML(deep, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(p.Text, "deep text survives") {
		t.Errorf("deep text lost: %q", p.Text)
	}
	// Many elements past MaxElements skip Readability and keep the body.
	many := "<html><body>" + strings.Repeat("<p>word</p>", 3000) + "</body></html>"
	p, err = extract.HTML(many, "", &extract.Options{MaxElements: 1000})
	if err != nil {
		t.Fatal(err)
	}
	if p.Method != extract.MethodFallback || strings.Count(p.Text, "word") != 3000 {
		t.Errorf("many elements: method %s, %d words", p.Method, strings.Count(p.Text, "word"))
	}
	t.Logf("deep nesting took %v", time.Since(start))
}

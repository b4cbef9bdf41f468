package extract_test

import (
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/ragmem/ragmem/internal/extract"
)

// FuzzHTML checks that extraction never panics, always returns valid UTF-8,
// never lets active content through, and fails only with its own errors.
// Seeds are in testdata/fuzz/FuzzHTML.
func FuzzHTML(f *testing.F) {
	f.Add("<html><body><article><h1>T</h1><p>text</p></article></body></html>", "https://a.example/")
	f.Fuzz(func(t *testing.T, src, pageURL string) {
		p, err := extract.HTML(src, pageURL, &extract.Options{MaxBytes: 1 << 20, MaxElements: 5000})
		if err != nil {
			if !errors.Is(err, extract.ErrNoContent) && !errors.Is(err, extract.ErrTooLarge) && !errors.Is(err, extract.ErrTooComplex) {
				t.Fatalf("unexpected error: %v", err)
			}
			return
		}
		for name, s := range map[string]string{"text": p.Text, "html": p.HTML, "title": p.Title, "byline": p.Byline, "excerpt": p.Excerpt} {
			if !utf8.ValidString(s) {
				t.Fatalf("%s is not valid UTF-8: %q", name, s)
			}
		}
		if strings.TrimSpace(p.Text) == "" {
			t.Fatalf("success with no text")
		}
		if strings.ContainsAny(p.Title, "\n\r\t\x00") || len(p.Title) > 300 {
			t.Fatalf("title not cleaned: %q", p.Title)
		}
		low := strings.ToLower(p.HTML)
		for _, bad := range []string{"<script", "<style", "<iframe", "<object", "<embed", "<form", "href=\"javascript:"} {
			if strings.Contains(low, bad) {
				t.Fatalf("active content %q in output:\n%s", bad, p.HTML)
			}
		}
		if eventAttr(p.HTML) {
			t.Fatalf("event handler attribute in output:\n%s", p.HTML)
		}
	})
}

// eventAttr reports whether an on* attribute appears inside a tag (text is
// escaped, so a "<" in h always opens a tag).
func eventAttr(h string) bool {
	inTag, quote := false, byte(0)
	for i := 0; i < len(h); i++ {
		c := h[i]
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
			}
		case c == '<':
			inTag = true
		case c == '>':
			inTag = false
		case inTag && (c == '"' || c == '\''):
			quote = c
		case inTag && (c == ' ' || c == '\t' || c == '\n') && i+2 < len(h) && (h[i+1]|0x20) == 'o' && (h[i+2]|0x20) == 'n':
			return true
		}
	}
	return false
}

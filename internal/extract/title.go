package extract

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// documentTitle returns the text of the page's first <title> ("" when it
// has none).
func documentTitle(doc *html.Node) string {
	t := ""
	walk(doc, func(n *html.Node) bool {
		if t != "" {
			return false
		}
		if n.Type == html.ElementNode && n.DataAtom == atom.Title {
			t = textOf(n)
			return false
		}
		return n.Type != html.ElementNode || n.DataAtom != atom.Body
	})
	return t
}

// articleTitle chooses a page's title from Readability's (found), the
// page's <title> (raw) and its first h1:
//
//   - Readability drops what it takes for a site name before a separator,
//     and takes a hyphen inside a word for one ("Shared-State Concurrency -
//     Book" became "State Concurrency - Book"): when found is the <title>
//     cut inside a word, the <title> is kept whole;
//   - "Article | Site" titles: when the title starts with the page's h1,
//     the h1 is the article's name. An h1 elsewhere in the title (a site
//     name after the article's: "Introduction - The Book" with the h1 "The
//     Book") is not.
func articleTitle(found, raw, h1 string) string {
	t, raw, h1 := cleanLine(found, 300), cleanLine(raw, 300), cleanLine(h1, 300)
	if t == "" {
		t = raw
	}
	if raw != "" && t != raw {
		if i := strings.Index(raw, t); i > 0 {
			before, _ := utf8.DecodeLastRuneInString(raw[:i])
			if !unicode.IsSpace(before) {
				t = raw
			}
		}
	}
	if h1 != "" && (t == "" || len(h1) < len(t) && strings.HasPrefix(t, h1)) {
		t = h1
	}
	return t
}

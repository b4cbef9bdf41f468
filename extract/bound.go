package extract

import (
	"fmt"
	"strings"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// The HTML parser builds a node for each element and run of text, and more:
// a formatting element (b, i, font, ...) left open is cloned again into
// every paragraph that follows it, up to three clones of each distinct tag
// and attribute set ("Noah's ark"), so a page of "<p><b><i><u>x" repeated
// makes a dozen nodes per 14 bytes, and open formatting tags with distinct
// attributes make a number of nodes quadratic in the page. bound measures
// what a page would make, with the tokenizer alone, before it is parsed.

// formattingTags are the elements the HTML parser reconstructs.
var formattingTags = map[atom.Atom]bool{
	atom.A: true, atom.B: true, atom.Big: true, atom.Code: true, atom.Em: true, atom.Font: true,
	atom.I: true, atom.Nobr: true, atom.S: true, atom.Small: true, atom.Strike: true,
	atom.Strong: true, atom.Tt: true, atom.U: true,
}

// closesP are the start tags that close an open paragraph: a </p> after
// one of them is a stray end tag, which makes an empty paragraph.
var closesP = map[atom.Atom]bool{
	atom.Address: true, atom.Article: true, atom.Aside: true, atom.Blockquote: true, atom.Center: true,
	atom.Details: true, atom.Dialog: true, atom.Dir: true, atom.Div: true, atom.Dl: true, atom.Dd: true,
	atom.Dt: true, atom.Fieldset: true, atom.Figcaption: true, atom.Figure: true, atom.Footer: true,
	atom.Form: true, atom.Header: true, atom.Hgroup: true, atom.Hr: true, atom.Li: true, atom.Listing: true,
	atom.Main: true, atom.Menu: true, atom.Nav: true, atom.Ol: true, atom.P: true, atom.Plaintext: true,
	atom.Pre: true, atom.Search: true, atom.Section: true, atom.Summary: true, atom.Table: true, atom.Ul: true,
	atom.Xmp: true, atom.H1: true, atom.H2: true, atom.H3: true, atom.H4: true, atom.H5: true, atom.H6: true,
}

// markerTags bound the reconstruction of formatting elements to their
// content (cells, captions, objects).
var markerTags = map[atom.Atom]bool{
	atom.Applet: true, atom.Object: true, atom.Marquee: true, atom.Template: true,
	atom.Td: true, atom.Th: true, atom.Caption: true,
}

// bound returns src when the parser would make at most maxNodes nodes of
// it, else src without its formatting tags (their text kept) when that
// would make at most maxNodes, else an error wrapping ErrTooComplex. A page
// whose tags carry more than maxNodes attributes is refused too: each costs
// the tokenizer, the parser, Readability and the cleaning about as much as
// a small node, and the tokenizer keeps every distinct one.
func bound(src string, maxNodes int) (string, error) {
	if countAttrs(src, maxNodes) > maxNodes {
		return "", fmt.Errorf("%w: its tags carry more than %d attributes", ErrTooComplex, maxNodes)
	}
	n := estimateNodes(src, maxNodes, true)
	if n <= maxNodes {
		return src, nil
	}
	if m := estimateNodes(src, maxNodes, false); m > maxNodes {
		return "", fmt.Errorf("%w: it would make more than %d elements and runs of text, even without its formatting tags", ErrTooComplex, maxNodes)
	}
	return stripFormatting(src), nil
}

// estimateNodes estimates the nodes the parser makes of src, returning a
// number past limit as soon as it passes limit. With formatting it models
// the list of open formatting elements the parser keeps (as the HTML
// standard defines it, but without the stack of open elements, so that it
// errs on the side of too many): every text and start tag may reconstruct
// each entry of the list. It counts the elements the parser inserts around
// table rows and cells and for stray end tags. Without formatting,
// formatting tags count for nothing, as stripFormatting leaves them out.
func estimateNodes(src string, limit int, formatting bool) int {
	type entry struct {
		key string
		a   atom.Atom
	}
	// list holds the open formatting elements; markers the positions in
	// list where a marker stands (entries before it are not reconstructed
	// until it is closed). Every scan stays after the last marker and costs
	// no more than the nodes it adds, so the estimate is linear in the page
	// and in limit.
	var list []entry
	var markers []int
	open := func() int {
		if len(markers) == 0 {
			return len(list)
		}
		return len(list) - markers[len(markers)-1]
	}
	remove := func(i int) { list = append(list[:i], list[i+1:]...) }
	z := html.NewTokenizer(strings.NewReader(src))
	nodes := 4 // html, head, body, and the document
	// Elements the parser inserts: a table section around a row, a row
	// around a cell, a paragraph for a stray </p>.
	pOpen, inSection, inRow := false, false, false
	add := func(n int) bool {
		nodes += n
		return nodes > limit
	}
	for {
		tt := z.Next()
		switch tt {
		case html.ErrorToken:
			return nodes
		case html.TextToken:
			if add(1 + open()) {
				return nodes
			}
		case html.StartTagToken, html.SelfClosingTagToken:
			name, hasAttr := z.TagName()
			a := atom.Lookup(name)
			if formattingTags[a] && !formatting {
				continue
			}
			// The element, those it implies, and the reconstruction of
			// what is open.
			n := 1 + open()
			switch a {
			case atom.Table:
				inSection, inRow = false, false
			case atom.Tbody, atom.Thead, atom.Tfoot:
				inSection, inRow = true, false
			case atom.Tr:
				if !inSection {
					n++
				}
				inSection, inRow = true, true
			case atom.Td, atom.Th:
				if !inRow {
					n++
					if !inSection {
						n++
					}
				}
				inSection, inRow = true, true
			case atom.Col:
				n++ // colgroup
			}
			if closesP[a] {
				pOpen = false
			}
			if a == atom.P && tt == html.StartTagToken {
				pOpen = true
			}
			if add(n) {
				return nodes
			}
			if tt != html.StartTagToken {
				continue
			}
			switch {
			case markerTags[a]:
				markers = append(markers, len(list))
			case formattingTags[a]:
				key := string(name)
				if hasAttr {
					var b strings.Builder
					b.WriteString(key)
					for {
						k, v, more := z.TagAttr()
						b.WriteByte(0)
						b.Write(k)
						b.WriteByte('=')
						b.Write(v)
						if !more {
							break
						}
					}
					key = b.String()
				}
				lo := len(list) - open()
				if a == atom.A || a == atom.Nobr {
					// A new one closes the open one.
					for i := len(list) - 1; i >= lo; i-- {
						if list[i].a == a {
							remove(i)
							break
						}
					}
				}
				// Noah's ark: at most three of a kind after the last marker.
				same, first := 0, -1
				for i := len(list) - 1; i >= lo; i-- {
					if list[i].key == key {
						same++
						first = i
					}
				}
				if same >= 3 {
					remove(first)
				}
				list = append(list, entry{key: key, a: a})
			}
		case html.EndTagToken:
			name, _ := z.TagName()
			a := atom.Lookup(name)
			switch {
			case a == atom.P && pOpen:
				pOpen = false
			case a == atom.P, a == atom.Br:
				// A stray </p> or </br> makes an element.
				if add(1) {
					return nodes
				}
			case a == atom.Tr:
				inRow = false
			case a == atom.Tbody || a == atom.Thead || a == atom.Tfoot || a == atom.Table:
				inSection, inRow = false, false
			}
			switch {
			case formattingTags[a] && formatting:
				// The adoption agency may clone what is open.
				if add(open()) {
					return nodes
				}
				for i := len(list) - 1; i >= len(list)-open(); i-- {
					if list[i].a == a {
						remove(i)
						break
					}
				}
			case markerTags[a] && len(markers) > 0:
				list = list[:markers[len(markers)-1]]
				markers = markers[:len(markers)-1]
			}
		}
	}
}

// stripFormatting re-emits src without its formatting tags, keeping their
// text.
func stripFormatting(src string) string {
	z := html.NewTokenizer(strings.NewReader(src))
	var b strings.Builder
	b.Grow(len(src))
	for {
		tt := z.Next()
		switch tt {
		case html.ErrorToken:
			return b.String()
		case html.StartTagToken, html.EndTagToken, html.SelfClosingTagToken:
			name, _ := z.TagName()
			if formattingTags[atom.Lookup(name)] {
				b.WriteByte(' ')
				continue
			}
		}
		b.Write(z.Raw())
	}
}

// rawTextTags hold text up to their end tag, where no tag starts.
var rawTextTags = map[string]bool{
	"script": true, "style": true, "textarea": true, "title": true, "xmp": true,
	"iframe": true, "noembed": true, "noframes": true, "noscript": true,
}

// countAttrs counts the attributes of src's start tags from the bytes alone
// (the tokenizer would allocate for each while it counts), returning a
// number past limit as soon as it passes limit. It follows the tokenizer's
// reading of tags, comments and raw text closely enough never to count
// fewer (FuzzCountAttrs); duplicates, which the tokenizer drops, count.
func countAttrs(src string, limit int) int {
	isSpace := func(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' }
	n, i := 0, 0
	for n <= limit {
		j := strings.IndexByte(src[i:], '<')
		if j < 0 {
			return n
		}
		i += j + 1
		if strings.HasPrefix(src[i:], "!--") {
			i = commentEnd(src, i+3)
			continue
		}
		if i >= len(src) || !('a' <= src[i]|0x20 && src[i]|0x20 <= 'z') {
			continue // not a start tag: an end tag has no attributes to keep
		}
		start := i
		for i < len(src) && !isSpace(src[i]) && src[i] != '/' && src[i] != '>' {
			i++
		}
		name := strings.ToLower(src[start:i])
		for {
			for i < len(src) && (isSpace(src[i]) || src[i] == '/') {
				i++
			}
			if i >= len(src) {
				return n
			}
			if src[i] == '>' {
				i++
				break
			}
			// A name (its first byte may be '='), then maybe = and a value.
			i++
			for i < len(src) && !isSpace(src[i]) && src[i] != '/' && src[i] != '>' && src[i] != '=' {
				i++
			}
			n++
			for i < len(src) && isSpace(src[i]) {
				i++
			}
			if i < len(src) && src[i] == '=' {
				i++
				for i < len(src) && isSpace(src[i]) {
					i++
				}
				if i < len(src) && (src[i] == '"' || src[i] == '\'') {
					k := strings.IndexByte(src[i+1:], src[i])
					if k < 0 {
						return n
					}
					i += 1 + k + 1
				} else {
					for i < len(src) && !isSpace(src[i]) && src[i] != '>' {
						i++
					}
				}
			}
		}
		if name == "plaintext" {
			return n // the rest is text
		}
		if rawTextTags[name] {
			// Up to the end tag, in any case.
			k := indexFold(src[i:], "</"+name)
			if k < 0 {
				return n
			}
			i += k
		}
	}
	return n
}

// indexFold is strings.Index for an ASCII lower-case sep, ignoring case.
func indexFold(s, sep string) int {
	for i := 0; i+len(sep) <= len(s); {
		j := strings.IndexByte(s[i:], '<')
		if j < 0 {
			return -1
		}
		i += j
		if i+len(sep) <= len(s) && strings.EqualFold(s[i:i+len(sep)], sep) {
			return i
		}
		i++
	}
	return -1
}

// commentEnd returns the index after the end of the comment whose text
// starts at i, read as the tokenizer reads it ("-->", "--!>", or a ">"
// right after "<!--" and any dashes), or len(src).
func commentEnd(src string, i int) int {
	dashes, beginning := 0, true
	for ; i < len(src); i++ {
		switch src[i] {
		case '-':
			dashes++
			continue
		case '>':
			if dashes >= 2 || beginning {
				return i + 1
			}
		case '!':
			if dashes >= 2 && i+1 < len(src) {
				if src[i+1] == '>' {
					return i + 2
				}
				if src[i+1] == '-' {
					i++
					dashes, beginning = 1, false
					continue
				}
			}
		}
		dashes, beginning = 0, false
	}
	return len(src)
}

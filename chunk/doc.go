package chunk

import (
	"strings"
	"unicode/utf8"
)

// blockKind says how a block is cut into units.
type blockKind uint8

const (
	blockPara    blockKind = iota // prose, lists, tables: lines and sentences
	blockHeading                  // a heading line: starts a section
	blockCode                     // fenced code, <pre>, front matter: kept whole, else lines
)

// block is a run of text in doc.text: [start, end) starts and ends on a
// non-space byte.
type block struct {
	start, end int
	kind       blockKind
	level      int    // heading level 1..6 for blockHeading
	title      string // heading text for blockHeading
}

// section is a heading and the blocks under it, up to the next heading.
type section struct {
	path   []string
	blocks []block
}

// doc is a source reduced to sections of blocks over text. For Text and
// Markdown text is the source itself; for HTML it is the extracted text and
// segs maps it back to the source.
type doc struct {
	text     string
	sections []section
	segs     []htmlSeg // nil unless the source was HTML
}

type headingEntry struct {
	level int
	title string
}

// sectionize groups blocks into sections, each starting at a heading block
// (the first may have no heading), and computes heading paths.
//
// A section that is only headings ("# Install" directly followed by
// "## Linux") is not a section of its own: its headings open the next
// section when that one is nested under it, whose heading path names them
// anyway. Alone, such a chunk would carry no information, and BM25's length
// normalisation would rank its few words above every real section that
// mentions them.
func sectionize(blocks []block, lim *limits) []section {
	var secs []section
	var stack []headingEntry
	var cur section
	lo := 0 // cur.blocks is blocks[lo:i+1]: a section is a run of consecutive blocks
	for i, b := range blocks {
		if b.kind != blockHeading {
			cur.blocks = blocks[lo : i+1]
			continue
		}
		if n := len(cur.blocks); n > 0 && onlyHeadings(cur.blocks) && cur.blocks[n-1].level < b.level {
			// Nested: the parent's headings open the child's section.
		} else {
			if n > 0 {
				secs = append(secs, cur)
				lim.section(len(secs))
			}
			lo = i
		}
		for len(stack) > 0 && stack[len(stack)-1].level >= b.level {
			stack = stack[:len(stack)-1]
		}
		stack = append(stack, headingEntry{b.level, capTitle(b.title)})
		var path []string
		for _, h := range stack {
			if h.title != "" {
				path = append(path, h.title)
			}
		}
		cur = section{path: path, blocks: blocks[lo : i+1]}
	}
	if len(cur.blocks) > 0 {
		secs = append(secs, cur)
		lim.section(len(secs))
	}
	return secs
}

func onlyHeadings(bs []block) bool {
	for _, b := range bs {
		if b.kind != blockHeading {
			return false
		}
	}
	return true
}

// maxTitle caps the length of a heading title in bytes: a setext heading
// can span a whole paragraph, and an unclosed HTML heading a whole page.
const maxTitle = 200

// capTitle collapses whitespace in a heading title and shortens it to at
// most maxTitle bytes (plus an ellipsis), at a word boundary when it can.
func capTitle(s string) string {
	s = s[:min(len(s), 4*maxTitle)]
	s = strings.Join(strings.Fields(s), " ")
	if len(s) <= maxTitle {
		return s
	}
	cut := maxTitle
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	if sp := strings.LastIndexByte(s[:cut], ' '); sp > maxTitle/2 {
		cut = sp
	}
	return strings.TrimSpace(s[:cut]) + "…"
}

// trimSpan narrows [start, end) of s to its non-space bytes; it returns
// start == end when the range holds only whitespace.
func trimSpan(s string, start, end int) (int, int) {
	for start < end {
		r, size := utf8.DecodeRuneInString(s[start:end])
		if !isSpaceRune(r, size) {
			break
		}
		start += size
	}
	for end > start {
		r, size := utf8.DecodeLastRuneInString(s[start:end])
		if !isSpaceRune(r, size) {
			break
		}
		end -= size
	}
	return start, end
}

// lineIter walks the lines of s; each line excludes its '\n'.
type lineIter struct {
	s   string
	pos int
}

// next returns the next line and its start offset, and false at the end.
func (it *lineIter) next() (line string, start int, ok bool) {
	if it.pos >= len(it.s) {
		return "", 0, false
	}
	start = it.pos
	if i := strings.IndexByte(it.s[start:], '\n'); i >= 0 {
		it.pos = start + i + 1
		return it.s[start : start+i], start, true
	}
	it.pos = len(it.s)
	return it.s[start:], start, true
}

// nextSpan returns the next line's start and the bounds of its text
// without the spaces around it (s == e for a blank line), as offsets in
// the iterated string, and false at the end.
func (it *lineIter) nextSpan() (off, s, e int, ok bool) {
	line, off, ok := it.next()
	if !ok {
		return 0, 0, 0, false
	}
	a, b := trimSpan(line, 0, len(line))
	return off, off + a, off + b, true
}

// parseText reads plain text: one section without headings whose blocks are
// the paragraphs separated by blank lines.
func parseText(src string, lim *limits) *doc {
	var blocks []block
	it := lineIter{s: src}
	pStart, pEnd := -1, -1
	flush := func() {
		if pStart >= 0 {
			blocks = append(blocks, block{start: pStart, end: pEnd, kind: blockPara})
			lim.block(&blocks[len(blocks)-1])
			pStart = -1
		}
	}
	for {
		_, s, e, ok := it.nextSpan()
		if !ok {
			break
		}
		if s == e {
			flush()
			continue
		}
		if pStart < 0 {
			pStart = s
		}
		pEnd = e
	}
	flush()
	return &doc{text: src, sections: sectionize(blocks, lim)}
}

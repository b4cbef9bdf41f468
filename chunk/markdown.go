package chunk

import (
	"strings"
)

// parseMarkdown reads Markdown line by line into blocks: ATX and setext
// headings, fenced code blocks (``` or ~~~, closed by a fence of the same
// character at least as long, or by the end of the document), HTML comments,
// YAML front matter at the very start, and paragraphs separated by blank
// lines (lists and tables included). Only headings outside fences, comments
// and front matter count.
func parseMarkdown(src string, lim *limits) *doc {
	p := mdParser{src: src, paraStart: -1, lim: lim}
	it := lineIter{s: src}
	if fmEnd := frontMatterEnd(src); fmEnd > 0 {
		s, e := trimSpan(src, 0, fmEnd)
		if s < e {
			p.addBlock(block{start: s, end: e, kind: blockCode})
		}
		it.pos = fmEnd
	}
	for {
		line, off, ok := it.next()
		if !ok {
			break
		}
		p.line(line, off)
	}
	p.flushPara()
	p.flushRaw()
	return &doc{text: src, sections: sectionize(p.blocks, lim)}
}

type mdParser struct {
	src    string
	blocks []block
	lim    *limits

	// The open paragraph: [paraStart, paraEnd), its first line, and whether
	// it may become a setext heading.
	paraStart, paraEnd int
	paraPlain          bool

	// The open fence or HTML comment.
	rawOpen          bool
	rawStart, rawEnd int
	fenceChar        byte // '`' or '~'; 0 for an HTML comment
	fenceLen         int
}

func (p *mdParser) line(line string, off int) {
	s, e := trimSpan(line, 0, len(line))
	if p.rawOpen {
		if s < e {
			p.rawEnd = off + e
		}
		if p.closesRaw(line[s:e]) {
			p.flushRaw()
		}
		return
	}
	if s == e {
		p.flushPara()
		return
	}
	content := line[s:e]
	indent := leadingIndent(line)
	if c, n := fenceOpen(content); n > 0 {
		p.flushPara()
		p.rawOpen, p.rawStart, p.rawEnd = true, off+s, off+e
		p.fenceChar, p.fenceLen = c, n
		return
	}
	if indent < 4 && strings.HasPrefix(content, "<!--") {
		p.flushPara()
		p.rawOpen, p.rawStart, p.rawEnd = true, off+s, off+e
		p.fenceChar, p.fenceLen = 0, 0
		if strings.Contains(content[4:], "-->") {
			p.flushRaw()
		}
		return
	}
	if indent < 4 {
		if level, title, ok := atxHeading(content); ok {
			p.flushPara()
			p.addBlock(block{start: off + s, end: off + e, kind: blockHeading, level: level, title: title})
			return
		}
		if p.paraStart >= 0 && p.paraPlain {
			if level := setextLevel(content); level > 0 {
				title := cleanHeading(strings.Join(strings.Fields(p.src[p.paraStart:p.paraEnd]), " "))
				p.addBlock(block{start: p.paraStart, end: off + e, kind: blockHeading, level: level, title: title})
				p.paraStart = -1
				return
			}
		}
	}
	if indent < 4 && isThematicBreak(content) {
		p.flushPara()
		p.addBlock(block{start: off + s, end: off + e, kind: blockPara})
		return
	}
	if p.paraStart < 0 {
		p.paraStart = off + s
		p.paraPlain = indent < 4 && !startsItem(content)
	}
	p.paraEnd = off + e
}

func (p *mdParser) addBlock(b block) {
	p.blocks = append(p.blocks, b)
	p.lim.block(&b)
}

func (p *mdParser) flushPara() {
	if p.paraStart >= 0 {
		p.addBlock(block{start: p.paraStart, end: p.paraEnd, kind: blockPara})
		p.paraStart = -1
	}
}

func (p *mdParser) flushRaw() {
	if p.rawOpen {
		p.addBlock(block{start: p.rawStart, end: p.rawEnd, kind: blockCode})
		p.rawOpen = false
	}
}

// closesRaw reports whether the trimmed line ends the open fence or comment.
func (p *mdParser) closesRaw(content string) bool {
	if p.fenceChar == 0 {
		return strings.Contains(content, "-->")
	}
	n := 0
	for n < len(content) && content[n] == p.fenceChar {
		n++
	}
	return n >= p.fenceLen && n == len(content)
}

// fenceOpen reports the fence character and length when the trimmed line
// opens a fenced code block.
func fenceOpen(content string) (byte, int) {
	if len(content) < 3 || (content[0] != '`' && content[0] != '~') {
		return 0, 0
	}
	c := content[0]
	n := 0
	for n < len(content) && content[n] == c {
		n++
	}
	if n < 3 {
		return 0, 0
	}
	if c == '`' && strings.IndexByte(content[n:], '`') >= 0 {
		return 0, 0 // inline code such as ```x```
	}
	return c, n
}

// leadingIndent returns the width of the line's leading spaces and tabs
// (a tab counts as 4).
func leadingIndent(line string) int {
	w := 0
	for i := 0; i < len(line); i++ {
		switch line[i] {
		case ' ':
			w++
		case '\t':
			w += 4
		default:
			return w
		}
	}
	return w
}

// atxHeading parses "## Title ##" (content already trimmed).
func atxHeading(content string) (level int, title string, ok bool) {
	n := 0
	for n < len(content) && content[n] == '#' {
		n++
	}
	if n == 0 || n > 6 {
		return 0, "", false
	}
	rest := content[n:]
	if rest != "" && rest[0] != ' ' && rest[0] != '\t' {
		return 0, "", false // "#hashtag"
	}
	rest = strings.TrimSpace(rest)
	// Optional closing sequence: spaces then #s.
	if t := strings.TrimRight(rest, "#"); t == "" {
		rest = ""
	} else if len(t) < len(rest) && (t[len(t)-1] == ' ' || t[len(t)-1] == '\t') {
		rest = strings.TrimSpace(t)
	}
	return n, cleanHeading(rest), true
}

// setextLevel returns 1 for a "===" underline, 2 for "---", 0 otherwise.
func setextLevel(content string) int {
	if content == "" {
		return 0
	}
	c := content[0]
	if c != '=' && c != '-' {
		return 0
	}
	for i := 0; i < len(content); i++ {
		if content[i] != c {
			return 0
		}
	}
	if c == '=' {
		return 1
	}
	return 2
}

// isThematicBreak reports "***", "- - -", "___" and the like.
func isThematicBreak(content string) bool {
	var c byte
	n := 0
	for i := 0; i < len(content); i++ {
		switch b := content[i]; b {
		case ' ', '\t':
		case '*', '-', '_':
			if c != 0 && b != c {
				return false
			}
			c = b
			n++
		default:
			return false
		}
	}
	return n >= 3
}

// startsItem reports whether a trimmed line starts a list item, a table row
// or a block quote: lines that start a new unit inside a paragraph block.
func startsItem(content string) bool {
	if content == "" {
		return false
	}
	switch content[0] {
	case '|', '>':
		return true
	case '-', '*', '+':
		return len(content) == 1 || content[1] == ' ' || content[1] == '\t'
	}
	if strings.HasPrefix(content, "•") {
		return true
	}
	n := 0
	for n < len(content) && n < 9 && content[n] >= '0' && content[n] <= '9' {
		n++
	}
	if n > 0 && n < len(content) && (content[n] == '.' || content[n] == ')') {
		return n+1 == len(content) || content[n+1] == ' ' || content[n+1] == '\t'
	}
	return false
}

// frontMatterEnd returns the offset just past the closing line of YAML front
// matter ("---" ... "---" or "...") at the start of src, or 0 when there is
// none.
func frontMatterEnd(src string) int {
	it := lineIter{s: src}
	first, _, ok := it.next()
	if !ok || strings.TrimRight(first, " \t\r") != "---" {
		return 0
	}
	for {
		line, _, ok := it.next()
		if !ok {
			return 0
		}
		if t := strings.TrimRight(line, " \t\r"); t == "---" || t == "..." {
			return it.pos
		}
	}
}

// cleanHeading turns Markdown heading source into plain text: code spans
// keep their content, links and images keep their text, emphasis markers
// and backslash escapes are removed, and whitespace is collapsed.
func cleanHeading(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == '\\' && i+1 < len(s) && isASCIIPunct(s[i+1]):
			b.WriteByte(s[i+1])
			i += 2
		case c == '`':
			n := 1
			for i+n < len(s) && s[i+n] == '`' {
				n++
			}
			fence := s[i : i+n]
			if j := strings.Index(s[i+n:], fence); j >= 0 {
				b.WriteString(s[i+n : i+n+j])
				i += n + j + n
			} else {
				i += n
			}
		case c == '!' && i+1 < len(s) && s[i+1] == '[':
			i++ // image: keep its alt text like a link's text
		case c == '[':
			if end := strings.IndexByte(s[i:], ']'); end > 0 && i+end+1 < len(s) && s[i+end+1] == '(' {
				if close := strings.IndexByte(s[i+end+1:], ')'); close > 0 {
					b.WriteString(cleanEmphasis(s[i+1 : i+end]))
					i += end + 1 + close + 1
					continue
				}
			}
			b.WriteByte(c)
			i++
		default:
			j := i + 1
			for j < len(s) && s[j] != '\\' && s[j] != '`' && s[j] != '!' && s[j] != '[' {
				j++
			}
			b.WriteString(cleanEmphasis(s[i:j]))
			i = j
		}
	}
	return strings.Join(strings.Fields(b.String()), " ")
}

// cleanEmphasis drops runs of '*' and '_' that open or close a word.
func cleanEmphasis(s string) string {
	if !strings.ContainsAny(s, "*_") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		c := s[i]
		if c != '*' && c != '_' {
			b.WriteByte(c)
			i++
			continue
		}
		j := i
		for j < len(s) && s[j] == c {
			j++
		}
		before := i == 0 || isASCIISpaceOrPunct(s[i-1])
		after := j == len(s) || isASCIISpaceOrPunct(s[j])
		if !before && !after {
			b.WriteString(s[i:j]) // snake_case, 2*3
		}
		i = j
	}
	return b.String()
}

func isASCIIPunct(c byte) bool {
	return c < 0x80 && (c >= '!' && c <= '/' || c >= ':' && c <= '@' || c >= '[' && c <= '`' || c >= '{' && c <= '~')
}

func isASCIISpaceOrPunct(c byte) bool {
	return c == ' ' || c == '\t' || isASCIIPunct(c)
}

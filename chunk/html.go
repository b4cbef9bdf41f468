package chunk

import (
	"slices"
	"sort"
	"strings"

	"golang.org/x/net/html"
)

// ExtractHTML returns the visible text of an HTML document as the chunker
// sees it, plus the document title.
//
// Dropped: script, style, noscript, template, nav, aside, form, iframe, svg
// and other embedded or interactive content (button, select, textarea,
// dialog, canvas, object, audio, video), the head, elements marked hidden or
// aria-hidden="true" or with a navigation, banner, contentinfo,
// complementary, search, menu or toolbar role, and page-level header and
// footer elements (those not inside article, main or section; of a
// page-level header only its headings are kept).
//
// Block elements (p, div, li, br, tr, pre, blockquote, table, headings, ...)
// end paragraphs, which are separated by a blank line; headings h1–h6 stand
// alone on their own line; table cells are separated by a tab. Character
// references are decoded, and no-break spaces become plain spaces.
// Whitespace is collapsed except inside pre, listing, xmp and plaintext,
// which keep their inner whitespace (not their leading and trailing
// whitespace).
//
// The title is the text of the first <title> element, or else of the first
// h1, with whitespace collapsed and cut to about 200 bytes. ExtractHTML
// never panics and is safe for concurrent use.
func ExtractHTML(src string) (text string, title string) {
	x := extract(src, nil)
	return x.out.String(), x.title
}

// extractHTML extracts src into a doc whose segs map its text back to src.
func extractHTML(src string, lim *limits) *doc {
	x := extract(src, lim)
	return &doc{text: x.out.String(), sections: sectionize(x.blocks, lim), segs: x.segs}
}

// htmlSeg maps output bytes [out, outEnd) to source bytes [src, srcEnd).
type htmlSeg struct {
	out, outEnd int
	src, srcEnd int
}

// mapRange maps the output range [start, end) to the source range spanning
// the segments it overlaps. Positions inside a segment are mapped in
// proportion; a segment's source is never shorter than its output (character
// references only shrink when decoded), so distinct output starts inside
// segments map to distinct source starts.
func mapRange(segs []htmlSeg, start, end int) (int, int) {
	if len(segs) == 0 {
		return 0, 0
	}
	i := sort.Search(len(segs), func(k int) bool { return segs[k].outEnd > start })
	if i == len(segs) {
		i = len(segs) - 1
	}
	s := segs[i]
	srcStart := s.src
	if start > s.out {
		srcStart = s.src + int(int64(start-s.out)*int64(s.srcEnd-s.src)/int64(s.outEnd-s.out))
	}
	j := sort.Search(len(segs), func(k int) bool { return segs[k].out >= end }) - 1
	if j < i {
		j = i
	}
	e := segs[j]
	srcEnd := e.srcEnd
	if end < e.outEnd && end > e.out {
		n := int64(end-e.out) * int64(e.srcEnd-e.src)
		d := int64(e.outEnd - e.out)
		srcEnd = e.src + int((n+d-1)/d)
	}
	if srcEnd <= srcStart {
		srcEnd = srcStart + 1
		if srcEnd > s.srcEnd && s.srcEnd > srcStart {
			srcEnd = s.srcEnd
		}
	}
	return srcStart, srcEnd
}

// Element classes.
var (
	htmlVoid = setOf("area", "base", "br", "col", "embed", "hr", "img", "input", "keygen",
		"link", "meta", "param", "source", "track", "wbr", "basefont", "bgsound", "frame")
	htmlSkip = setOf("script", "style", "noscript", "template", "nav", "aside", "form",
		"iframe", "svg", "button", "select", "textarea", "dialog", "canvas", "object",
		"audio", "video", "noembed", "noframes", "datalist", "map")
	htmlBlock = setOf("address", "article", "aside", "blockquote", "body", "br", "caption",
		"center", "dd", "details", "dialog", "dir", "div", "dl", "dt", "fieldset", "figcaption",
		"figure", "footer", "form", "h1", "h2", "h3", "h4", "h5", "h6", "header", "hgroup", "hr",
		"html", "li", "main", "menu", "nav", "ol", "p", "pre", "section", "summary", "table",
		"tbody", "tfoot", "thead", "tr", "ul", "legend", "xmp", "plaintext", "listing", "search")
	htmlContainer = setOf("article", "main", "section")
	// Start tags that end an unclosed heading (parse errors in practice).
	htmlEndsHeading = setOf("p", "ul", "ol", "dl", "table", "pre", "blockquote", "section",
		"article", "main", "header", "footer", "nav", "aside", "form", "li", "hr", "body")
	htmlSkipRoles = setOf("navigation", "banner", "contentinfo", "complementary", "search",
		"menu", "menubar", "toolbar", "tablist")
	htmlHeadOK = setOf("title", "meta", "link", "style", "script", "base", "noscript",
		"template", "head")
)

func setOf(names ...string) map[string]bool {
	m := make(map[string]bool, len(names))
	for _, n := range names {
		m[n] = true
	}
	return m
}

func headingLevel(name string) int {
	if len(name) == 2 && name[0] == 'h' && name[1] >= '1' && name[1] <= '6' {
		return int(name[1] - '0')
	}
	return 0
}

// openElem is an element on the extractor's stack of open elements.
type openElem struct {
	name       string
	skip       bool // its content is dropped
	head       bool
	headerOnly bool // a page-level header: keep only its headings
	container  bool // article, main, section
	pre        bool // whitespace is kept
	raw        bool // xmp, plaintext: text is not unescaped
	heading    int
}

type extractor struct {
	lim    *limits
	src    string
	out    strings.Builder
	segs   []htmlSeg
	blocks []block
	title  string

	stack  []openElem
	counts map[string]int

	skip, head, headerOnly, container, pre, raw int

	// The current block: blockStart < 0 when none is open.
	blockStart int
	blockKind  blockKind
	// Pending separators before the next text.
	pendingBreak bool
	pendingSep   string // " ", "\t" or preserved whitespace inside pre
	sepKept      bool   // pendingSep is whitespace a pre keeps

	// The open heading, if any.
	heading      int // level, 0 when none
	headingStack int // stack depth of the heading element
	headingText  strings.Builder
	firstH1      string

	inTitle   bool
	titleText strings.Builder
}

func extract(src string, lim *limits) *extractor {
	x := &extractor{lim: lim, src: src, counts: map[string]int{}, blockStart: -1}
	z := html.NewTokenizer(strings.NewReader(src))
	off := 0
	for {
		tt := z.Next()
		if tt == html.ErrorToken {
			break
		}
		n := len(z.Raw())
		if off+n > len(src) {
			n = len(src) - off
		}
		switch tt {
		case html.TextToken:
			x.text(off, src[off:off+n], z)
		case html.StartTagToken, html.SelfClosingTagToken:
			name, hasAttr := z.TagName()
			x.startTag(string(name), hasAttr, tt == html.SelfClosingTagToken, z)
		case html.EndTagToken:
			name, _ := z.TagName()
			x.endTag(string(name))
		}
		off += n
	}
	x.finishHeading()
	x.closeBlock()
	if x.title == "" {
		x.title = x.firstH1
	}
	return x
}

// text handles a text token whose raw source is raw at offset off.
func (x *extractor) text(off int, raw string, z *html.Tokenizer) {
	if x.inTitle {
		if x.title == "" {
			x.titleText.Write(z.Text())
		}
		return
	}
	if x.skip > 0 {
		return
	}
	if x.head > 0 {
		if isBlankHTML(raw) {
			return
		}
		// Text cannot live in the head: the head ends here.
		x.popTo(x.lastIndex(func(e openElem) bool { return e.head }))
		if x.skip > 0 {
			return
		}
	}
	if x.headerOnly > 0 && x.heading == 0 {
		return
	}
	preserve := x.pre > 0
	unescape := x.raw == 0
	i := 0
	for i < len(raw) {
		j := i
		for j < len(raw) && isHTMLSpace(raw[j]) {
			j++
		}
		if j > i {
			x.space(raw[i:j], preserve)
			i = j
			continue
		}
		for j < len(raw) && !isHTMLSpace(raw[j]) {
			j++
		}
		x.word(raw[i:j], off+i, off+j, unescape)
		i = j
	}
}

// space records whitespace between words.
func (x *extractor) space(ws string, preserve bool) {
	if !preserve {
		if x.pendingSep == "" {
			x.pendingSep = " "
		}
		return
	}
	ws = strings.ReplaceAll(ws, "\r\n", "\n")
	ws = strings.ReplaceAll(ws, "\r", "\n")
	ws = strings.ReplaceAll(ws, "\f", " ")
	if !x.sepKept {
		x.pendingSep = "" // a collapsed space or a cell's tab gives way
	}
	x.pendingSep += ws
	x.sepKept = true
}

// word writes one whitespace-free run of source text.
func (x *extractor) word(raw string, srcStart, srcEnd int, unescape bool) {
	w := raw
	if unescape && strings.IndexByte(w, '&') >= 0 {
		w = html.UnescapeString(w)
	}
	if strings.IndexByte(w, 0) >= 0 {
		w = strings.ReplaceAll(w, "\x00", "")
	}
	if strings.Contains(w, "\u00a0") {
		w = strings.ReplaceAll(w, "\u00a0", " ") // &nbsp; reads as a space
	}
	if w == "" {
		return
	}
	if s, e := trimSpan(w, 0, len(w)); s == e {
		// Only decoded whitespace (&nbsp;, &#10;): a separator, or a space
		// that a pre keeps.
		x.space(" ", x.pre > 0)
		return
	}
	if x.pendingBreak && x.blockStart >= 0 {
		x.closeBlock()
	}
	x.pendingBreak = false
	if x.blockStart < 0 {
		if x.out.Len() > 0 {
			x.out.WriteString("\n\n")
		}
		x.blockStart = x.out.Len()
		switch {
		case x.heading > 0:
			x.blockKind = blockHeading
		case x.pre > 0:
			x.blockKind = blockCode
		default:
			x.blockKind = blockPara
		}
	} else if x.pendingSep != "" {
		x.out.WriteString(x.pendingSep)
		if x.heading > 0 {
			x.headingText.WriteByte(' ')
		}
	}
	x.pendingSep, x.sepKept = "", false
	o := x.out.Len()
	x.out.WriteString(w)
	if x.heading > 0 {
		x.headingText.WriteString(w)
	}
	x.addSeg(htmlSeg{out: o, outEnd: x.out.Len(), src: srcStart, srcEnd: srcEnd})
}

// addSeg records a segment, merged into the previous one when both map
// their text byte for byte and so does the gap between them: mapRange then
// maps every offset of the merged segment exactly as it would the two. Plain
// runs of words thus take one segment, not one per word.
func (x *extractor) addSeg(s htmlSeg) {
	if n := len(x.segs); n > 0 {
		p := &x.segs[n-1]
		if p.outEnd-p.out == p.srcEnd-p.src && s.outEnd-s.out == s.srcEnd-s.src &&
			s.out >= p.outEnd && s.out-p.outEnd == s.src-p.srcEnd {
			p.outEnd, p.srcEnd = s.outEnd, s.srcEnd
			return
		}
	}
	x.segs = append(x.segs, s)
	x.lim.piece(len(x.segs))
}

// closeBlock ends the current block, if any.
func (x *extractor) closeBlock() {
	if x.blockStart < 0 {
		return
	}
	s, e := trimSpan(x.out.String(), x.blockStart, x.out.Len())
	if s < e {
		b := block{start: s, end: e, kind: x.blockKind}
		if b.kind == blockHeading {
			b.level = x.heading
			b.title = strings.Join(strings.Fields(x.headingText.String()), " ")
		}
		x.blocks = append(x.blocks, b)
		x.lim.block(&b)
	}
	x.blockStart = -1
	x.pendingSep, x.sepKept = "", false
}

// breakBlock asks for a paragraph break before the next text. Inside a
// heading it asks for a space: a heading is one line.
func (x *extractor) breakBlock() {
	if x.heading > 0 {
		if x.pendingSep == "" {
			x.pendingSep = " "
		}
		return
	}
	x.pendingBreak = true
	x.pendingSep, x.sepKept = "", false
}

func (x *extractor) startTag(name string, hasAttr, selfClosing bool, z *html.Tokenizer) {
	if name == "title" && !selfClosing && x.skip == 0 {
		x.inTitle = true
		return
	}
	skip := htmlSkip[name]
	if hasAttr && hiddenByAttrs(z) {
		skip = true
	}
	x.closeImplied(name)
	if x.skip == 0 {
		x.separate(name)
	}
	if htmlVoid[name] || selfClosing || len(x.stack) >= maxOpen {
		return
	}
	e := x.newElem(name, skip)
	if lvl := headingLevel(name); lvl > 0 && x.skip == 0 && !e.skip {
		x.finishHeading()
		e.heading = lvl
		x.closeBlock()
		x.breakBlock()
		x.heading = lvl
		x.headingStack = len(x.stack)
		x.headingText.Reset()
	}
	x.push(e)
}

// hiddenByAttrs reads the attributes of the tag z is at and reports whether
// they hide its content: hidden, aria-hidden="true", a role skipped as
// navigation, or the class of a heading's permalink.
func hiddenByAttrs(z *html.Tokenizer) bool {
	hidden := false
	for {
		k, v, more := z.TagAttr()
		switch string(k) {
		case "hidden":
			hidden = true
		case "aria-hidden":
			if strings.EqualFold(strings.TrimSpace(string(v)), "true") {
				hidden = true
			}
		case "role":
			if htmlSkipRoles[strings.ToLower(strings.TrimSpace(string(v)))] {
				hidden = true
			}
		case "class":
			// The permalink that Sphinx and MkDocs put in every
			// heading (<a class="headerlink">¶</a>): not its text.
			if slices.Contains(strings.Fields(string(v)), "headerlink") {
				hidden = true
			}
		}
		if !more {
			return hidden
		}
	}
}

// closeImplied closes the open elements a start tag of name ends: the
// head, a heading, a paragraph, a list item or a definition.
func (x *extractor) closeImplied(name string) {
	if x.head > 0 && !htmlHeadOK[name] {
		x.popTo(x.lastIndex(func(e openElem) bool { return e.head }))
	}
	if x.heading > 0 && (headingLevel(name) > 0 || htmlEndsHeading[name]) {
		x.popTo(x.headingStack)
	}
	if htmlBlock[name] && name != "br" && x.counts["p"] > 0 {
		x.popTo(x.lastIndex(func(e openElem) bool { return e.name == "p" }))
	}
	if name == "li" {
		x.popTo(x.lastIndexScoped("li", "ul", "ol", "menu"))
	}
	if name == "dt" || name == "dd" {
		x.popTo(x.lastIndexScoped2("dt", "dd", "dl"))
	}
}

// separate puts what a start tag of name means for the text: a block
// break (a line break inside pre), or a tab between table cells.
func (x *extractor) separate(name string) {
	switch {
	case htmlBlock[name]:
		if x.pre > 0 && name == "br" {
			x.space("\n", true)
		} else {
			x.breakBlock()
		}
	case name == "td" || name == "th":
		if x.blockStart >= 0 && !x.pendingBreak {
			x.pendingSep, x.sepKept = "\t", false
		}
	}
}

// newElem returns the open element of a start tag of name: skipped, the
// head, a page header or footer, a content container, or preformatted.
func (x *extractor) newElem(name string, skip bool) openElem {
	e := openElem{name: name, skip: skip}
	switch {
	case name == "head":
		e.head = true
	case (name == "header" || name == "footer") && x.container == 0:
		if name == "footer" {
			e.skip = true
		} else {
			e.headerOnly = true
		}
	case htmlContainer[name]:
		e.container = true
	case name == "pre" || name == "listing" || name == "textarea":
		e.pre = true
	case name == "xmp" || name == "plaintext":
		e.pre, e.raw = true, true
	}
	return e
}

func (x *extractor) endTag(name string) {
	if name == "title" && x.inTitle {
		x.inTitle = false
		if x.title == "" {
			x.title = capTitle(x.titleText.String())
		}
		return
	}
	if headingLevel(name) > 0 {
		if x.heading > 0 {
			x.popTo(x.headingStack)
			return
		}
	}
	switch name {
	case "body", "html":
		return // content after </body> still belongs to the body
	case "br":
		if x.skip == 0 {
			x.breakBlock() // "</br>" is read as <br>
		}
		return
	}
	if x.counts[name] > 0 {
		x.popTo(x.lastIndex(func(e openElem) bool { return e.name == name }))
	}
	if htmlBlock[name] && x.skip == 0 {
		x.breakBlock()
	}
}

// maxOpen bounds the extractor's stack of open elements. Elements opened
// deeper are not tracked (their text is kept, and a hidden or skipped one
// among them does not hide its content), so that nesting bombs cost
// neither memory nor time.
const maxOpen = 1024

func (x *extractor) push(e openElem) {
	x.stack = append(x.stack, e)
	x.counts[e.name]++
	x.count(e, 1)
}

// count adds d to the counters of the open elements of e's kinds (skip,
// head, headerOnly, container, pre, raw): 1 as e opens, -1 as it closes.
func (x *extractor) count(e openElem, d int) {
	if e.skip {
		x.skip += d
	}
	if e.head {
		x.head += d
	}
	if e.headerOnly {
		x.headerOnly += d
	}
	if e.container {
		x.container += d
	}
	if e.pre {
		x.pre += d
	}
	if e.raw {
		x.raw += d
	}
}

// popTo pops the open elements from the top down to and including index i
// (no-op for i < 0).
func (x *extractor) popTo(i int) {
	if i < 0 {
		return
	}
	for len(x.stack) > i {
		e := x.stack[len(x.stack)-1]
		x.stack = x.stack[:len(x.stack)-1]
		if x.counts[e.name]--; x.counts[e.name] <= 0 {
			delete(x.counts, e.name) // keep the map as small as the stack
		}
		x.count(e, -1)
		if e.pre && x.skip == 0 {
			x.breakBlock()
		}
		if e.heading > 0 && x.heading > 0 && len(x.stack) == x.headingStack {
			x.finishHeading()
		}
	}
}

// finishHeading closes the open heading's block.
func (x *extractor) finishHeading() {
	if x.heading == 0 {
		return
	}
	if x.blockStart >= 0 && x.blockKind == blockHeading {
		n := len(x.blocks)
		x.closeBlock()
		if len(x.blocks) > n && x.heading == 1 && x.firstH1 == "" {
			x.firstH1 = capTitle(x.blocks[n].title)
		}
	}
	x.heading = 0
	x.breakBlock()
}

// lastIndex returns the index of the topmost open element matching f, or -1.
func (x *extractor) lastIndex(f func(openElem) bool) int {
	for i := len(x.stack) - 1; i >= 0; i-- {
		if f(x.stack[i]) {
			return i
		}
	}
	return -1
}

// maxScopeScan bounds the search for an implied end tag, keeping deeply
// nested adversarial input linear.
const maxScopeScan = 256

// lastIndexScoped returns the index of the topmost open element named name
// unless an element named in stops is above it, or -1.
func (x *extractor) lastIndexScoped(name string, stops ...string) int {
	if x.counts[name] == 0 {
		return -1
	}
	for i := len(x.stack) - 1; i >= 0 && i >= len(x.stack)-maxScopeScan; i-- {
		n := x.stack[i].name
		if n == name {
			return i
		}
		for _, s := range stops {
			if n == s {
				return -1
			}
		}
	}
	return -1
}

// lastIndexScoped2 is lastIndexScoped for either of two names.
func (x *extractor) lastIndexScoped2(a, b, stop string) int {
	if x.counts[a] == 0 && x.counts[b] == 0 {
		return -1
	}
	for i := len(x.stack) - 1; i >= 0 && i >= len(x.stack)-maxScopeScan; i-- {
		switch x.stack[i].name {
		case a, b:
			return i
		case stop:
			return -1
		}
	}
	return -1
}

func isHTMLSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f'
}

func isBlankHTML(s string) bool {
	for i := 0; i < len(s); i++ {
		if !isHTMLSpace(s[i]) {
			return false
		}
	}
	return true
}

package extract

import (
	"archive/zip"
	"bytes"
	"encoding/binary"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
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
	e := &nodeEstimate{nodes: 4} // html, head, body, and the document
	z := html.NewTokenizer(strings.NewReader(src))
	for e.nodes <= limit {
		tt := z.Next()
		switch tt {
		case html.ErrorToken:
			return e.nodes
		case html.TextToken:
			e.nodes += 1 + e.open()
		case html.StartTagToken, html.SelfClosingTagToken:
			name, hasAttr := z.TagName()
			a := atom.Lookup(name)
			if formattingTags[a] && !formatting {
				continue
			}
			e.nodes += e.startTag(a, tt == html.StartTagToken)
			if e.nodes > limit || tt != html.StartTagToken {
				continue
			}
			switch {
			case markerTags[a]:
				e.markers = append(e.markers, len(e.list))
			case formattingTags[a]:
				e.pushFormatting(formattingKey(z, name, hasAttr), a)
			}
		case html.EndTagToken:
			name, _ := z.TagName()
			e.endTag(atom.Lookup(name), formatting)
		}
	}
	return e.nodes
}

// nodeEstimate is the state of estimateNodes: the nodes counted so far, the
// list of open formatting elements and its markers, and where the parser
// stands in paragraphs and tables (for the elements it inserts: a table
// section around a row, a row around a cell, a paragraph for a stray </p>).
type nodeEstimate struct {
	nodes int
	// list holds the open formatting elements; markers the positions in
	// list where a marker stands (entries before it are not reconstructed
	// until it is closed). Every scan stays after the last marker and costs
	// no more than the nodes it adds, so the estimate is linear in the page
	// and in limit.
	list                    []formattingEntry
	markers                 []int
	pOpen, inSection, inRow bool
}

// formattingEntry is an open formatting element: its tag and attributes as
// one key, and its atom.
type formattingEntry struct {
	key string
	a   atom.Atom
}

// open counts the formatting elements after the last marker, those a text
// or a start tag may reconstruct.
func (e *nodeEstimate) open() int {
	if len(e.markers) == 0 {
		return len(e.list)
	}
	return len(e.list) - e.markers[len(e.markers)-1]
}

func (e *nodeEstimate) remove(i int) { e.list = append(e.list[:i], e.list[i+1:]...) }

// removeLast removes the last open formatting element of atom a after the
// last marker, if there is one.
func (e *nodeEstimate) removeLast(a atom.Atom) {
	for i := len(e.list) - 1; i >= len(e.list)-e.open(); i-- {
		if e.list[i].a == a {
			e.remove(i)
			return
		}
	}
}

// startTag returns the nodes a start tag of atom a makes: the element,
// those it implies, and the reconstruction of what is open; and it notes
// the paragraphs and table parts it opens or closes (start: not
// self-closing).
func (e *nodeEstimate) startTag(a atom.Atom, start bool) int {
	n := 1 + e.open()
	switch a {
	case atom.Table:
		e.inSection, e.inRow = false, false
	case atom.Tbody, atom.Thead, atom.Tfoot:
		e.inSection, e.inRow = true, false
	case atom.Tr:
		if !e.inSection {
			n++
		}
		e.inSection, e.inRow = true, true
	case atom.Td, atom.Th:
		if !e.inRow {
			n++
			if !e.inSection {
				n++
			}
		}
		e.inSection, e.inRow = true, true
	case atom.Col:
		n++ // colgroup
	}
	if closesP[a] {
		e.pOpen = false
	}
	if a == atom.P && start {
		e.pOpen = true
	}
	return n
}

// formattingKey returns what makes two formatting elements the same: the
// tag name and its attributes in order.
func formattingKey(z *html.Tokenizer, name []byte, hasAttr bool) string {
	if !hasAttr {
		return string(name)
	}
	var b strings.Builder
	b.Write(name)
	for {
		k, v, more := z.TagAttr()
		b.WriteByte(0)
		b.Write(k)
		b.WriteByte('=')
		b.Write(v)
		if !more {
			return b.String()
		}
	}
}

// pushFormatting adds an open formatting element to the list: a new <a> or
// <nobr> closes the open one, and at most three of a kind stay after the
// last marker (Noah's ark).
func (e *nodeEstimate) pushFormatting(key string, a atom.Atom) {
	if a == atom.A || a == atom.Nobr {
		e.removeLast(a)
	}
	same, first := 0, -1
	for i := len(e.list) - 1; i >= len(e.list)-e.open(); i-- {
		if e.list[i].key == key {
			same++
			first = i
		}
	}
	if same >= 3 {
		e.remove(first)
	}
	e.list = append(e.list, formattingEntry{key: key, a: a})
}

// endTag counts the nodes an end tag of atom a makes (a stray </p> or
// </br> makes an element; the adoption agency may clone what is open for a
// formatting end tag) and closes what it ends.
func (e *nodeEstimate) endTag(a atom.Atom, formatting bool) {
	switch {
	case a == atom.P && e.pOpen:
		e.pOpen = false
	case a == atom.P, a == atom.Br:
		e.nodes++
	case a == atom.Tr:
		e.inRow = false
	case a == atom.Tbody || a == atom.Thead || a == atom.Tfoot || a == atom.Table:
		e.inSection, e.inRow = false, false
	}
	switch {
	case formattingTags[a] && formatting:
		e.nodes += e.open()
		e.removeLast(a)
	case markerTags[a] && len(e.markers) > 0:
		e.list = e.list[:e.markers[len(e.markers)-1]]
		e.markers = e.markers[:len(e.markers)-1]
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
		i = skipTagName(src, i, "/>")
		name := strings.ToLower(src[start:i])
		k, next, closed := countTagAttrs(src, i)
		n += k
		if !closed {
			return n
		}
		i = next
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

// htmlSpace reports whether c is HTML white space.
func htmlSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' }

// skipTagName returns the index after the name that starts at i: up to
// white space or one of the bytes in stop.
func skipTagName(src string, i int, stop string) int {
	for i < len(src) && !htmlSpace(src[i]) && strings.IndexByte(stop, src[i]) < 0 {
		i++
	}
	return i
}

// skipHTMLSpace returns the index of the first byte from i that is not
// white space.
func skipHTMLSpace(src string, i int) int {
	for i < len(src) && htmlSpace(src[i]) {
		i++
	}
	return i
}

// countTagAttrs counts the attributes of the start tag whose name ends at
// i, as the tokenizer reads them, and returns the index after its '>'.
// closed is false when src ends first.
func countTagAttrs(src string, i int) (n, next int, closed bool) {
	for {
		for i < len(src) && (htmlSpace(src[i]) || src[i] == '/') {
			i++
		}
		if i >= len(src) {
			return n, i, false
		}
		if src[i] == '>' {
			return n, i + 1, true
		}
		// A name (its first byte may be '='), then maybe = and a value.
		i = skipTagName(src, i+1, "/>=")
		n++
		i = skipHTMLSpace(src, i)
		if i >= len(src) || src[i] != '=' {
			continue
		}
		i = skipHTMLSpace(src, i+1)
		if i < len(src) && (src[i] == '"' || src[i] == '\'') {
			k := strings.IndexByte(src[i+1:], src[i])
			if k < 0 {
				return n, len(src), false
			}
			i += 1 + k + 1
		} else {
			i = skipTagName(src, i, ">")
		}
	}
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

// Containers. DOCX and EPUB are ZIP archives of XML and XHTML parts. Every
// part is read through zipParts: the archive's entry count is checked
// before archive/zip reads its directory, every part is decompressed
// through the document's budget (Options.MaxExpanded) and its own byte
// limit, and an XML part is tokenized as it is decompressed (never held
// whole) by xmlPart, which bounds each token's bytes and the nesting
// depth. What a reader keeps of a part (manifest items, the reading list,
// table-of-contents titles) is bounded by the reader.

// Bounds of container parts.
const (
	zipMaxEntries  = 100_000  // entries of an archive
	partSmall      = 1 << 20  // container.xml, encryption.xml, core.xml
	partMeta       = 16 << 20 // an EPUB package document, navigation document or NCX; DOCX styles
	partMaxToken   = 1 << 20  // bytes of one XML token: a run of text, a tag with its attributes
	partMaxDepth   = 256      // element nesting of an XML part
	partMaxEntries = 100_000  // manifest items of an EPUB
)

// cfbMagic starts an OLE compound file: what Office writes for an
// encrypted DOCX.
var cfbMagic = []byte{0xD0, 0xCF, 0x11, 0xE0, 0xA1, 0xB1, 0x1A, 0xE1}

// openZip opens a ZIP archive after checking its entry count, so that
// archive/zip's central-directory read stays bounded.
func openZip(data []byte, kind string) (*zip.Reader, error) {
	if bytes.HasPrefix(data, cfbMagic) {
		return nil, fmt.Errorf("%w: it needs a password to open (an OLE container, as Office writes encrypted %s files); decrypt it first", ErrEncrypted, kind)
	}
	if !bytes.HasPrefix(data, []byte("PK\x03\x04")) {
		return nil, fmt.Errorf("%w: not a %s file (not a ZIP archive)", ErrDamaged, kind)
	}
	// The end-of-central-directory record is in the last 64 KiB + 22 bytes.
	tail := data[max(0, len(data)-(1<<16)-22):]
	if i := bytes.LastIndex(tail, []byte("PK\x05\x06")); i >= 0 && i+12 <= len(tail) {
		if n := binary.LittleEndian.Uint16(tail[i+10:]); n != 0xFFFF && int(n) > zipMaxEntries {
			return nil, fmt.Errorf("%w: more than %d entries in the archive", ErrLimit, zipMaxEntries)
		}
	}
	if i := bytes.LastIndex(tail, []byte("PK\x06\x06")); i >= 0 && i+40 <= len(tail) {
		if n := binary.LittleEndian.Uint64(tail[i+32:]); n > zipMaxEntries {
			return nil, fmt.Errorf("%w: more than %d entries in the archive", ErrLimit, zipMaxEntries)
		}
	}
	zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrDamaged, kind, err)
	}
	if len(zr.File) > zipMaxEntries {
		return nil, fmt.Errorf("%w: more than %d entries in the archive", ErrLimit, zipMaxEntries)
	}
	return zr, nil
}

// zipParts reads the entries of an archive within a decompression budget.
// It is not safe for concurrent use.
type zipParts struct {
	zr     *zip.Reader
	budget int64 // decompressed bytes still allowed
	limit  int64 // the whole budget, for messages
	byName map[string]*zip.File
}

func newZipParts(zr *zip.Reader, budget int64) *zipParts {
	z := &zipParts{zr: zr, budget: budget, limit: budget, byName: map[string]*zip.File{}}
	for _, f := range zr.File {
		z.byName[strings.TrimPrefix(f.Name, "/")] = f
	}
	return z
}

var errNoPart = errors.New("no such part")

// has reports whether the archive holds a part.
func (z *zipParts) has(name string) bool {
	_, ok := z.byName[strings.TrimPrefix(name, "/")]
	return ok
}

// open returns the part name decompressing as it is read, failing with
// ErrLimit past max bytes or past the budget.
func (z *zipParts) open(name string, max int64) (*partReader, error) {
	f, ok := z.byName[strings.TrimPrefix(name, "/")]
	if !ok {
		return nil, errNoPart
	}
	rc, err := f.Open()
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrDamaged, name, err)
	}
	return &partReader{z: z, name: name, rc: rc, max: max}, nil
}

// read returns the part name whole, at most max bytes.
func (z *zipParts) read(name string, max int64) ([]byte, error) {
	p, err := z.open(name, max)
	if err != nil {
		return nil, err
	}
	defer p.Close()
	data, err := io.ReadAll(p)
	if err != nil {
		return nil, err
	}
	return data, nil
}

// xml returns the part name as a stream of XML tokens.
func (z *zipParts) xml(name string, max int64) (*xmlPart, error) {
	p, err := z.open(name, max)
	if err != nil {
		return nil, err
	}
	x := &xmlPart{part: p}
	p.tokenMax = partMaxToken
	x.d = xml.NewDecoder(p)
	return x, nil
}

// partReader is one part being decompressed. Its errors other than io.EOF
// wrap ErrLimit (a bound passed) or ErrDamaged (the entry cannot be
// decompressed). It implements io.ByteReader, so that an xml.Decoder reads
// through it byte by byte (buffered below) and every byte is counted.
type partReader struct {
	z        *zipParts
	name     string
	rc       io.ReadCloser
	buf      []byte // read ahead from rc, not yet counted
	max      int64  // bytes this part may have
	n        int64  // bytes read
	tokenMax int64  // with tokenStart: the bytes one token may take (0: no bound)
	tokStart int64
	err      error
}

func (p *partReader) fill() error {
	if p.err != nil {
		return p.err
	}
	if len(p.buf) > 0 {
		return nil
	}
	var tmp [32 << 10]byte
	n, err := p.rc.Read(tmp[:])
	p.buf = append(p.buf[:0], tmp[:n]...)
	if n > 0 {
		return nil
	}
	switch {
	case err == io.EOF:
		p.err = io.EOF
	case err != nil:
		p.err = fmt.Errorf("%w: %s: %v", ErrDamaged, p.name, err)
	default:
		return nil // a reader may return 0, nil; try again
	}
	return p.err
}

// take counts n bytes, failing past a bound.
func (p *partReader) take(n int) error {
	p.n += int64(n)
	switch {
	case p.n > p.max:
		p.err = fmt.Errorf("%w: %s is larger than %s", ErrLimit, p.name, sizeString(p.max))
	case p.z.budget < int64(n):
		p.err = fmt.Errorf("%w: the archive decompresses to more than %s", ErrLimit, sizeString(p.z.limit))
	case p.tokenMax > 0 && p.n-p.tokStart > p.tokenMax:
		p.err = fmt.Errorf("%w: %s holds an XML token longer than %s", ErrLimit, p.name, sizeString(p.tokenMax))
	}
	p.z.budget -= int64(n)
	return p.err
}

func (p *partReader) Read(b []byte) (int, error) {
	if err := p.fill(); err != nil {
		return 0, err
	}
	n := copy(b, p.buf)
	p.buf = p.buf[n:]
	if err := p.take(n); err != nil {
		return 0, err
	}
	return n, nil
}

func (p *partReader) ReadByte() (byte, error) {
	for len(p.buf) == 0 {
		if err := p.fill(); err != nil {
			return 0, err
		}
	}
	c := p.buf[0]
	p.buf = p.buf[1:]
	if err := p.take(1); err != nil {
		return 0, err
	}
	return c, nil
}

func (p *partReader) Close() error { return p.rc.Close() }

// xmlPart tokenizes an XML part within partMaxToken bytes a token and
// partMaxDepth levels of nesting. encoding/xml expands no entities but the
// five predefined ones and character references. Tokens are raw (names
// keep their prefixes, end tags are not matched to start tags): the
// readers go by local names, and raw tokens cost a third of the time. It
// is not safe for concurrent use.
type xmlPart struct {
	part  *partReader
	d     *xml.Decoder
	depth int
}

// Token returns the next token. At the end of the part it returns io.EOF;
// a bound passed fails with ErrLimit (also when the decompression failed
// with ErrDamaged, that error), malformed XML with an error wrapping
// neither (readers keep what they read before it).
func (x *xmlPart) Token() (xml.Token, error) {
	x.part.tokStart = x.part.n
	tok, err := x.d.RawToken()
	if err != nil {
		if x.part.err != nil && x.part.err != io.EOF {
			return nil, x.part.err
		}
		return nil, err
	}
	switch tok.(type) {
	case xml.StartElement:
		if x.depth++; x.depth > partMaxDepth {
			return nil, fmt.Errorf("%w: %s nests elements deeper than %d", ErrLimit, x.part.name, partMaxDepth)
		}
	case xml.EndElement:
		x.depth--
	}
	return tok, nil
}

// Close releases the part.
func (x *xmlPart) Close() error { return x.part.Close() }

// stop tells a reader's token loop whether to end at err: io.EOF and
// malformed XML end it quietly (nil: keep what was read), a bound passed
// or damage ends it with that error.
func stop(err error) error {
	if errors.Is(err, ErrLimit) || errors.Is(err, ErrDamaged) {
		return err
	}
	return nil
}

// sizeString writes a byte count for messages: "16 MiB".
func sizeString(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}

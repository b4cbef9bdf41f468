package extract

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"math"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"unicode"

	"github.com/ledongthuc/pdf"
)

// PDF extracts the text layer of a PDF file. The document's outline
// (bookmarks), when it has one, gives the headings: each entry starts a
// section at the top of its page, nested as in the outline. Without an
// outline every page is a section "Page N". Text is laid out in lines and
// paragraphs from the glyphs' positions. The title is the document's Title
// metadata, else its first outline entry.
//
// An encrypted PDF that opens without a password (one with only an owner
// password, which restricts printing or copying) is decrypted and read;
// one that needs a password to open fails with ErrEncrypted, one without
// text on any page with ErrNoTextLayer, one that cannot be parsed with
// ErrDamaged.
//
// The PDF library (github.com/ledongthuc/pdf) allocates by numbers read
// from the file and decompresses streams as it reads, so PDF first reads
// the file's syntax itself (pdfscan.go) and refuses cross-reference and
// object-stream structures the library would follow forever or allocate
// by without bound, walks the page tree and outline itself with bounds on
// depth and visits, reads each page once, and measures every page's content
// and its fonts' character maps decompressed before the library interprets
// them. What is left unbounded inside the library (time spent on a page
// the checks let through) is bounded by the process the command line reads
// documents in (cmd/ragmem/internal/docread).
func PDF(data []byte, opts *DocumentOptions) (Page, error) {
	o := opts.withDefaults()
	if len(data) > o.MaxBytes {
		return Page{}, fmt.Errorf("%w: %d bytes (limit %d)", ErrTooLarge, len(data), o.MaxBytes)
	}
	if err := pdfPreflight(data); err != nil {
		return Page{}, err
	}
	b := newDocBuilder(o)
	var title string
	err := guard("PDF", func() error {
		scan, err := scanPDF(data)
		if err != nil {
			return err
		}
		if err := checkStructure(data, scan); err != nil {
			return err
		}
		sec, err := pdfEncryption(scan)
		if err != nil {
			return err
		}
		if sec != nil {
			data = pdfDecrypt(data, scan, sec)
		}
		scan = nil
		r, err := pdf.NewReader(bytes.NewReader(data), int64(len(data)))
		if err != nil {
			if errors.Is(err, pdf.ErrInvalidPassword) {
				return errNeedsPassword
			}
			return fmt.Errorf("%w: %v", ErrDamaged, err)
		}
		if !r.Trailer().Key("Encrypt").IsNull() {
			return fmt.Errorf("%w: its encryption could not be removed; decrypt it first", ErrEncrypted)
		}
		x := &pdfReader{r: r, o: o, b: b, budget: o.MaxExpanded, done: map[[sha256.Size]byte][]string{}}
		title = cleanLine(r.Trailer().Key("Info").Key("Title").Text(), 300)
		return x.read(&title)
	})
	if err != nil {
		return Page{}, err
	}
	return b.page(title, MethodPDF)
}

// Bounds of the PDF preflight and walks.
const (
	pdfMaxObjects   = 1 << 22  // cross-reference entries
	pdfMaxTreeDepth = 64       // page tree and outline nesting
	pdfMaxPageBytes = 16 << 20 // decompressed content of one page
	pdfLayoutBytes  = 1 << 20  // pages up to this size are laid out from their glyphs' positions
	pdfMaxOutline   = 10_000   // outline entries
)

var (
	pdfSizeRe  = regexp.MustCompile(`/Size\s+(-?\d+)`)
	pdfWRe     = regexp.MustCompile(`/W\s*\[([^\]]*)\]`)
	pdfIndexRe = regexp.MustCompile(`/Index\s*\[([^\]]*)\]`)
)

// pdfPreflight refuses files whose cross-reference numbers would make the
// library allocate without bound.
func pdfPreflight(data []byte) error {
	if !bytes.HasPrefix(data, []byte("%PDF-")) {
		return fmt.Errorf("%w: not a PDF file (no %%PDF- header)", ErrDamaged)
	}
	for _, m := range pdfSizeRe.FindAllSubmatch(data, -1) {
		if n, err := strconv.ParseInt(string(m[1]), 10, 64); err != nil || n < 0 || n > pdfMaxObjects {
			return fmt.Errorf("%w: a cross-reference /Size of %s", ErrLimit, m[1])
		}
	}
	for _, m := range pdfWRe.FindAllSubmatch(data, -1) {
		for _, f := range bytes.Fields(m[1]) {
			if n, err := strconv.Atoi(string(f)); err != nil || n < 0 || n > 8 {
				return fmt.Errorf("%w: a cross-reference field width of %s", ErrDamaged, f)
			}
		}
	}
	for _, m := range pdfIndexRe.FindAllSubmatch(data, -1) {
		fs := bytes.Fields(m[1])
		for i := 0; i+1 < len(fs); i += 2 {
			start, err1 := strconv.ParseInt(string(fs[i]), 10, 64)
			n, err2 := strconv.ParseInt(string(fs[i+1]), 10, 64)
			if err1 != nil || err2 != nil || start < 0 || n < 0 || start+n > pdfMaxObjects {
				return fmt.Errorf("%w: a cross-reference /Index of %s %s", ErrLimit, fs[i], fs[i+1])
			}
		}
	}
	return nil
}

type pdfReader struct {
	r      *pdf.Reader
	o      DocumentOptions
	b      *docBuilder
	budget int64 // decompressed bytes still allowed
	visits int
	// done holds the paragraphs of the pages read, by a hash of their content and
	// fonts: pages that share both (a page tree that names one page
	// many times, or many pages that draw one content stream) are
	// interpreted once.
	done map[[sha256.Size]byte][]string
	cut  bool // the page tree was deeper than pdfMaxTreeDepth
}

// outlineEntry is one bookmark: its title, nesting level (1 = top) and
// the index of the page it points to (-1 when unknown).
type outlineEntry struct {
	title string
	level int
	page  int
}

func (x *pdfReader) read(title *string) error {
	pages := x.pages()
	if len(pages) > x.o.MaxParts {
		return fmt.Errorf("%w: more than %d pages", ErrLimit, x.o.MaxParts)
	}
	outline := x.outline(pages)
	if *title == "" && len(outline) > 0 {
		*title = outline[0].title
	}
	byPage := map[int][]outlineEntry{}
	lastPage := 0
	for _, e := range outline {
		p := e.page
		if p < 0 {
			p = lastPage // no destination: where the previous entry was
		}
		lastPage = p
		byPage[p] = append(byPage[p], e)
	}
	textFound := false
	for i, p := range pages {
		if err := x.b.check(); err != nil {
			return err
		}
		if len(outline) == 0 {
			x.b.heading(2, fmt.Sprintf("Page %d", i+1))
		}
		for _, e := range byPage[i] {
			x.b.heading(e.level, e.title)
		}
		paras, err := x.pageText(p)
		if err != nil {
			return err
		}
		for _, para := range paras {
			textFound = true
			x.b.para(para)
		}
	}
	if x.b.err != nil {
		return x.b.err
	}
	if !textFound {
		if x.cut {
			return fmt.Errorf("%w: its page tree is nested deeper than %d levels", ErrDamaged, pdfMaxTreeDepth)
		}
		return ErrNoTextLayer
	}
	return nil
}

// pages walks the page tree in order, bounded in depth, visits and count.
// A node of the tree that is its own ancestor (a loop in damaged files) is
// not walked again. The library hides object numbers, so a node is known by
// its dictionary, which names its kids and parent by object number.
func (x *pdfReader) pages() []pdf.Value {
	var out []pdf.Value
	var path []string // the dictionaries of the nodes being walked
	seen := map[string]bool{}
	var walk func(v pdf.Value, depth int)
	walk = func(v pdf.Value, depth int) {
		x.visits++
		if depth > pdfMaxTreeDepth {
			x.cut = true
			return
		}
		if x.visits > 4*x.o.MaxParts+1000 || len(out) > x.o.MaxParts {
			return
		}
		switch v.Key("Type").Name() {
		case "Page":
			id := v.String()
			if seen[id] {
				return // a page named twice is read once
			}
			seen[id] = true
			out = append(out, v)
		case "Pages", "":
			id := v.String()
			for _, p := range path {
				if p == id {
					return
				}
			}
			path = append(path, id)
			defer func() { path = path[:len(path)-1] }()
			kids := v.Key("Kids")
			for i := 0; i < kids.Len() && len(out) <= x.o.MaxParts; i++ {
				walk(kids.Index(i), depth+1)
			}
		}
	}
	walk(x.r.Trailer().Key("Root").Key("Pages"), 0)
	return out
}

// outline reads the bookmarks, bounded in depth and count.
func (x *pdfReader) outline(pages []pdf.Value) []outlineEntry {
	root := x.r.Trailer().Key("Root")
	first := root.Key("Outlines").Key("First")
	if first.IsNull() {
		return nil
	}
	pageIndex := map[string]int{}
	for i, p := range pages {
		pageIndex[p.String()] = i
	}
	var out []outlineEntry
	seen := map[string]bool{} // the items read (by dictionary: see pages), so a loop ends
	var walk func(v pdf.Value, level int)
	walk = func(v pdf.Value, level int) {
		for n := 0; !v.IsNull() && len(out) < pdfMaxOutline && level <= pdfMaxTreeDepth; n++ {
			x.visits++
			if x.visits > 4*x.o.MaxParts+pdfMaxOutline {
				return
			}
			id := v.String()
			if seen[id] {
				return
			}
			seen[id] = true
			if t := cleanLine(v.Key("Title").Text(), 300); t != "" {
				out = append(out, outlineEntry{title: t, level: min(level, 6), page: x.destPage(root, v, pageIndex)})
			}
			walk(v.Key("First"), level+1)
			v = v.Key("Next")
		}
	}
	walk(first, 1)
	return out
}

// destPage returns the page index an outline item points to, or -1.
func (x *pdfReader) destPage(root, item pdf.Value, pageIndex map[string]int) int {
	d := item.Key("Dest")
	if d.IsNull() {
		if a := item.Key("A"); a.Key("S").Name() == "GoTo" {
			d = a.Key("D")
		}
	}
	// A named destination: in the Dests dictionary or the Names tree.
	if d.Kind() == pdf.Name || d.Kind() == pdf.String {
		name := d.Name()
		if d.Kind() == pdf.String {
			name = d.RawString()
		}
		if v := root.Key("Dests").Key(name); !v.IsNull() {
			d = v
		} else {
			d = x.lookupName(root.Key("Names").Key("Dests"), name, 0)
		}
	}
	if d.Kind() == pdf.Dict {
		d = d.Key("D")
	}
	if d.Kind() != pdf.Array || d.Len() == 0 {
		return -1
	}
	if i, ok := pageIndex[d.Index(0).String()]; ok {
		return i
	}
	return -1
}

// lookupName finds a name in a name tree, bounded in depth and visits.
func (x *pdfReader) lookupName(node pdf.Value, name string, depth int) pdf.Value {
	x.visits++
	if node.IsNull() || depth > pdfMaxTreeDepth || x.visits > 4*x.o.MaxParts+pdfMaxOutline {
		return pdf.Value{}
	}
	names := node.Key("Names")
	for i := 0; i+1 < names.Len(); i += 2 {
		if names.Index(i).RawString() == name {
			return names.Index(i + 1)
		}
	}
	kids := node.Key("Kids")
	for i := 0; i < kids.Len(); i++ {
		if v := x.lookupName(kids.Index(i), name, depth+1); !v.IsNull() {
			return v
		}
	}
	return pdf.Value{}
}

// measure reads a stream decompressed, up to limit bytes, charging the
// document's budget; it fails when the stream is longer.
func (x *pdfReader) measure(v pdf.Value, limit int64, what string) (int64, error) {
	if v.Kind() != pdf.Stream {
		return 0, nil
	}
	rc := v.Reader()
	defer rc.Close()
	n, err := io.Copy(io.Discard, io.LimitReader(rc, limit+1))
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) {
		return n, fmt.Errorf("%w: %s: %v", ErrDamaged, what, err)
	}
	if n > limit {
		return n, fmt.Errorf("%w: %s decompresses to more than %d bytes", ErrLimit, what, limit)
	}
	if x.budget -= n; x.budget < 0 {
		return n, fmt.Errorf("%w: the document decompresses to more than %d bytes", ErrLimit, x.o.MaxExpanded)
	}
	return n, x.b.check()
}

// pageText returns the paragraphs of one page. Pages of up to
// pdfLayoutBytes of content are laid out from their glyphs' positions;
// larger ones (pages of vector drawings, mostly) are read as a stream of
// text, which costs no memory per glyph.
func (x *pdfReader) pageText(v pdf.Value) ([]string, error) {
	contents := v.Key("Contents")
	if contents.IsNull() {
		return nil, nil
	}
	res, err := inheritedResources(v)
	if err != nil {
		return nil, err
	}
	// The text depends on the content and the fonts (the library follows
	// no other resource); the key is hashed, so that large dictionaries
	// shared by many pages are not held once per page.
	id := sha256.Sum256([]byte(contents.String() + "\x00" + res.Key("Font").String()))
	if paras, ok := x.done[id]; ok {
		return paras, nil
	}
	paras, err := x.interpret(v, contents)
	if err != nil {
		return nil, err
	}
	x.done[id] = paras
	return paras, nil
}

// inheritedResources finds a page's resources as the library does, up its
// /Parent chain, but refuses a chain that loops (a page that is its own
// parent) or is deeper than the page tree may be: the library would walk
// it forever.
func inheritedResources(v pdf.Value) (pdf.Value, error) {
	var seen []string
	for depth := 0; !v.IsNull(); depth++ {
		if r := v.Key("Resources"); !r.IsNull() {
			return r, nil
		}
		if depth > pdfMaxTreeDepth {
			return pdf.Value{}, fmt.Errorf("%w: a page's /Parent chain is longer than %d", ErrDamaged, pdfMaxTreeDepth)
		}
		id := v.String()
		for _, s := range seen {
			if s == id {
				return pdf.Value{}, fmt.Errorf("%w: a page's /Parent chain loops (a page tree node is its own ancestor)", ErrDamaged)
			}
		}
		seen = append(seen, id)
		v = v.Key("Parent")
	}
	return pdf.Value{}, nil
}

// interpret returns the paragraphs of a page whose content is contents.
func (x *pdfReader) interpret(v, contents pdf.Value) ([]string, error) {
	streams := []pdf.Value{contents}
	if contents.Kind() == pdf.Array {
		streams = streams[:0]
		for i := 0; i < contents.Len(); i++ {
			if i == 4096 {
				return nil, fmt.Errorf("%w: a page of more than 4096 content streams", ErrLimit)
			}
			streams = append(streams, contents.Index(i))
		}
	}
	var size int64
	for _, s := range streams {
		n, err := x.measure(s, pdfMaxPageBytes-size, "a page's content")
		if err != nil {
			return nil, err
		}
		size += n
	}
	fonts := v.Key("Resources").Key("Font")
	for i, k := range fonts.Keys() {
		if i == 1024 {
			return nil, fmt.Errorf("%w: a page with more than 1024 fonts", ErrLimit)
		}
		if _, err := x.measure(fonts.Key(k).Key("ToUnicode"), pdfMaxPageBytes, "a font's character map"); err != nil {
			return nil, err
		}
	}
	p := pdf.Page{V: v}
	if size > pdfLayoutBytes {
		var text string
		err := guard("PDF page", func() error {
			var err error
			text, err = p.GetPlainText(nil)
			return err
		})
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrDamaged, err)
		}
		var paras []string
		for _, para := range strings.Split(text, "\n\n") {
			if t := strings.TrimSpace(para); t != "" {
				paras = append(paras, t)
			}
		}
		return paras, nil
	}
	var glyphs []pdf.Text
	err := guard("PDF page", func() error {
		glyphs = p.Content().Text
		return nil
	})
	if err != nil {
		return nil, err
	}
	return layout(glyphs), nil
}

// layout turns glyphs, in content order, into paragraphs: a glyph starts a
// new line when it sits on another baseline or goes back to the left, a
// space where it leaves a gap, and a paragraph break where the gap between
// lines is larger than usual.
func layout(gs []pdf.Text) []string {
	lines := layoutLines(gs)
	return layoutParagraphs(lines, lineSpacing(lines))
}

// pdfLine is a line of a page's text as layout assembles it.
type pdfLine struct {
	text      strings.Builder
	y, size   float64
	lastX     float64
	lastWidth float64
}

// layoutLines assembles a page's glyph runs into lines: a run starts a new
// line when it leaves the baseline or goes back to the left, and a space is
// put where a gap separates two runs of a line.
func layoutLines(gs []pdf.Text) []*pdfLine {
	var lines []*pdfLine
	var cur *pdfLine
	for _, g := range gs {
		if g.S == "" || math.IsNaN(g.X) || math.IsNaN(g.Y) || math.IsInf(g.X, 0) || math.IsInf(g.Y, 0) {
			continue
		}
		size := math.Abs(g.FontSize)
		if size < 1 || size > 1000 || math.IsNaN(size) {
			size = 10
		}
		newLine := cur == nil || math.Abs(g.Y-cur.y) > size*0.5 || g.X < cur.lastX-size*0.5
		if newLine {
			cur = &pdfLine{y: g.Y, size: size}
			lines = append(lines, cur)
		} else if gap := g.X - (cur.lastX + cur.lastWidth); gap > size*0.15 && !strings.HasSuffix(cur.text.String(), " ") && !unicode.IsSpace(firstRune(g.S)) {
			cur.text.WriteByte(' ')
		}
		cur.text.WriteString(g.S)
		cur.lastX, cur.lastWidth = g.X, math.Max(0, g.W)
		if cur.lastWidth == 0 {
			cur.lastWidth = size * 0.5 * float64(len([]rune(g.S)))
		}
	}
	return lines
}

// lineSpacing is the median distance between consecutive baselines (0
// when no line is below another).
func lineSpacing(lines []*pdfLine) float64 {
	var gaps []float64
	for i := 1; i < len(lines); i++ {
		if d := lines[i-1].y - lines[i].y; d > 0 {
			gaps = append(gaps, d)
		}
	}
	sort.Float64s(gaps)
	if len(gaps) == 0 {
		return 0
	}
	return gaps[len(gaps)/2]
}

// layoutParagraphs joins lines into paragraphs: a paragraph ends where the
// next line goes up or is more than 1.5 times the spacing below, and a word
// broken by a hyphen at the end of a line is joined.
func layoutParagraphs(lines []*pdfLine, spacing float64) []string {
	var paras []string
	var p strings.Builder
	for i, l := range lines {
		t := strings.Join(strings.Fields(l.text.String()), " ")
		if t == "" {
			continue
		}
		if i > 0 && p.Len() > 0 {
			d := lines[i-1].y - l.y
			if d <= 0 || spacing > 0 && d > spacing*1.5 {
				paras = append(paras, p.String())
				p.Reset()
			} else {
				s := p.String()
				if strings.HasSuffix(s, "-") && len(s) > 1 && unicode.IsLetter(lastRune(s[:len(s)-1])) && unicode.IsLower(firstRune(t)) {
					p.Reset()
					p.WriteString(s[:len(s)-1])
				} else {
					p.WriteByte(' ')
				}
			}
		}
		p.WriteString(t)
	}
	if p.Len() > 0 {
		paras = append(paras, p.String())
	}
	return paras
}

func firstRune(s string) rune {
	for _, r := range s {
		return r
	}
	return 0
}

func lastRune(s string) rune {
	rs := []rune(s)
	if len(rs) == 0 {
		return 0
	}
	return rs[len(rs)-1]
}

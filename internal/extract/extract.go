// Package extract finds the main content of a web page before it is chunked:
// the article body with its headings, without scripts, styles, navigation,
// ads, cookie banners, share buttons and other page furniture. It is the
// first stage of ragmem's data flow ("source"), left of chunk.
//
// HTML goes through go-readability (a Go port of Mozilla's Readability.js,
// the algorithm behind Firefox's reader view). When Readability finds no
// article, or finds far less text than the page has, the whole page body is
// kept instead, after ad-like and navigational elements are removed. Either
// way the result is HTML that chunk.Split reads with headings intact.
//
//	p, err := extract.HTML(rawHTML, "https://example.com/post", nil)
//	doc := index.Document{SourceURL: url, Title: p.Title, Content: p.HTML, Format: chunk.HTML}
//
// Everything here is safe for concurrent use and never panics: input that is
// not valid UTF-8, huge, deeply nested or empty gets a result or an error.
package extract

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"

	readability "github.com/go-shiori/go-readability"
	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// Errors.
var (
	// ErrTooLarge is returned for input longer than Options.MaxBytes.
	ErrTooLarge = errors.New("extract: page is too large")
	// ErrNoContent is returned when a page has no visible text at all.
	ErrNoContent = errors.New("extract: page has no text content")
	// ErrTooComplex is returned for a page that would make more than
	// Options.MaxNodes nodes even without its formatting tags, or whose
	// extraction takes longer than Options.Timeout.
	ErrTooComplex = errors.New("extract: page is too complex")
)

// Methods reported in Page.Method.
const (
	MethodReadability = "readability" // Readability found the article
	MethodFallback    = "fallback"    // the cleaned page body was kept
)

// Defaults of Options.
const (
	DefaultMaxBytes    = 10 << 20
	DefaultMaxElements = 50_000
	DefaultMaxNodes    = 250_000
	DefaultTimeout     = 10 * time.Second
	DefaultMinText     = 200
)

// Options configure HTML. A nil *Options means all defaults.
type Options struct {
	// MaxBytes is the largest input accepted; longer input fails with
	// ErrTooLarge. Default 10 MiB.
	MaxBytes int
	// MaxElements is the number of elements above which Readability is not
	// attempted (its scoring is super-linear: about a second for 50,000
	// elements) and the cleaned body is kept. Default 50,000.
	MaxElements int
	// MaxNodes bounds the document tree, and so the memory and time of
	// extraction (a node takes a few hundred bytes while a page is
	// extracted). Before parsing, a page is measured with the tokenizer; a
	// page whose formatting tags (b, i, u, font, ...) left open would make
	// the HTML parser clone them past MaxNodes is read without those tags,
	// and a page that would still make more nodes fails with
	// ErrTooComplex. So does a page whose tags carry more than MaxNodes
	// attributes. Default 250,000 (a 10 MiB article makes about
	// 100,000).
	MaxNodes int
	// Timeout bounds extraction: Readability is skipped once half of it
	// has passed, and a page not extracted within it fails with
	// ErrTooComplex. Default 10 s.
	Timeout time.Duration
	// MinText is the fewest characters of text a Readability article must
	// have to be preferred to the whole cleaned body when the body has at
	// least twice as much text. Default 200.
	MinText int
}

func (o *Options) withDefaults() Options {
	var r Options
	if o != nil {
		r = *o
	}
	if r.MaxBytes <= 0 {
		r.MaxBytes = DefaultMaxBytes
	}
	if r.MaxElements <= 0 {
		r.MaxElements = DefaultMaxElements
	}
	if r.MaxNodes <= 0 {
		r.MaxNodes = DefaultMaxNodes
	}
	if r.Timeout <= 0 {
		r.Timeout = DefaultTimeout
	}
	if r.MinText <= 0 {
		r.MinText = DefaultMinText
	}
	return r
}

// Page is the extracted main content of a page.
type Page struct {
	Title     string    // the article title ("" when the page has none)
	Byline    string    // author line, when the page names one
	SiteName  string    // site name from the page's metadata
	Excerpt   string    // a one-paragraph summary or the first paragraph
	Language  string    // the page's declared language ("" when none)
	Published time.Time // publication time from the page's metadata; zero when unknown
	HTML      string    // the main content as HTML, headings kept: what to index (chunk.HTML)
	Text      string    // the visible text of HTML: blocks on their own lines, whitespace collapsed
	Method    string    // MethodReadability or MethodFallback
}

// HTML extracts the main content of an HTML page. pageURL, when it parses
// as an absolute URL, resolves the page's relative links; it may be "".
// Invalid UTF-8 is replaced, never rejected.
func HTML(src, pageURL string, opts *Options) (Page, error) {
	return HTMLContext(context.Background(), src, pageURL, opts)
}

// HTMLContext is HTML that gives up, with an error wrapping ErrTooComplex,
// once ctx is done (checked between the stages of extraction).
func HTMLContext(ctx context.Context, src, pageURL string, opts *Options) (Page, error) {
	o := opts.withDefaults()
	if len(src) > o.MaxBytes {
		return Page{}, fmt.Errorf("%w: %d bytes (limit %d)", ErrTooLarge, len(src), o.MaxBytes)
	}
	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	late := func(stage string) error {
		if ctx.Err() == nil {
			return nil
		}
		return fmt.Errorf("%w: extraction stopped after %s, at %s (the limit is %s)", ErrTooComplex, time.Since(start).Round(time.Millisecond), stage, o.Timeout)
	}
	if !utf8.ValidString(src) {
		src = strings.ToValidUTF8(src, "\uFFFD")
	}
	var base *url.URL
	if u, err := url.Parse(pageURL); err == nil && u.IsAbs() {
		base = u
	}
	src, err := bound(src, o.MaxNodes)
	if err != nil {
		return Page{}, err
	}
	if err := late("measuring the page"); err != nil {
		return Page{}, err
	}
	doc, err := parse(src)
	if err != nil {
		return Page{}, err
	}
	src = "" // the tree holds what is needed
	if err := late("parsing"); err != nil {
		return Page{}, err
	}
	// Furniture goes first, while its class names are still there to see
	// (Readability strips them), so neither path can pick it up.
	// The head stays: Readability reads its metadata.
	walk(doc, func(n *html.Node) bool {
		if n.Type == html.ElementNode && n.DataAtom == atom.Body {
			prune(n, false)
			return false
		}
		return true
	})
	elems := countElements(doc, o.MaxElements+1)
	h1, raw := cleanLine(firstH1(doc), 300), documentTitle(doc)

	var p Page
	if elems <= o.MaxElements && time.Since(start) < o.Timeout/2 {
		p = readable(doc, base)
		if err := late("Readability"); err != nil {
			return Page{}, err
		}
	}
	rdLen := utf8.RuneCountInString(p.Text)
	if p.Method == "" || rdLen < o.MinText {
		// Compare with (or fall back to) the cleaned body; keep what
		// Readability learned of the metadata.
		title, body := renderBody(doc)
		doc = nil // the tree can go before the body is parsed again
		fallback := cleanBody(title, body)
		if err := late("cleaning the page body"); err != nil {
			return Page{}, err
		}
		fbLen := utf8.RuneCountInString(fallback.Text)
		if p.Method == "" || rdLen == 0 || fbLen >= 2*rdLen {
			fallback.Byline, fallback.SiteName, fallback.Excerpt = p.Byline, p.SiteName, p.Excerpt
			fallback.Language, fallback.Published = p.Language, p.Published
			if p.Title != "" {
				fallback.Title = p.Title
			}
			p = fallback
		}
	}
	if strings.TrimSpace(p.Text) == "" {
		return Page{}, ErrNoContent
	}
	p.Title = articleTitle(p.Title, raw, h1)
	if p.Method == MethodReadability && p.Title != "" && !startsWithHeading(p.HTML) {
		// Readability drops the article's own h1 when it repeats the
		// title; put the title back as the top heading so that chunks
		// carry it in their heading path.
		h := "<h1>" + html.EscapeString(p.Title) + "</h1>\n"
		p.HTML = h + p.HTML
		p.Text = p.Title + "\n" + p.Text
	}
	p.Byline = cleanLine(p.Byline, 200)
	p.SiteName = cleanLine(p.SiteName, 200)
	p.Excerpt = cleanLine(p.Excerpt, 500)
	p.Language = cleanLine(p.Language, 35)
	return p, nil
}

// readable runs Readability on doc. Readability is third-party code with a
// history of crashes on odd input, so a panic is turned into "no article"
// and the fallback is used.
func readable(doc *html.Node, base *url.URL) (p Page) {
	defer func() {
		if recover() != nil {
			p = Page{}
		}
	}()
	ps := readability.NewParser()
	art, err := ps.ParseDocument(doc, base)
	if err != nil || art.Node == nil && strings.TrimSpace(art.Content) == "" {
		return Page{Title: art.Title}
	}
	cleaned, text := clean(art.Content)
	p = Page{
		Title: art.Title, Byline: art.Byline, SiteName: art.SiteName, Excerpt: art.Excerpt,
		Language: art.Language, HTML: cleaned, Text: text, Method: MethodReadability,
	}
	if art.PublishedTime != nil {
		p.Published = art.PublishedTime.UTC()
	}
	return p
}

// startsWithHeading reports whether the first element with text in an
// HTML fragment is a heading.
func startsWithHeading(fragment string) bool {
	ctx := &html.Node{Type: html.ElementNode, Data: "body", DataAtom: atom.Body}
	nodes, err := html.ParseFragment(strings.NewReader(fragment), ctx)
	if err != nil {
		return false
	}
	root := &html.Node{Type: html.ElementNode, Data: "div", DataAtom: atom.Div}
	for _, n := range nodes {
		root.AppendChild(n)
	}
	heading, decided := false, false
	walk(root, func(n *html.Node) bool {
		if decided {
			return false
		}
		switch {
		case n.Type == html.ElementNode && headingTags[n.DataAtom]:
			heading, decided = true, true
			return false
		case n.Type == html.TextNode && strings.TrimSpace(n.Data) != "":
			decided = true
		}
		return true
	})
	return heading
}

var headingTags = map[atom.Atom]bool{atom.H1: true, atom.H2: true, atom.H3: true, atom.H4: true, atom.H5: true, atom.H6: true}

// firstH1 returns the text of the first h1 in doc ("" when none).
func firstH1(doc *html.Node) string {
	var h string
	walk(doc, func(n *html.Node) bool {
		if h != "" {
			return false
		}
		if n.Type == html.ElementNode && n.DataAtom == atom.H1 {
			h = textOf(n)
			return false
		}
		return true
	})
	return h
}

// renderBody returns the title of doc and its body rendered as HTML.
func renderBody(doc *html.Node) (title, body string) {
	var bodyNode *html.Node
	walk(doc, func(n *html.Node) bool {
		if n.Type == html.ElementNode {
			switch n.DataAtom {
			case atom.Title:
				if title == "" {
					title = textOf(n)
				}
			case atom.Body:
				if bodyNode == nil {
					bodyNode = n
				}
			}
		}
		return true
	})
	var b bytes.Buffer
	if bodyNode != nil {
		for c := bodyNode.FirstChild; c != nil; c = c.NextSibling {
			_ = html.Render(&b, c)
		}
	}
	return title, b.String()
}

// cleanBody keeps a page body without scripts, navigation and ads.
func cleanBody(title, body string) Page {
	cleaned, text := clean(body)
	return Page{Title: title, HTML: cleaned, Text: text, Method: MethodFallback}
}

// clean removes furniture from an HTML fragment and returns the fragment
// and its visible text.
func clean(fragment string) (string, string) {
	ctx := &html.Node{Type: html.ElementNode, Data: "body", DataAtom: atom.Body}
	nodes, err := html.ParseFragment(strings.NewReader(fragment), ctx)
	if err != nil {
		return "", ""
	}
	root := &html.Node{Type: html.ElementNode, Data: "div", DataAtom: atom.Div}
	for _, n := range nodes {
		root.AppendChild(n)
	}
	prune(root, true)
	var b bytes.Buffer
	for c := root.FirstChild; c != nil; c = c.NextSibling {
		if err := html.Render(&b, c); err != nil {
			break
		}
	}
	return b.String(), visibleText(root)
}

// dropTags are removed with their content wherever they appear.
var dropTags = map[atom.Atom]bool{
	atom.Script: true, atom.Style: true, atom.Noscript: true, atom.Template: true,
	atom.Nav: true, atom.Aside: true, atom.Form: true, atom.Iframe: true, atom.Svg: true,
	atom.Button: true, atom.Select: true, atom.Textarea: true, atom.Input: true,
	atom.Dialog: true, atom.Canvas: true, atom.Object: true, atom.Embed: true,
	atom.Link: true, atom.Meta: true, atom.Base: true, atom.Frame: true, atom.Frameset: true,
	atom.Head: true, atom.Title: true,
}

// furnitureWords mark elements that are page furniture when they are a
// whole word (separated by - _ or space) of the element's id or class.
var furnitureWords = map[string]bool{
	"ad": true, "ads": true, "advert": true, "advertisement": true, "adsbygoogle": true,
	"sponsor": true, "sponsored": true, "promo": true, "banner": true, "cookie": true,
	"cookies": true, "consent": true, "gdpr": true, "newsletter": true, "subscribe": true,
	"share": true, "sharing": true, "social": true, "related": true, "recommended": true,
	"breadcrumb": true, "breadcrumbs": true, "navbar": true, "nav": true, "menu": true,
	"sidebar": true, "footer": true, "masthead": true, "popup": true, "modal": true,
	"comments": true, "comment": true, "disqus": true, "outbrain": true, "taboola": true,
	"skip": true, "toolbar": true, "pagination": true, "pager": true,
	"headerlink": true, // the ¶ permalink Sphinx and MkDocs put in each heading
}

// contentWords protect an element whose id or class also names content
// ("article-share" is furniture, "main-content" is not).
var contentWords = map[string]bool{
	"article": true, "content": true, "main": true, "post": true, "entry": true,
	"story": true, "body": true, "text": true, "page": true, "blog": true,
}

var dropRoles = map[string]bool{
	"navigation": true, "banner": true, "contentinfo": true, "complementary": true,
	"search": true, "menu": true, "menubar": true, "toolbar": true, "dialog": true,
	"alertdialog": true, "tablist": true,
}

// prune removes furniture below n, and with strip also every attribute but
// keptAttrs. It is iterative: nesting depth is attacker-controlled.
func prune(root *html.Node, strip bool) {
	stack := []*html.Node{root}
	for len(stack) > 0 {
		n := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for c := n.FirstChild; c != nil; {
			next := c.NextSibling
			switch {
			case c.Type == html.CommentNode || c.Type == html.DoctypeNode:
				n.RemoveChild(c)
			case c.Type == html.ElementNode && furniture(c):
				n.RemoveChild(c)
			case c.Type == html.ElementNode:
				if strip {
					stripAttrs(c)
				}
				stack = append(stack, c)
			}
			c = next
		}
	}
}

func furniture(n *html.Node) bool {
	if dropTags[n.DataAtom] {
		return true
	}
	if n.DataAtom == 0 && strings.Contains(n.Data, "-") {
		return false // custom elements: judged by their content
	}
	for _, a := range n.Attr {
		switch a.Key {
		case "hidden":
			return true
		case "aria-hidden":
			if strings.EqualFold(strings.TrimSpace(a.Val), "true") {
				return true
			}
		case "role":
			if dropRoles[strings.ToLower(strings.TrimSpace(a.Val))] {
				return true
			}
		case "style":
			v := strings.ToLower(strings.ReplaceAll(a.Val, " ", ""))
			if strings.Contains(v, "display:none") || strings.Contains(v, "visibility:hidden") {
				return true
			}
		case "id", "class":
			if furnitureName(a.Val) {
				return true
			}
		}
	}
	return false
}

// furnitureName reports whether an id or class value names furniture.
func furnitureName(v string) bool {
	words := strings.FieldsFunc(strings.ToLower(v), func(r rune) bool {
		return r == ' ' || r == '-' || r == '_' || r == '\t' || r == '\n'
	})
	found := false
	for _, w := range words {
		if contentWords[w] {
			return false
		}
		if furnitureWords[w] {
			found = true
		}
	}
	return found
}

// keptAttrs are the attributes that survive cleaning.
var keptAttrs = map[string]bool{"href": true, "src": true, "alt": true, "title": true, "lang": true, "colspan": true, "rowspan": true}

func stripAttrs(n *html.Node) {
	kept := n.Attr[:0]
	for _, a := range n.Attr {
		if a.Namespace == "" && keptAttrs[a.Key] {
			if (a.Key == "href" || a.Key == "src") && unsafeURL(a.Val) {
				continue
			}
			kept = append(kept, a)
		}
	}
	n.Attr = kept
}

func unsafeURL(v string) bool {
	v = strings.ToLower(strings.TrimSpace(v))
	return strings.HasPrefix(v, "javascript:") || strings.HasPrefix(v, "vbscript:") || strings.HasPrefix(v, "data:text/html")
}

// walk visits n and its descendants in document order, iteratively; visit
// returns false to skip a node's children.
func walk(n *html.Node, visit func(*html.Node) bool) {
	stack := []*html.Node{n}
	for len(stack) > 0 {
		c := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if !visit(c) {
			continue
		}
		for k := c.LastChild; k != nil; k = k.PrevSibling {
			stack = append(stack, k)
		}
	}
}

func countElements(n *html.Node, limit int) int {
	count := 0
	walk(n, func(c *html.Node) bool {
		if c.Type == html.ElementNode {
			count++
		}
		return count < limit
	})
	return count
}

func textOf(n *html.Node) string {
	var b strings.Builder
	walk(n, func(c *html.Node) bool {
		if c.Type == html.TextNode {
			b.WriteString(c.Data)
		}
		return true
	})
	return b.String()
}

// cleanLine collapses whitespace, drops control characters and cuts s to at
// most max bytes at a rune boundary.
func cleanLine(s string, max int) string {
	s = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			return ' '
		}
		return r
	}, s)
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > max {
		cut := max
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = strings.TrimSpace(s[:cut])
	}
	return s
}

// maxDepth is the element nesting kept when a page nests deeper than the
// HTML parser allows (512 open elements).
const maxDepth = 256

// parse parses src. Pages nested deeper than the parser's limit are parsed
// again with the excess tags dropped (their text kept), and as a last resort
// as plain text in paragraphs.
func parse(src string) (*html.Node, error) {
	doc, err := html.Parse(strings.NewReader(src))
	if err == nil {
		return doc, nil
	}
	if doc, err2 := html.Parse(strings.NewReader(flatten(src, maxDepth))); err2 == nil {
		return doc, nil
	}
	doc, err2 := html.Parse(strings.NewReader(flatten(src, 0)))
	if err2 != nil {
		return nil, fmt.Errorf("extract: parse HTML: %w", err)
	}
	return doc, nil
}

// voidTags never have an end tag.
var voidTags = map[atom.Atom]bool{
	atom.Area: true, atom.Base: true, atom.Br: true, atom.Col: true, atom.Embed: true,
	atom.Hr: true, atom.Img: true, atom.Input: true, atom.Link: true, atom.Meta: true,
	atom.Source: true, atom.Track: true, atom.Wbr: true, atom.Param: true,
}

// flatten re-emits src keeping only tags nested at most depth deep (by a
// tokenizer's count, which is approximate for HTML's implied end tags); text
// is always kept. With depth 0 only text survives, blocks become paragraphs,
// and script and style contents are dropped.
func flatten(src string, depth int) string {
	z := html.NewTokenizer(strings.NewReader(src))
	var b strings.Builder
	b.Grow(len(src))
	open := 0
	skipText := 0 // inside script or style, in text-only mode
	if depth == 0 {
		b.WriteString("<p>")
	}
	for {
		tt := z.Next()
		switch tt {
		case html.ErrorToken:
			return b.String()
		case html.TextToken:
			if skipText == 0 {
				b.WriteString(html.EscapeString(string(z.Text())))
			}
		case html.StartTagToken, html.EndTagToken, html.SelfClosingTagToken:
			name, _ := z.TagName()
			a := atom.Lookup(name)
			if depth == 0 {
				if a == atom.Script || a == atom.Style {
					if tt == html.StartTagToken {
						skipText++
					} else if tt == html.EndTagToken && skipText > 0 {
						skipText--
					}
				}
				if blockTags[a] {
					b.WriteString("</p><p>")
				}
				continue
			}
			switch {
			case tt == html.SelfClosingTagToken || voidTags[a]:
				if open < depth {
					b.Write(z.Raw())
				}
			case tt == html.StartTagToken:
				open++
				if open <= depth {
					b.Write(z.Raw())
				}
			default:
				if open <= depth {
					b.Write(z.Raw())
				}
				if open > 0 {
					open--
				}
			}
		}
	}
}

// blockTags end a line of visible text.
var blockTags = map[atom.Atom]bool{
	atom.Address: true, atom.Article: true, atom.Blockquote: true, atom.Br: true, atom.Caption: true,
	atom.Dd: true, atom.Details: true, atom.Div: true, atom.Dl: true, atom.Dt: true,
	atom.Figcaption: true, atom.Figure: true, atom.Footer: true, atom.H1: true, atom.H2: true,
	atom.H3: true, atom.H4: true, atom.H5: true, atom.H6: true, atom.Header: true, atom.Hr: true,
	atom.Li: true, atom.Main: true, atom.Ol: true, atom.P: true, atom.Pre: true, atom.Section: true,
	atom.Summary: true, atom.Table: true, atom.Td: true, atom.Th: true, atom.Tr: true, atom.Ul: true,
}

// visibleText renders the text under root, one line per block, with
// whitespace collapsed inside lines.
func visibleText(root *html.Node) string {
	var lines []string
	var cur strings.Builder
	flush := func() {
		if l := strings.Join(strings.Fields(cur.String()), " "); l != "" {
			lines = append(lines, l)
		}
		cur.Reset()
	}
	type item struct {
		n   *html.Node
		end bool
	}
	stack := []item{{n: root}}
	for len(stack) > 0 {
		it := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		n := it.n
		if it.end {
			flush()
			continue
		}
		switch n.Type {
		case html.TextNode:
			cur.WriteString(n.Data)
			continue
		case html.ElementNode:
			if blockTags[n.DataAtom] {
				flush()
				stack = append(stack, item{n: n, end: true})
			} else if n.DataAtom == atom.Img {
				cur.WriteByte(' ')
			}
		}
		for c := n.LastChild; c != nil; c = c.PrevSibling {
			stack = append(stack, item{n: c})
		}
	}
	flush()
	return strings.Join(lines, "\n")
}

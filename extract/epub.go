package extract

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

var pathUnescape = url.PathUnescape

// EPUB extracts the text of an EPUB book: its chapters in reading order
// (the package's spine), each cleaned like a web page (scripts, styles and
// navigation dropped) with its own headings kept. A chapter that starts
// without a heading gets one from the book's table of contents (EPUB 3 nav
// document or EPUB 2 NCX), else "Chapter N". The title is the package's
// dc:title. Encrypted (DRM) books fail with ErrEncrypted.
func EPUB(data []byte, opts *DocumentOptions) (Page, error) {
	o := opts.withDefaults()
	if len(data) > o.MaxBytes {
		return Page{}, fmt.Errorf("%w: %d bytes (limit %d)", ErrTooLarge, len(data), o.MaxBytes)
	}
	zr, err := openZip(data, "EPUB")
	if err != nil {
		return Page{}, err
	}
	z := newZipParts(zr, o.MaxExpanded)
	b := newDocBuilder(o)
	var title string
	err = guard("EPUB", func() error {
		if _, ok := z.byName["META-INF/encryption.xml"]; ok {
			if enc, err := z.read("META-INF/encryption.xml"); err == nil && bytes.Contains(enc, []byte("EncryptedData")) && !onlyFontObfuscation(enc) {
				return fmt.Errorf("%w (the book is protected by DRM)", ErrEncrypted)
			}
		}
		container, err := z.read("META-INF/container.xml")
		if err != nil {
			if errors.Is(err, errNoPart) {
				return fmt.Errorf("%w: not an EPUB file (no META-INF/container.xml)", ErrDamaged)
			}
			return err
		}
		opfPath := rootfile(container)
		if opfPath == "" {
			return fmt.Errorf("%w: EPUB container names no package document", ErrDamaged)
		}
		opf, err := z.read(opfPath)
		if err != nil {
			return fmt.Errorf("%w: EPUB package document %s: %v", ErrDamaged, opfPath, err)
		}
		pkg := readOPF(opf, opfPath)
		title = pkg.title
		toc := map[string]string{}
		if pkg.nav != "" {
			if nav, err := z.read(pkg.nav); err == nil {
				navTitles(nav, pkg.nav, toc)
			}
		}
		if pkg.ncx != "" && len(toc) == 0 {
			if ncx, err := z.read(pkg.ncx); err == nil {
				ncxTitles(ncx, pkg.ncx, toc)
			}
		}
		if len(pkg.spine) > o.MaxParts {
			return fmt.Errorf("%w: more than %d chapters", ErrLimit, o.MaxParts)
		}
		for i, href := range pkg.spine {
			if err := b.check(); err != nil {
				return err
			}
			doc, err := z.read(href)
			if errors.Is(err, errNoPart) {
				continue // a spine entry the archive lacks
			}
			if err != nil {
				return err
			}
			name := toc[href]
			if name == "" {
				name = fmt.Sprintf("Chapter %d", i+1)
			}
			if err := epubChapter(doc, name, b); err != nil {
				if errors.Is(err, ErrTooComplex) {
					return fmt.Errorf("%w: chapter %d: %v", ErrLimit, i+1, strings.TrimPrefix(err.Error(), "extract: "))
				}
				return err
			}
		}
		if b.err == nil && strings.TrimSpace(b.text.String()) == "" {
			return ErrNoContent
		}
		return b.err
	})
	if err != nil {
		return Page{}, err
	}
	return b.page(title, MethodEPUB)
}

// onlyFontObfuscation reports whether encryption.xml only obfuscates fonts
// (the IDPF and Adobe algorithms), which leaves the text readable.
func onlyFontObfuscation(enc []byte) bool {
	d := xml.NewDecoder(bytes.NewReader(enc))
	ok := true
	for {
		tok, err := d.Token()
		if err != nil {
			return ok
		}
		if t, isStart := tok.(xml.StartElement); isStart && t.Name.Local == "EncryptionMethod" {
			alg := attr(t, "Algorithm")
			if alg != "http://www.idpf.org/2008/embedding" && alg != "http://ns.adobe.com/pdf/enc#RC" {
				ok = false
			}
		}
	}
}

// rootfile reads the package document's path from container.xml.
func rootfile(data []byte) string {
	d := xml.NewDecoder(bytes.NewReader(data))
	for {
		tok, err := d.Token()
		if err != nil {
			return ""
		}
		if t, ok := tok.(xml.StartElement); ok && t.Name.Local == "rootfile" {
			if p := attr(t, "full-path"); p != "" {
				return zipPath("", p)
			}
		}
	}
}

type opfPackage struct {
	title    string
	spine    []string // archive paths in reading order
	nav, ncx string   // archive paths of the tables of contents ("" when none)
}

// readOPF reads the title, the spine and the tables of contents.
func readOPF(data []byte, base string) opfPackage {
	var p opfPackage
	items := map[string]string{} // manifest id -> path
	var spineIDs []string
	tocID := ""
	d := xml.NewDecoder(bytes.NewReader(data))
	inTitle := false
	var title strings.Builder
	for {
		tok, err := d.Token()
		if err != nil {
			break
		}
		switch t := tok.(type) {
		case xml.StartElement:
			switch t.Name.Local {
			case "title":
				inTitle = p.title == "" && title.Len() == 0
			case "item":
				href := zipPath(base, attr(t, "href"))
				items[attr(t, "id")] = href
				if strings.Contains(" "+attr(t, "properties")+" ", " nav ") {
					p.nav = href
				}
				if attr(t, "media-type") == "application/x-dtbncx+xml" && p.ncx == "" {
					p.ncx = href
				}
			case "spine":
				tocID = attr(t, "toc")
			case "itemref":
				if attr(t, "linear") != "no" {
					spineIDs = append(spineIDs, attr(t, "idref"))
				}
			}
		case xml.EndElement:
			if t.Name.Local == "title" && inTitle {
				inTitle = false
				p.title = cleanLine(title.String(), 300)
			}
		case xml.CharData:
			if inTitle && title.Len() < 1000 {
				title.Write(t)
			}
		}
	}
	if tocID != "" && items[tocID] != "" {
		p.ncx = items[tocID]
	}
	for _, id := range spineIDs {
		if h := items[id]; h != "" {
			p.spine = append(p.spine, h)
		}
	}
	return p
}

// navTitles reads chapter titles from an EPUB 3 navigation document.
func navTitles(data []byte, base string, toc map[string]string) {
	doc, err := parse(string(data))
	if err != nil {
		return
	}
	walk(doc, func(n *html.Node) bool {
		if n.Type == html.ElementNode && n.DataAtom == atom.A {
			for _, a := range n.Attr {
				if a.Key == "href" {
					if p := zipPath(base, a.Val); p != "" && toc[p] == "" {
						toc[p] = cleanLine(textOf(n), 300)
					}
				}
			}
			return false
		}
		return true
	})
}

// ncxTitles reads chapter titles from an EPUB 2 NCX.
func ncxTitles(data []byte, base string, toc map[string]string) {
	d := xml.NewDecoder(bytes.NewReader(data))
	var label strings.Builder
	inText := false
	for {
		tok, err := d.Token()
		if err != nil {
			return
		}
		switch t := tok.(type) {
		case xml.StartElement:
			switch t.Name.Local {
			case "navPoint":
				label.Reset()
			case "text":
				inText = true
			case "content":
				if p := zipPath(base, attr(t, "src")); p != "" && toc[p] == "" {
					toc[p] = cleanLine(label.String(), 300)
				}
			}
		case xml.EndElement:
			if t.Name.Local == "text" {
				inText = false
			}
		case xml.CharData:
			if inText && label.Len() < 1000 {
				label.Write(t)
			}
		}
	}
}

// epubChapter adds one chapter: its body cleaned like a web page, headed
// by name when the chapter does not start with a heading of its own.
func epubChapter(data []byte, name string, b *docBuilder) error {
	// A chapter is HTML: bounded like a web page before it is parsed.
	src, err := bound(string(data), DefaultMaxNodes)
	if err != nil {
		return err
	}
	doc, err := parse(src)
	if err != nil {
		return nil // an unreadable chapter is skipped
	}
	var body *html.Node
	walk(doc, func(n *html.Node) bool {
		if body == nil && n.Type == html.ElementNode && n.DataAtom == atom.Body {
			body = n
		}
		return body == nil
	})
	if body == nil {
		return nil
	}
	var raw bytes.Buffer
	for c := body.FirstChild; c != nil; c = c.NextSibling {
		if err := html.Render(&raw, c); err != nil {
			return nil
		}
	}
	cleaned, text := clean(raw.String())
	if strings.TrimSpace(text) == "" {
		return nil
	}
	if !startsWithHeading(cleaned) {
		b.heading(1, name)
	}
	if !b.grow(len(text) + 1) {
		return b.err
	}
	b.html.WriteString(cleaned)
	b.html.WriteByte('\n')
	b.text.WriteString(text)
	b.text.WriteByte('\n')
	b.paras++
	return nil
}

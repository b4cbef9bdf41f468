package extract

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
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
		if err := epubDRM(z); err != nil {
			return err
		}
		pkg, err := epubPackage(z, o.MaxParts)
		if err != nil {
			return err
		}
		title = pkg.title
		toc, err := epubTOC(z, pkg)
		if err != nil {
			return err
		}
		if err := epubChapters(z, pkg.spine, toc, b); err != nil {
			return err
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

// epubDRM fails with ErrEncrypted when META-INF/encryption.xml says the
// book is protected by DRM.
func epubDRM(z *zipParts) error {
	if !z.has("META-INF/encryption.xml") {
		return nil
	}
	x, err := z.xml("META-INF/encryption.xml", partSmall)
	if err != nil {
		return err
	}
	drm, err := drmProtected(x)
	x.Close()
	if err != nil {
		return err
	}
	if drm {
		return fmt.Errorf("%w: the book is protected by DRM", ErrEncrypted)
	}
	return nil
}

// epubPackage reads the package document META-INF/container.xml names,
// with a spine of at most maxSpine chapters.
func epubPackage(z *zipParts, maxSpine int) (opfPackage, error) {
	x, err := z.xml("META-INF/container.xml", partSmall)
	if errors.Is(err, errNoPart) {
		return opfPackage{}, fmt.Errorf("%w: not an EPUB file (no META-INF/container.xml)", ErrDamaged)
	}
	if err != nil {
		return opfPackage{}, err
	}
	opfPath, err := rootfile(x)
	x.Close()
	if err != nil {
		return opfPackage{}, err
	}
	if opfPath == "" {
		return opfPackage{}, fmt.Errorf("%w: EPUB container names no package document", ErrDamaged)
	}
	x, err = z.xml(opfPath, partMeta)
	if err != nil {
		return opfPackage{}, fmt.Errorf("%w: EPUB package document %s: %v", ErrDamaged, opfPath, err)
	}
	defer x.Close()
	return readOPF(x, opfPath, maxSpine)
}

// epubTOC returns the titles of the spine's chapters by their href, from
// the EPUB 3 navigation document or else the EPUB 2 NCX ("" where neither
// names one). A table of contents that cannot be opened is passed over.
func epubTOC(z *zipParts, pkg opfPackage) (map[string]string, error) {
	// Titles are kept for the chapters of the spine only.
	toc := map[string]string{}
	for _, href := range pkg.spine {
		toc[href] = ""
	}
	if pkg.nav != "" {
		if p, err := z.open(pkg.nav, partMeta); err == nil {
			err = navTitles(p, pkg.nav, toc)
			p.Close()
			if err != nil {
				return nil, err
			}
		}
	}
	if pkg.ncx != "" && !anyTitle(toc) {
		if x, err := z.xml(pkg.ncx, partMeta); err == nil {
			err = ncxTitles(x, pkg.ncx, toc)
			x.Close()
			if err != nil {
				return nil, err
			}
		}
	}
	return toc, nil
}

// epubChapters adds the spine's chapters to b in order, each a section
// under its title ("Chapter N" when it has none). Each is HTML, bounded
// like a web page; a spine entry the archive lacks is passed over.
func epubChapters(z *zipParts, spine []string, toc map[string]string, b *docBuilder) error {
	for i, href := range spine {
		if err := b.check(); err != nil {
			return err
		}
		doc, err := z.read(href, DefaultMaxBytes)
		if errors.Is(err, errNoPart) {
			continue
		}
		if errors.Is(err, ErrLimit) {
			return fmt.Errorf("%w: chapter %d: %v", ErrLimit, i+1, strings.TrimPrefix(err.Error(), ErrLimit.Error()+": "))
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
	return nil
}

func anyTitle(toc map[string]string) bool {
	for _, t := range toc {
		if t != "" {
			return true
		}
	}
	return false
}

// drmProtected reads encryption.xml: whether it encrypts more than fonts
// (the IDPF and Adobe font obfuscations leave the text readable).
func drmProtected(x *xmlPart) (bool, error) {
	encrypted, other := false, false
	for {
		tok, err := x.Token()
		if err != nil {
			return encrypted && other, stop(err)
		}
		if t, isStart := tok.(xml.StartElement); isStart {
			switch t.Name.Local {
			case "EncryptedData":
				encrypted = true
			case "EncryptionMethod":
				alg := attr(t, "Algorithm")
				if alg != "http://www.idpf.org/2008/embedding" && alg != "http://ns.adobe.com/pdf/enc#RC" {
					other = true
				}
			}
		}
	}
}

// rootfile reads the package document's path from container.xml.
func rootfile(x *xmlPart) (string, error) {
	for {
		tok, err := x.Token()
		if err != nil {
			return "", stop(err)
		}
		if t, ok := tok.(xml.StartElement); ok && t.Name.Local == "rootfile" {
			if p := attr(t, "full-path"); p != "" {
				return zipPath("", p), nil
			}
		}
	}
}

type opfPackage struct {
	title    string
	spine    []string // archive paths in reading order
	nav, ncx string   // archive paths of the tables of contents ("" when none)
}

// readOPF reads the title, the spine (at most maxSpine entries: a longer
// one fails with ErrLimit) and the tables of contents.
func readOPF(x *xmlPart, base string, maxSpine int) (opfPackage, error) {
	var p opfPackage
	items := map[string]string{} // manifest id -> path
	var spineIDs []string
	tocID := ""
	inTitle := false
	var title strings.Builder
	for {
		tok, err := x.Token()
		if err != nil {
			if err := stop(err); err != nil {
				return p, err
			}
			break
		}
		switch t := tok.(type) {
		case xml.StartElement:
			switch t.Name.Local {
			case "title":
				inTitle = p.title == "" && title.Len() == 0
			case "item":
				if len(items) >= partMaxEntries {
					return p, fmt.Errorf("%w: more than %d items in the EPUB manifest", ErrLimit, partMaxEntries)
				}
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
					if len(spineIDs) >= maxSpine {
						return p, fmt.Errorf("%w: more than %d chapters", ErrLimit, maxSpine)
					}
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
				title.Write(t[:min(len(t), 1000)])
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
	return p, nil
}

// navMaxLabel bounds the text read of one table-of-contents entry.
const navMaxLabel = 1000

// navTitles reads chapter titles from an EPUB 3 navigation document: the
// text of each link to a chapter in toc without a title yet. The document
// is tokenized as it is decompressed, never parsed into a tree, and only
// the titles of toc's chapters are kept.
func navTitles(r io.Reader, base string, toc map[string]string) error {
	z := html.NewTokenizer(r)
	z.SetMaxBuf(partMaxToken)
	var label strings.Builder
	target := "" // the chapter whose link is open
	for {
		switch z.Next() {
		case html.ErrorToken:
			err := z.Err()
			if errors.Is(err, html.ErrBufferExceeded) {
				return fmt.Errorf("%w: %s holds an HTML token longer than %s", ErrLimit, base, sizeString(partMaxToken))
			}
			if err == io.EOF {
				return nil
			}
			return stop(err)
		case html.StartTagToken:
			name, hasAttr := z.TagName()
			if atom.Lookup(name) != atom.A || !hasAttr {
				continue
			}
			for {
				k, v, more := z.TagAttr()
				if string(k) == "href" {
					if p := zipPath(base, string(v)); p != "" {
						if title, ok := toc[p]; ok && title == "" {
							target = p
							label.Reset()
						}
					}
				}
				if !more {
					break
				}
			}
		case html.EndTagToken:
			if name, _ := z.TagName(); atom.Lookup(name) == atom.A && target != "" {
				toc[target] = cleanLine(label.String(), 300)
				target = ""
			}
		case html.TextToken:
			if target != "" && label.Len() < navMaxLabel {
				t := z.Text()
				label.Write(t[:min(len(t), navMaxLabel-label.Len())])
			}
		}
	}
}

// ncxTitles reads chapter titles from an EPUB 2 NCX, for the chapters in
// toc without a title yet.
func ncxTitles(x *xmlPart, base string, toc map[string]string) error {
	var label strings.Builder
	inText := false
	for {
		tok, err := x.Token()
		if err != nil {
			return stop(err)
		}
		switch t := tok.(type) {
		case xml.StartElement:
			switch t.Name.Local {
			case "navPoint":
				label.Reset()
			case "text":
				inText = true
			case "content":
				if p := zipPath(base, attr(t, "src")); p != "" {
					if title, ok := toc[p]; ok && title == "" {
						toc[p] = cleanLine(label.String(), 300)
					}
				}
			}
		case xml.EndElement:
			if t.Name.Local == "text" {
				inText = false
			}
		case xml.CharData:
			if inText && label.Len() < navMaxLabel {
				label.Write(t[:min(len(t), navMaxLabel-label.Len())])
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

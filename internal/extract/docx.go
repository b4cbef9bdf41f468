package extract

import (
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"path"
	"strconv"
	"strings"
)

// Why the standard library for DOCX and EPUB: both are ZIP archives of
// XML (and XHTML) parts. The Go readers of DOCX are write-oriented object
// models that load the whole document (github.com/gomutex/godocx, MIT) or
// are AGPL-licensed (github.com/fumiama/go-docx); the EPUB readers are
// small and long unmaintained. archive/zip and encoding/xml (a streaming
// tokenizer that expands no entities) read exactly the parts needed, with
// every entry's decompressed size bounded, in a few hundred lines.

// DOCX extracts the text of a Word document: its paragraphs, with heading
// paragraphs (styles "Heading 1" to "Heading 9", or an outline level) as
// headings, list items and table rows (cells joined by " | ") as
// paragraphs. The title is the document's core Title property, else the
// first paragraph in the Title style. Tracked deletions and field codes are
// left out. An encrypted document fails with ErrEncrypted.
func DOCX(data []byte, opts *DocumentOptions) (Page, error) {
	o := opts.withDefaults()
	if len(data) > o.MaxBytes {
		return Page{}, fmt.Errorf("%w: %d bytes (limit %d)", ErrTooLarge, len(data), o.MaxBytes)
	}
	zr, err := openZip(data, "DOCX")
	if err != nil {
		return Page{}, err
	}
	z := newZipParts(zr, o.MaxExpanded)
	b := newDocBuilder(o)
	var title string
	err = guard("DOCX", func() error {
		if !z.has("word/document.xml") {
			return fmt.Errorf("%w: not a DOCX file (no word/document.xml)", ErrDamaged)
		}
		styles := map[string]int{} // style id -> heading level; -1 for Title
		if x, err := z.xml("word/styles.xml", partMeta); err == nil {
			styles, err = docxStyles(x)
			x.Close()
			if err != nil {
				return err
			}
		} else if !errors.Is(err, errNoPart) {
			return err
		}
		if x, err := z.xml("docProps/core.xml", partSmall); err == nil {
			title, err = coreTitle(x)
			x.Close()
			if err != nil {
				return err
			}
		} else if !errors.Is(err, errNoPart) {
			return err
		}
		// The body is the bulk of the file: tokenized as it decompresses,
		// within the whole budget.
		x, err := z.xml("word/document.xml", o.MaxExpanded)
		if err != nil {
			return err
		}
		defer x.Close()
		return docxBody(x, styles, b, o, &title)
	})
	if err != nil {
		return Page{}, err
	}
	return b.page(title, MethodDOCX)
}

// docxMaxStyles bounds the styles kept from word/styles.xml.
const docxMaxStyles = 100_000

// docxStyles maps paragraph style ids to heading levels.
func docxStyles(x *xmlPart) (map[string]int, error) {
	out := map[string]int{}
	var id, name string
	lvl := 0
	for {
		tok, err := x.Token()
		if err != nil {
			return out, stop(err)
		}
		switch t := tok.(type) {
		case xml.StartElement:
			switch t.Name.Local {
			case "style":
				id, name, lvl = attr(t, "styleId"), "", 0
			case "name":
				name = strings.ToLower(attr(t, "val"))
			case "outlineLvl":
				if n, err := strconv.Atoi(attr(t, "val")); err == nil && n >= 0 && n < 9 {
					lvl = n + 1
				}
			}
		case xml.EndElement:
			if t.Name.Local != "style" || id == "" {
				continue
			}
			if len(out) >= docxMaxStyles {
				return nil, fmt.Errorf("%w: more than %d styles", ErrLimit, docxMaxStyles)
			}
			switch {
			case name == "title":
				out[id] = -1
			case strings.HasPrefix(name, "heading "):
				if n, err := strconv.Atoi(strings.TrimPrefix(name, "heading ")); err == nil && n >= 1 && n <= 9 {
					out[id] = n
				}
			case lvl > 0:
				out[id] = lvl
			}
		}
	}
}

// coreTitle reads dc:title from docProps/core.xml.
func coreTitle(x *xmlPart) (string, error) {
	in := false
	var sb strings.Builder
	for {
		tok, err := x.Token()
		if err != nil {
			return cleanLine(sb.String(), 300), stop(err)
		}
		switch t := tok.(type) {
		case xml.StartElement:
			in = t.Name.Local == "title"
		case xml.EndElement:
			if t.Name.Local == "title" {
				return cleanLine(sb.String(), 300), nil
			}
		case xml.CharData:
			if in && sb.Len() < 1000 {
				sb.Write(t)
			}
		}
	}
}

func attr(t xml.StartElement, local string) string {
	for _, a := range t.Attr {
		if a.Name.Local == local {
			return a.Value
		}
	}
	return ""
}

// docxBody walks word/document.xml.
func docxBody(x *xmlPart, styles map[string]int, b *docBuilder, o DocumentOptions, title *string) error {
	w := &docxWalker{b: b, styles: styles, maxParas: o.MaxParts * 100, title: title}
	for {
		tok, err := x.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			if errors.Is(err, ErrLimit) || errors.Is(err, ErrDamaged) {
				return err
			}
			return fmt.Errorf("%w: word/document.xml: %v", ErrDamaged, err)
		}
		switch t := tok.(type) {
		case xml.StartElement:
			err = w.start(t)
		case xml.EndElement:
			err = w.end(t)
		case xml.CharData:
			if w.inText && w.skip == 0 {
				if !b.grow(w.rowBytes + w.para.Len() + len(t)) {
					return b.err
				}
				w.para.Write(t)
			}
		}
		if err != nil {
			return err
		}
	}
	if b.err != nil {
		return b.err
	}
	if strings.TrimSpace(b.text.String()) == "" {
		return ErrNoContent
	}
	return nil
}

// docxWalker is the state of docxBody as it walks word/document.xml.
type docxWalker struct {
	b        *docBuilder
	styles   map[string]int // heading level of a paragraph style; -1 Title
	maxParas int
	title    *string // set from the first paragraph in the Title style

	para     strings.Builder
	level    int  // heading level of the paragraph; -1 Title style
	skip     int  // inside deleted text or field instructions
	inText   bool // inside w:t
	cell     int  // depth of table cells
	row      []string
	rowBytes int // text held in row, charged to the text limit with the paragraph
	paras    int
}

// start handles the start of an element of the body.
func (w *docxWalker) start(t xml.StartElement) error {
	switch t.Name.Local {
	case "p":
		w.level = 0
		if w.paras++; w.paras%1024 == 0 {
			if err := w.b.check(); err != nil {
				return err
			}
			if w.paras > w.maxParas {
				return fmt.Errorf("%w: more than %d paragraphs", ErrLimit, w.maxParas)
			}
		}
	case "pStyle":
		w.level = w.styles[attr(t, "val")]
	case "outlineLvl":
		if n, err := strconv.Atoi(attr(t, "val")); err == nil && n >= 0 && n < 9 && w.level == 0 {
			w.level = n + 1
		}
	case "t":
		w.inText = true
	case "tab":
		if w.skip == 0 {
			w.para.WriteByte('\t')
		}
	case "br", "cr":
		if w.skip == 0 {
			w.para.WriteByte('\n')
		}
	case "del", "instrText", "delText":
		w.skip++
	case "tc":
		w.cell++
	case "tr":
		w.row, w.rowBytes = w.row[:0], 0
	}
	return nil
}

// end handles the end of an element of the body: a paragraph is flushed, a
// table row becomes a paragraph of its cells.
func (w *docxWalker) end(t xml.EndElement) error {
	switch t.Name.Local {
	case "p":
		w.flush()
		return w.b.err
	case "t":
		w.inText = false
	case "del", "instrText", "delText":
		if w.skip > 0 {
			w.skip--
		}
	case "tc":
		if w.cell > 0 {
			w.cell--
		}
	case "tr":
		var cells []string
		for _, c := range w.row {
			if c != "" {
				cells = append(cells, strings.Join(strings.Fields(c), " "))
			}
		}
		w.row, w.rowBytes = w.row[:0], 0
		if len(cells) > 0 {
			w.b.para(strings.Join(cells, " | "))
		}
	}
	return nil
}

// flush ends the paragraph: in a table cell it joins the row, else it is
// the title, a heading or a paragraph.
func (w *docxWalker) flush() {
	s := w.para.String()
	w.para.Reset()
	if w.cell > 0 {
		if s = strings.TrimSpace(s); s != "" && w.b.grow(w.rowBytes+len(s)+3) {
			w.row = append(w.row, s)
			w.rowBytes += len(s) + 3
		}
		return
	}
	switch {
	case w.level == -1 && *w.title == "":
		*w.title = cleanLine(s, 300)
	case w.level > 0:
		w.b.heading(w.level, s)
	default:
		w.b.para(s)
	}
}

// zipPath resolves a relative reference inside an archive.
func zipPath(base, ref string) string {
	if i := strings.IndexAny(ref, "#?"); i >= 0 {
		ref = ref[:i]
	}
	if ref == "" {
		return ""
	}
	if unescaped, err := pathUnescape(ref); err == nil {
		ref = unescaped
	}
	if strings.HasPrefix(ref, "/") {
		return strings.TrimPrefix(path.Clean(ref), "/")
	}
	return strings.TrimPrefix(path.Clean(path.Join(path.Dir(base), ref)), "/")
}

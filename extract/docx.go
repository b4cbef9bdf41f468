package extract

import (
	"archive/zip"
	"bytes"
	"encoding/binary"
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

// cfbMagic starts an OLE compound file: what Office writes for an
// encrypted DOCX.
var cfbMagic = []byte{0xD0, 0xCF, 0x11, 0xE0, 0xA1, 0xB1, 0x1A, 0xE1}

// zipMaxEntries bounds the entries of a DOCX or EPUB archive.
const zipMaxEntries = 100_000

// openZip opens a ZIP archive after checking its entry count, so that
// archive/zip's central-directory read stays bounded.
func openZip(data []byte, kind string) (*zip.Reader, error) {
	if bytes.HasPrefix(data, cfbMagic) {
		return nil, fmt.Errorf("%w (an OLE container, as Office writes encrypted %s files)", ErrEncrypted, kind)
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

// zipParts reads entries of an archive within a decompressed budget.
type zipParts struct {
	zr     *zip.Reader
	budget int64
	byName map[string]*zip.File
}

func newZipParts(zr *zip.Reader, budget int64) *zipParts {
	z := &zipParts{zr: zr, budget: budget, byName: map[string]*zip.File{}}
	for _, f := range zr.File {
		z.byName[strings.TrimPrefix(f.Name, "/")] = f
	}
	return z
}

var errNoPart = errors.New("no such part")

// read returns the decompressed entry name, charged to the budget.
func (z *zipParts) read(name string) ([]byte, error) {
	f, ok := z.byName[strings.TrimPrefix(name, "/")]
	if !ok {
		return nil, errNoPart
	}
	rc, err := f.Open()
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrDamaged, name, err)
	}
	defer rc.Close()
	data, err := io.ReadAll(io.LimitReader(rc, z.budget+1))
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrDamaged, name, err)
	}
	if z.budget -= int64(len(data)); z.budget < 0 {
		return nil, fmt.Errorf("%w: the archive decompresses to more than the limit", ErrLimit)
	}
	return data, nil
}

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
		doc, err := z.read("word/document.xml")
		if errors.Is(err, errNoPart) {
			return fmt.Errorf("%w: not a DOCX file (no word/document.xml)", ErrDamaged)
		}
		if err != nil {
			return err
		}
		styles := map[string]int{} // style id -> heading level; -1 for Title
		if s, err := z.read("word/styles.xml"); err == nil {
			styles = docxStyles(s)
		} else if !errors.Is(err, errNoPart) {
			return err
		}
		if c, err := z.read("docProps/core.xml"); err == nil {
			title = coreTitle(c)
		} else if !errors.Is(err, errNoPart) {
			return err
		}
		return docxBody(doc, styles, b, o, &title)
	})
	if err != nil {
		return Page{}, err
	}
	return b.page(title, MethodDOCX)
}

// docxStyles maps paragraph style ids to heading levels.
func docxStyles(data []byte) map[string]int {
	out := map[string]int{}
	d := xml.NewDecoder(bytes.NewReader(data))
	var id, name string
	lvl := 0
	for {
		tok, err := d.Token()
		if err != nil {
			return out
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
func coreTitle(data []byte) string {
	d := xml.NewDecoder(bytes.NewReader(data))
	in := false
	var sb strings.Builder
	for {
		tok, err := d.Token()
		if err != nil {
			return cleanLine(sb.String(), 300)
		}
		switch t := tok.(type) {
		case xml.StartElement:
			in = t.Name.Local == "title"
		case xml.EndElement:
			if t.Name.Local == "title" {
				return cleanLine(sb.String(), 300)
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
func docxBody(data []byte, styles map[string]int, b *docBuilder, o DocumentOptions, title *string) error {
	d := xml.NewDecoder(bytes.NewReader(data))
	var para strings.Builder
	level := 0      // heading level of the paragraph; -1 Title style
	skip := 0       // inside deleted text or field instructions
	inText := false // inside w:t
	cell := 0       // depth of table cells
	var row []string
	paras := 0
	flush := func() {
		s := para.String()
		para.Reset()
		if cell > 0 {
			row = append(row, strings.TrimSpace(s))
			return
		}
		switch {
		case level == -1 && *title == "":
			*title = cleanLine(s, 300)
		case level > 0:
			b.heading(level, s)
		default:
			b.para(s)
		}
	}
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			return fmt.Errorf("%w: word/document.xml: %v", ErrDamaged, err)
		}
		switch t := tok.(type) {
		case xml.StartElement:
			switch t.Name.Local {
			case "p":
				level = 0
				if paras++; paras%1024 == 0 {
					if err := b.check(); err != nil {
						return err
					}
					if paras > o.MaxParts*1000 {
						return fmt.Errorf("%w: more than %d paragraphs", ErrLimit, o.MaxParts*1000)
					}
				}
			case "pStyle":
				level = styles[attr(t, "val")]
			case "outlineLvl":
				if n, err := strconv.Atoi(attr(t, "val")); err == nil && n >= 0 && n < 9 && level == 0 {
					level = n + 1
				}
			case "t":
				inText = true
			case "tab":
				if skip == 0 {
					para.WriteByte('\t')
				}
			case "br", "cr":
				if skip == 0 {
					para.WriteByte('\n')
				}
			case "del", "instrText", "delText":
				skip++
			case "tc":
				cell++
			case "tr":
				row = row[:0]
			}
		case xml.EndElement:
			switch t.Name.Local {
			case "p":
				flush()
			case "t":
				inText = false
			case "del", "instrText", "delText":
				if skip > 0 {
					skip--
				}
			case "tc":
				if cell > 0 {
					cell--
				}
			case "tr":
				var cells []string
				for _, c := range row {
					if c != "" {
						cells = append(cells, strings.Join(strings.Fields(c), " "))
					}
				}
				if len(cells) > 0 {
					b.para(strings.Join(cells, " | "))
				}
				row = row[:0]
			}
		case xml.CharData:
			if inText && skip == 0 {
				if !b.grow(para.Len() + len(t)) {
					return b.err
				}
				para.Write(t)
			}
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

package extract

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
)

// epubOf is a minimal EPUB whose spine lists the chapters in order.
func epubOf(t testing.TB, chapters ...string) []byte {
	files := map[string]string{
		"mimetype":               "application/epub+zip",
		"META-INF/container.xml": `<?xml version="1.0"?><container version="1.0" xmlns="urn:oasis:names:tc:opendocument:xmlns:container"><rootfiles><rootfile full-path="OEBPS/content.opf" media-type="application/oebps-package+xml"/></rootfiles></container>`,
	}
	var items, refs strings.Builder
	for i, c := range chapters {
		fmt.Fprintf(&items, `<item id="c%d" href="c%d.xhtml" media-type="application/xhtml+xml"/>`, i, i)
		fmt.Fprintf(&refs, `<itemref idref="c%d"/>`, i)
		files[fmt.Sprintf("OEBPS/c%d.xhtml", i)] = `<?xml version="1.0"?><html xmlns="http://www.w3.org/1999/xhtml"><head><title>c</title></head><body>` + c + `</body></html>`
	}
	files["OEBPS/content.opf"] = `<?xml version="1.0"?><package xmlns="http://www.idpf.org/2007/opf" version="3.0"><metadata xmlns:dc="http://purl.org/dc/elements/1.1/"><dc:title>Book</dc:title></metadata><manifest>` +
		items.String() + `</manifest><spine>` + refs.String() + `</spine></package>`
	return zipOf(t, files)
}

// TestEPUBChaptersAreBounded: an EPUB chapter is HTML, and gets the bounds
// of a web page: a chapter of formatting tags left open (which the HTML
// parser clones into every paragraph: a 3 MiB chapter, 6.6 KB zipped, took
// 31 s and 837 MiB) is read without them, its text kept; a chapter too
// complex even so fails with ErrLimit.
func TestEPUBChaptersAreBounded(t *testing.T) {
	amplifying := "<h1>Amp</h1>" + strings.Repeat("<p><b><i><u>x", (512<<10)/14)
	var a, b runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&a)
	p, err := EPUB(epubOf(t, "<h1>First</h1><p>an ordinary chapter</p>", amplifying), nil)
	runtime.ReadMemStats(&b)
	if err != nil || !strings.Contains(p.Text, "an ordinary chapter") || strings.Count(p.Text, "x") < 1000 {
		t.Fatalf("amplifying chapter: %v (%d bytes of text)", err, len(p.Text))
	}
	if alloc := b.TotalAlloc - a.TotalAlloc; alloc > 100<<20 {
		t.Errorf("amplifying chapter: %d MB allocated", alloc>>20)
	}
	_, err = EPUB(epubOf(t, strings.Repeat("<h1>t</h1>", 300_000)), nil)
	if !errors.Is(err, ErrLimit) || !strings.Contains(err.Error(), "chapter 1") {
		t.Fatalf("300,000 headings in a chapter: %v", err)
	}
}

// rawPDF writes a PDF of the given objects (numbered from 1; object 1 is
// the catalog).
func rawPDF(objs ...string) []byte {
	return pdfObjects("%PDF-1.4\n", objs, "/Root 1 0 R")
}

// pdfObjects writes header, the objects (numbered from 1), their
// cross-reference table and a trailer of /Size and the entries in trailer.
func pdfObjects(header string, objs []string, trailer string) []byte {
	var b strings.Builder
	b.WriteString(header)
	offsets := make([]int, len(objs))
	for i, o := range objs {
		offsets[i] = b.Len()
		fmt.Fprintf(&b, "%d 0 obj\n%s\nendobj\n", i+1, o)
	}
	xref := b.Len()
	fmt.Fprintf(&b, "xref\n0 %d\n0000000000 65535 f \n", len(objs)+1)
	for _, off := range offsets {
		fmt.Fprintf(&b, "%010d 00000 n \n", off)
	}
	fmt.Fprintf(&b, "trailer\n<< /Size %d %s >>\nstartxref\n%d\n%%%%EOF\n", len(objs)+1, trailer, xref)
	return []byte(b.String())
}

// TestPDFCyclesAreReadOnce: a page tree or an outline that loops back on
// itself (damage some writers make) is read as far as it goes without the
// loop: each page once, each bookmark once. A 1 KB file used to repeat
// them until it passed the chunk limit ("more than 4096 sections").
func TestPDFCyclesAreReadOnce(t *testing.T) {
	content := "BT /F1 12 Tf 72 720 Td (Text of the only page) Tj ET"
	stream := fmt.Sprintf("<< /Length %d >>\nstream\n%s\nendstream", len(content), content)
	font := "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>"
	page := "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R /Resources << /Font << /F1 5 0 R >> >> >>"
	for name, c := range map[string]struct {
		pdf      []byte
		headings int
	}{
		// Pages 2 -> [page 3, itself, pages 6]; pages 6 -> [pages 2, itself].
		"page tree": {rawPDF("<< /Type /Catalog /Pages 2 0 R >>", "<< /Type /Pages /Kids [3 0 R 2 0 R 6 0 R] /Count 3 >>", page, stream, font,
			"<< /Type /Pages /Parent 2 0 R /Kids [2 0 R 6 0 R] /Count 2 >>"), 1},
		// Bookmarks A <-> B, each the other's child too.
		"outline": {rawPDF("<< /Type /Catalog /Pages 2 0 R /Outlines 6 0 R >>", "<< /Type /Pages /Kids [3 0 R] /Count 1 >>", page, stream, font,
			"<< /Type /Outlines /First 7 0 R /Last 8 0 R /Count 2 >>",
			"<< /Title (Bookmark A) /Parent 6 0 R /Next 8 0 R /First 8 0 R /Dest [3 0 R /Fit] >>",
			"<< /Title (Bookmark B) /Parent 6 0 R /Prev 7 0 R /Next 7 0 R /First 7 0 R /Dest [3 0 R /Fit] >>"), 2},
	} {
		p, err := PDF(c.pdf, nil)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if n := strings.Count(p.Text, "Text of the only page"); n != 1 {
			t.Errorf("%s: the page's text %d times", name, n)
		}
		if n := strings.Count(p.HTML, "<h"); n != c.headings {
			t.Errorf("%s: %d headings, want %d: %.300s", name, n, c.headings, p.HTML)
		}
	}
}

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

// Package hostile writes small document files built to hang, exhaust or
// crash a document reader: PDFs whose structure loops or allocates by
// numbers it gives, EPUBs and DOCX files that decompress far beyond their
// size. Tests of the readers (extract), of the isolation they run in
// (cmd/ragmem/internal/docread) and of `ragmem index` use them; each file is
// generated, none downloaded.
package hostile

import (
	"archive/zip"
	"bytes"
	"compress/flate"
	"compress/zlib"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"strings"
	"sync"
)

// File is one hostile file: its name (the extension says its format),
// what it does, and its bytes.
type File struct {
	Name string
	Does string
	Data []byte
}

var (
	once  sync.Once
	files []File
)

// Files returns every hostile file, built once per process (the
// decompression bombs take a second or two to compress). The caller must
// not modify the data.
func Files() []File {
	once.Do(func() {
		files = []File{
			{"self-parent.pdf", "a page whose /Parent is itself (the library walks it forever)", SelfParentPDF()},
			{"self-prev.pdf", "a trailer whose /Prev is its own cross-reference section (read forever)", SelfPrevPDF()},
			{"objstm-n.pdf", "an object stream of /N 9000000000000000000 objects (searched that many times)", HugeObjStmPDF()},
			{"extends-cycle.pdf", "two object streams that /Extends each other (followed forever)", ExtendsCyclePDF()},
			{"xref-2e30.pdf", "a cross-reference subsection starting at object 2^30 (an entry allocated for each below)", XrefAt2e30PDF()},
			{"repeat-pages.pdf", "5,000 pages drawing one content stream of 1 MiB", RepeatedPagesPDF(5000)},
			{"deep-tree.pdf", "a page tree 20,000 levels deep", DeepTreePDF(20_000)},
			{"nav-bomb.epub", "a 96 MiB navigation document", NavBombEPUB(96 << 20)},
			{"big-chapter.epub", "a 250 MiB chapter", BigChapterEPUB(250 << 20)},
			{"reading-list.epub", "a reading list of 10 million entries", ReadingListEPUB(10_000_000)},
			{"docx-bomb.docx", "a 1 GiB document part", DOCXBomb(1 << 30)},
			{"docx-run.docx", "one run of text of 200 MiB", DOCXLongRun(200 << 20)},
			{"docx-deep.docx", "elements nested 5 million deep", DOCXDeep(5_000_000)},
		}
	})
	return files
}

// pdfWriter writes a PDF of numbered objects with a classic
// cross-reference table.
type pdfWriter struct {
	b       bytes.Buffer
	offsets map[int]int
}

func newPDF() *pdfWriter {
	w := &pdfWriter{offsets: map[int]int{}}
	w.b.WriteString("%PDF-1.7\n%\xe2\xe3\xcf\xd3\n")
	return w
}

func (w *pdfWriter) obj(n int, body string) {
	w.offsets[n] = w.b.Len()
	fmt.Fprintf(&w.b, "%d 0 obj\n%s\nendobj\n", n, body)
}

func (w *pdfWriter) stream(n int, dict string, data []byte) {
	w.offsets[n] = w.b.Len()
	fmt.Fprintf(&w.b, "%d 0 obj\n<< %s /Length %d >>\nstream\n", n, dict, len(data))
	w.b.Write(data)
	w.b.WriteString("\nendstream\nendobj\n")
}

// finish writes the table of objects 0..max and a trailer with extra
// entries, and returns the file.
func (w *pdfWriter) finish(trailer string) []byte {
	maxObj := 0
	for n := range w.offsets {
		maxObj = max(maxObj, n)
	}
	xref := w.b.Len()
	fmt.Fprintf(&w.b, "xref\n0 %d\n0000000000 65535 f \n", maxObj+1)
	for n := 1; n <= maxObj; n++ {
		if off, ok := w.offsets[n]; ok {
			fmt.Fprintf(&w.b, "%010d 00000 n \n", off)
		} else {
			w.b.WriteString("0000000000 65535 f \n")
		}
	}
	fmt.Fprintf(&w.b, "trailer\n<< /Size %d /Root 1 0 R %s >>\nstartxref\n%d\n%%%%EOF\n", maxObj+1, trailer, xref)
	return w.b.Bytes()
}

const pageText = "BT /F1 12 Tf 72 720 Td (A page of a hostile file) Tj ET"

// SelfParentPDF is a PDF whose only page has no resources of its own and
// is its own /Parent: the library looks for inherited resources up the
// parent chain forever.
func SelfParentPDF() []byte {
	w := newPDF()
	w.obj(1, "<< /Type /Catalog /Pages 2 0 R >>")
	w.obj(2, "<< /Type /Pages /Kids [3 0 R] /Count 1 >>")
	w.obj(3, "<< /Type /Page /Parent 3 0 R /MediaBox [0 0 612 792] /Contents 4 0 R >>")
	w.stream(4, "", []byte(pageText))
	return w.finish("")
}

// SelfPrevPDF is a PDF whose trailer's /Prev is the offset of its own
// cross-reference table.
func SelfPrevPDF() []byte {
	w := newPDF()
	w.obj(1, "<< /Type /Catalog /Pages 2 0 R >>")
	w.obj(2, "<< /Type /Pages /Kids [3 0 R] /Count 1 >>")
	w.obj(3, "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R /Resources << >> >>")
	w.stream(4, "", []byte(pageText))
	xref := w.b.Len()
	return w.finish(fmt.Sprintf("/Prev %d", xref))
}

// XrefAt2e30PDF is a PDF whose cross-reference table has a subsection of
// one object numbered 2^30.
func XrefAt2e30PDF() []byte {
	w := newPDF()
	w.obj(1, "<< /Type /Catalog /Pages 2 0 R >>")
	w.obj(2, "<< /Type /Pages /Kids [] /Count 0 >>")
	xref := w.b.Len()
	fmt.Fprintf(&w.b, "xref\n0 3\n0000000000 65535 f \n%010d 00000 n \n%010d 00000 n \n1073741824 1\n%010d 00000 n \n", w.offsets[1], w.offsets[2], w.offsets[2])
	fmt.Fprintf(&w.b, "trailer\n<< /Size 3 /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n", xref)
	return w.b.Bytes()
}

// xrefStreamPDF writes objects and a cross-reference stream that places
// the objects of inStream (number -> object stream number) in object
// streams.
func xrefStreamPDF(objs map[int]string, streams map[int][2]string, inStream map[int]int) []byte {
	var b bytes.Buffer
	b.WriteString("%PDF-1.7\n%\xe2\xe3\xcf\xd3\n")
	offsets := map[int]int{}
	maxObj := 0
	for n := range objs {
		maxObj = max(maxObj, n)
	}
	for n := range streams {
		maxObj = max(maxObj, n)
	}
	for n := range inStream {
		maxObj = max(maxObj, n)
	}
	for n := 1; n <= maxObj; n++ {
		if body, ok := objs[n]; ok {
			offsets[n] = b.Len()
			fmt.Fprintf(&b, "%d 0 obj\n%s\nendobj\n", n, body)
		}
		if s, ok := streams[n]; ok {
			offsets[n] = b.Len()
			fmt.Fprintf(&b, "%d 0 obj\n<< %s /Length %d >>\nstream\n%s\nendstream\nendobj\n", n, s[0], len(s[1]), s[1])
		}
	}
	xrefNum := maxObj + 1
	offsets[xrefNum] = b.Len()
	var rows bytes.Buffer
	for n := 0; n <= xrefNum; n++ {
		var row [7]byte
		switch {
		case n == 0:
			row[0] = 0
		case inStream[n] != 0:
			row[0] = 2
			binary.BigEndian.PutUint32(row[1:5], uint32(inStream[n]))
		default:
			row[0] = 1
			binary.BigEndian.PutUint32(row[1:5], uint32(offsets[n]))
		}
		rows.Write(row[:])
	}
	fmt.Fprintf(&b, "%d 0 obj\n<< /Type /XRef /Size %d /W [1 4 2] /Root 1 0 R /Length %d >>\nstream\n", xrefNum, xrefNum+1, rows.Len())
	b.Write(rows.Bytes())
	fmt.Fprintf(&b, "\nendstream\nendobj\nstartxref\n%d\n%%%%EOF\n", offsets[xrefNum])
	return b.Bytes()
}

// HugeObjStmPDF is a PDF whose catalog is said to be in an object stream
// of /N 9000000000000000000 objects that does not hold it: the library
// reads that many entries looking for it.
func HugeObjStmPDF() []byte {
	return xrefStreamPDF(nil,
		map[int][2]string{5: {"/Type /ObjStm /N 9000000000000000000 /First 4", "7 0 << >>"}},
		map[int]int{1: 5})
}

// ExtendsCyclePDF is a PDF whose catalog is said to be in an object stream
// that does not hold it and /Extends another that /Extends it back.
func ExtendsCyclePDF() []byte {
	return xrefStreamPDF(nil,
		map[int][2]string{
			5: {"/Type /ObjStm /N 1 /First 4 /Extends 6 0 R", "7 0 << >>"},
			6: {"/Type /ObjStm /N 1 /First 4 /Extends 5 0 R", "8 0 << >>"},
		},
		map[int]int{1: 5})
}

// deflate compresses b with zlib at its best compression.
func deflate(b []byte) []byte {
	var z bytes.Buffer
	zw, _ := zlib.NewWriterLevel(&z, zlib.BestCompression)
	zw.Write(b)
	zw.Close()
	return z.Bytes()
}

// pagesPDF starts a PDF of n pages: the catalog (1), the page tree (2),
// whose kids are objects 10, 10+step, 10+2*step and so on, and Helvetica
// as font F1 (3). The caller writes the pages.
func pagesPDF(n, step int) *pdfWriter {
	w := newPDF()
	w.obj(1, "<< /Type /Catalog /Pages 2 0 R >>")
	var kids strings.Builder
	for i := 0; i < n; i++ {
		fmt.Fprintf(&kids, "%d 0 R ", 10+step*i)
	}
	w.obj(2, fmt.Sprintf("<< /Type /Pages /Kids [%s] /Count %d >>", kids.String(), n))
	w.obj(3, "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>")
	return w
}

// RepeatedPagesPDF is a PDF of n pages that all draw one content stream
// of 1 MiB of text operators (compressed to a few KB).
func RepeatedPagesPDF(n int) []byte {
	var content bytes.Buffer
	content.WriteString("BT /F1 10 Tf 72 720 Td 12 TL\n")
	for content.Len() < 1<<20 {
		content.WriteString("(The same line drawn on every page) ' \n")
	}
	content.WriteString("ET\n")
	z := deflate(content.Bytes())
	w := pagesPDF(n, 1)
	w.stream(4, "/Filter /FlateDecode", z)
	for i := 0; i < n; i++ {
		w.obj(10+i, fmt.Sprintf("<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Rotate %d /Contents 4 0 R /Resources << /Font << /F1 3 0 R >> >> >>", (i%4)*90+360*(i/4)))
	}
	return w.finish("")
}

// DeepTreePDF is a PDF whose page tree nests depth levels of /Pages
// nodes above its page.
func DeepTreePDF(depth int) []byte {
	w := newPDF()
	w.obj(1, "<< /Type /Catalog /Pages 10 0 R >>")
	w.obj(3, "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>")
	w.stream(4, "", []byte(pageText))
	for i := 0; i < depth; i++ {
		parent := ""
		if i > 0 {
			parent = fmt.Sprintf("/Parent %d 0 R ", 10+i-1)
		}
		w.obj(10+i, fmt.Sprintf("<< /Type /Pages %s/Kids [%d 0 R] /Count 1 >>", parent, 10+i+1))
	}
	w.obj(10+depth, fmt.Sprintf("<< /Type /Page /Parent %d 0 R /Contents 4 0 R >>", 10+depth-1))
	w.obj(2, "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>")
	return w.finish("")
}

// zipOf writes a ZIP archive of parts in order. A part's repeated
// content is compressed once, as a piece of deflate data that refers to
// nothing before it and ends on a byte boundary (a sync flush), and that
// piece is written as many times as needed: a gigabyte part costs the
// compression of a megabyte.
func zipOf(parts ...part) []byte {
	var b bytes.Buffer
	zw := zip.NewWriter(&b)
	for _, p := range parts {
		var data bytes.Buffer
		crc := crc32.NewIEEE()
		var size uint64
		piece := func(raw []byte, final bool) []byte {
			var out bytes.Buffer
			fw, _ := flate.NewWriter(&out, flate.BestCompression)
			fw.Write(raw)
			if final {
				fw.Close()
			} else {
				fw.Flush()
			}
			return out.Bytes()
		}
		data.Write(piece([]byte(p.head), false))
		crc.Write([]byte(p.head))
		size += uint64(len(p.head))
		if p.repeat != "" {
			chunk := []byte(strings.Repeat(p.repeat, max(1, (1<<20)/len(p.repeat))))
			c := piece(chunk, false)
			for n := int64(0); n < p.size; n += int64(len(chunk)) {
				data.Write(c)
				crc.Write(chunk)
				size += uint64(len(chunk))
			}
		}
		data.Write(piece([]byte(p.tail), true))
		crc.Write([]byte(p.tail))
		size += uint64(len(p.tail))
		f, err := zw.CreateRaw(&zip.FileHeader{Name: p.name, Method: zip.Deflate, CRC32: crc.Sum32(),
			CompressedSize64: uint64(data.Len()), UncompressedSize64: size})
		if err != nil {
			panic(err)
		}
		f.Write(data.Bytes())
	}
	if err := zw.Close(); err != nil {
		panic(err)
	}
	return b.Bytes()
}

// part is one entry of an archive: head, then repeat written until size
// bytes, then tail.
type part struct {
	name   string
	head   string
	repeat string
	size   int64
	tail   string
}

const container = `<?xml version="1.0"?><container version="1.0" xmlns="urn:oasis:names:tc:opendocument:xmlns:container"><rootfiles><rootfile full-path="OEBPS/content.opf" media-type="application/oebps-package+xml"/></rootfiles></container>`

const opf = `<?xml version="1.0"?><package xmlns="http://www.idpf.org/2007/opf" version="3.0"><metadata xmlns:dc="http://purl.org/dc/elements/1.1/"><dc:title>Hostile</dc:title></metadata><manifest><item id="nav" href="nav.xhtml" properties="nav" media-type="application/xhtml+xml"/><item id="c0" href="c0.xhtml" media-type="application/xhtml+xml"/></manifest><spine><itemref idref="c0"/></spine></package>`

const chapter = `<?xml version="1.0"?><html xmlns="http://www.w3.org/1999/xhtml"><head><title>c</title></head><body><h1>Chapter</h1><p>A chapter of a hostile book.</p></body></html>`

// epub writes an EPUB of parts after the mimetype and container.
func epub(parts ...part) []byte {
	all := []part{{name: "mimetype", tail: "application/epub+zip"}, {name: "META-INF/container.xml", tail: container}}
	return zipOf(append(all, parts...)...)
}

// NavBombEPUB is an EPUB whose navigation document is size bytes of links.
func NavBombEPUB(size int64) []byte {
	return epub(
		part{name: "OEBPS/content.opf", tail: opf},
		part{name: "OEBPS/nav.xhtml", repeat: `<li><a href="c0.xhtml">Chapter</a></li>`, size: size, tail: "</ol></nav></body></html>"},
		part{name: "OEBPS/c0.xhtml", tail: chapter},
	)
}

// BigChapterEPUB is an EPUB of one chapter of size bytes of paragraphs.
func BigChapterEPUB(size int64) []byte {
	return epub(
		part{name: "OEBPS/content.opf", tail: opf},
		part{name: "OEBPS/nav.xhtml", tail: `<html><body><nav><ol><li><a href="c0.xhtml">One</a></li></ol></nav></body></html>`},
		part{name: "OEBPS/c0.xhtml", repeat: "<p>aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa</p>", size: size, tail: "</body></html>"},
	)
}

// ReadingListEPUB is an EPUB whose spine lists its chapter n times.
func ReadingListEPUB(n int64) []byte {
	ref := `<itemref idref="c0"/>`
	head := `<?xml version="1.0"?><package xmlns="http://www.idpf.org/2007/opf" version="3.0"><metadata xmlns:dc="http://purl.org/dc/elements/1.1/"><dc:title>Hostile</dc:title></metadata><manifest><item id="c0" href="c0.xhtml" media-type="application/xhtml+xml"/></manifest><spine>`
	return epub(
		part{name: "OEBPS/content.opf", head: head, repeat: ref, size: n * int64(len(ref)), tail: "</spine></package>"},
		part{name: "OEBPS/c0.xhtml", tail: chapter},
	)
}

const docxHead = `<?xml version="1.0" encoding="UTF-8"?><w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body>`

// DOCXBomb is a DOCX whose document part is size bytes of one-letter
// paragraphs.
func DOCXBomb(size int64) []byte {
	return zipOf(part{name: "word/document.xml", head: docxHead, repeat: "<w:p><w:r><w:t>x</w:t></w:r></w:p>", size: size, tail: "</w:body></w:document>"})
}

// DOCXLongRun is a DOCX whose one run of text is size bytes.
func DOCXLongRun(size int64) []byte {
	return zipOf(part{name: "word/document.xml", head: docxHead + "<w:p><w:r><w:t>", repeat: "x", size: size, tail: "</w:t></w:r></w:p></w:body></w:document>"})
}

// DOCXDeep is a DOCX whose elements nest depth deep.
func DOCXDeep(depth int64) []byte {
	return zipOf(part{name: "word/document.xml", head: docxHead, repeat: "<w:p>", size: 5 * depth})
}

// SlowPDF is a PDF of n pages, each drawing its own copy of a content
// stream of 1 MiB of path operators and no text: every page passes the
// reader's checks and costs it tens of milliseconds, so that reading all
// of them takes seconds (about 13 s for 256 pages on a loaded machine).
func SlowPDF(n int) []byte {
	var content bytes.Buffer
	for content.Len() < 1<<20 {
		content.WriteString("10 10 m 20 20 l S q 1 0 0 1 5 5 cm Q\n")
	}
	z := deflate(content.Bytes())
	w := pagesPDF(n, 2)
	for i := 0; i < n; i++ {
		w.obj(10+2*i, fmt.Sprintf("<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents %d 0 R /Resources << /Font << /F1 3 0 R >> >> >>", 11+2*i))
		w.stream(11+2*i, "/Filter /FlateDecode", z)
	}
	return w.finish("")
}

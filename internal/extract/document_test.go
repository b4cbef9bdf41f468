package extract

import (
	"archive/zip"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ragmem/ragmem/chunk"
)

var updateFixtures = flag.Bool("update-documents", false, "rewrite testdata/documents/*.pdf (and the encrypted one with qpdf)")

// The fixtures in ../testdata/documents: guide.docx and guide.epub come from
// guide.md through pandoc (scripts/fixtures.sh); the PDFs are written by
// pdfFile below (go test ./internal/extract -run Fixtures -update-documents), the
// encrypted one then encrypted with qpdf.
const docDir = "../../testdata/documents"

type pdfOutline struct {
	title    string
	page     int
	children []pdfOutline
}

// pdfFile writes a small PDF: pages of text lines in Helvetica (nil lines
// draw an image instead), an optional outline and a Title.
func pdfFile(title string, pages [][]string, outline []pdfOutline) []byte {
	var objs []string
	add := func(s string) int { objs = append(objs, s); return len(objs) }
	catalog := add("")
	pagesObj := add("")
	font := add("<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>")
	image := add("<< /Type /XObject /Subtype /Image /Width 2 /Height 2 /ColorSpace /DeviceGray /BitsPerComponent 8 /Length 4 >>\nstream\n\x00\xff\xff\x00\nendstream")
	var pageObjs []int
	for _, lines := range pages {
		var c strings.Builder
		if lines == nil {
			c.WriteString("q 200 0 0 200 100 400 cm /Im1 Do Q\n")
		} else {
			c.WriteString("BT /F1 12 Tf 72 720 Td 14 TL\n")
			for _, l := range lines {
				if l == "" {
					c.WriteString("T*\n") // a blank line: a paragraph break
					continue
				}
				esc := strings.NewReplacer(`\`, `\\`, `(`, `\(`, `)`, `\)`).Replace(l)
				fmt.Fprintf(&c, "(%s) Tj T*\n", esc)
			}
			c.WriteString("ET\n")
		}
		content := add(fmt.Sprintf("<< /Length %d >>\nstream\n%sendstream", c.Len(), c.String()))
		pageObjs = append(pageObjs, add(fmt.Sprintf("<< /Type /Page /Parent %d 0 R /MediaBox [0 0 612 792] /Contents %d 0 R /Resources << /Font << /F1 %d 0 R >> /XObject << /Im1 %d 0 R >> >> >>", pagesObj, content, font, image)))
	}
	var kids []string
	for _, p := range pageObjs {
		kids = append(kids, fmt.Sprintf("%d 0 R", p))
	}
	objs[pagesObj-1] = fmt.Sprintf("<< /Type /Pages /Kids [%s] /Count %d >>", strings.Join(kids, " "), len(pageObjs))
	cat := fmt.Sprintf("<< /Type /Catalog /Pages %d 0 R", pagesObj)
	if len(outline) > 0 {
		root := add("")
		var items func(parent int, os []pdfOutline) (first, last int)
		items = func(parent int, os []pdfOutline) (int, int) {
			ids := make([]int, len(os))
			for i := range os {
				ids[i] = add("")
			}
			for i, o := range os {
				s := fmt.Sprintf("<< /Title (%s) /Parent %d 0 R /Dest [%d 0 R /XYZ 0 792 0]", o.title, parent, pageObjs[o.page])
				if i > 0 {
					s += fmt.Sprintf(" /Prev %d 0 R", ids[i-1])
				}
				if i < len(os)-1 {
					s += fmt.Sprintf(" /Next %d 0 R", ids[i+1])
				}
				if len(o.children) > 0 {
					f, l := items(ids[i], o.children)
					s += fmt.Sprintf(" /First %d 0 R /Last %d 0 R /Count %d", f, l, len(o.children))
				}
				objs[ids[i]-1] = s + " >>"
			}
			return ids[0], ids[len(ids)-1]
		}
		f, l := items(root, outline)
		objs[root-1] = fmt.Sprintf("<< /Type /Outlines /First %d 0 R /Last %d 0 R /Count %d >>", f, l, len(outline))
		cat += fmt.Sprintf(" /Outlines %d 0 R /PageMode /UseOutlines", root)
	}
	objs[catalog-1] = cat + " >>"
	info := add(fmt.Sprintf("<< /Title (%s) /Producer (ragmem test fixture) >>", title))
	return pdfObjects("%PDF-1.4\n%\xe2\xe3\xcf\xd3\n", objs, fmt.Sprintf("/Root %d 0 R /Info %d 0 R", catalog, info))
}

var guidePages = [][]string{
	{"Otters live along rivers, lakes and coasts.", "A healthy otter population is a sign", "of clean water.", "", "Otters rest in dens called holts."},
	{"Sea otters hold hands while they sleep so that", "they do not drift apart."},
	{"Otters eat a quarter of their body weight every day."},
}

func TestFixtures(t *testing.T) {
	if !*updateFixtures {
		t.Skip("run with -update-documents to rewrite the PDF fixtures")
	}
	files := map[string][]byte{
		"guide.pdf": pdfFile("The Otter Field Guide", guidePages, []pdfOutline{
			{title: "Habitat", page: 0, children: []pdfOutline{{title: "Dens", page: 0}}},
			{title: "Behaviour", page: 1, children: []pdfOutline{{title: "Diet", page: 2}}},
		}),
		"pages.pdf":    pdfFile("Pages Only", guidePages[:2], nil),
		"scanned.pdf":  pdfFile("A Scan", [][]string{nil, nil}, nil),
		"plain-in.pdf": pdfFile("Secret Plans", [][]string{{"The plans are hidden."}}, nil),
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(docDir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	in, out := filepath.Join(docDir, "plain-in.pdf"), filepath.Join(docDir, "encrypted.pdf")
	defer os.Remove(in)
	if msg, err := exec.Command("qpdf", "--encrypt", "user-pw", "owner-pw", "256", "--", in, out).CombinedOutput(); err != nil {
		t.Fatalf("qpdf: %v\n%s", err, msg)
	}
	// The guide with only an owner password, in each method qpdf writes.
	guide := filepath.Join(docDir, "guide.pdf")
	for name, args := range ownerFixtures {
		args = append(append([]string{"--allow-weak-crypto"}, args...), guide, filepath.Join(docDir, name))
		if msg, err := exec.Command("qpdf", args...).CombinedOutput(); err != nil {
			t.Fatalf("qpdf %s: %v\n%s", name, err, msg)
		}
	}
}

// ownerFixtures are guide.pdf encrypted by qpdf with an empty user
// password: an independent writer's take on each revision.
var ownerFixtures = map[string][]string{
	"owner-rc4-40.pdf":  {"--encrypt", "", "owner-pw", "40", "--"},
	"owner-rc4-128.pdf": {"--encrypt", "", "owner-pw", "128", "--use-aes=n", "--"},
	"owner-aes128.pdf":  {"--object-streams=generate", "--encrypt", "", "owner-pw", "128", "--use-aes=y", "--cleartext-metadata", "--"},
	"owner-aes256.pdf":  {"--object-streams=generate", "--encrypt", "", "owner-pw", "256", "--"},
}

// TestOwnerPasswordFixtures: qpdf's owner-password files read exactly like
// the guide they were made from.
func TestOwnerPasswordFixtures(t *testing.T) {
	want, err := PDF(readFixture(t, "guide.pdf"), nil)
	if err != nil {
		t.Fatal(err)
	}
	for name := range ownerFixtures {
		got, err := PDF(readFixture(t, name), nil)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if got.Title != want.Title || got.HTML != want.HTML {
			t.Errorf("%s: title %q, HTML %q; want %q, %q", name, got.Title, got.HTML, want.Title, want.HTML)
		}
	}
}

func readFixture(t *testing.T, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(docDir, name))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// headingPaths chunks a page's HTML and returns each chunk's heading path
// joined by " > ", with the chunk text.
func headingPaths(p Page) map[string]string {
	out := map[string]string{}
	for _, c := range chunk.Split(p.HTML, chunk.HTML, &chunk.Options{MaxTokens: 60}) {
		out[strings.Join(c.HeadingPath, " > ")] += c.Text + "\n"
	}
	return out
}

func TestDocuments(t *testing.T) {
	cases := []struct {
		file, title, method string
		paths               map[string]string // heading path -> text it holds
	}{
		{"guide.pdf", "The Otter Field Guide", MethodPDF, map[string]string{
			"Habitat > Dens":   "sign of clean water", // lines joined into one paragraph
			"Behaviour":        "hold hands while they sleep so that they do not drift apart",
			"Behaviour > Diet": "quarter of their body weight",
		}},
		{"pages.pdf", "Pages Only", MethodPDF, map[string]string{
			"Page 1": "Otters live along rivers",
			"Page 2": "Sea otters hold hands",
		}},
		{"guide.docx", "The Otter Field Guide", MethodDOCX, map[string]string{
			"Habitat":          "sign of clean water",
			"Habitat > Dens":   "holts",
			"Behaviour > Diet": "Fish | 70%",
		}},
		{"guide.epub", "The Otter Field Guide", MethodEPUB, map[string]string{
			"Habitat > Dens":   "holts",
			"Behaviour":        "hold hands",
			"Behaviour > Diet": "quarter of their body weight",
		}},
	}
	for _, c := range cases {
		p, ok, err := Document(c.file, readFixture(t, c.file), nil)
		if err != nil || !ok {
			t.Errorf("%s: %v (known %v)", c.file, err, ok)
			continue
		}
		if p.Title != c.title || p.Method != c.method {
			t.Errorf("%s: title %q method %q", c.file, p.Title, p.Method)
		}
		got := headingPaths(p)
		for path, text := range c.paths {
			if !strings.Contains(got[path], text) {
				t.Errorf("%s: heading path %q holds %q, want it to hold %q (paths: %q)", c.file, path, got[path], text, keys(got))
			}
		}
	}
}

func keys(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

func TestDocumentFailures(t *testing.T) {
	cases := []struct {
		file string
		data []byte
		want error
		says string
	}{
		{"encrypted.pdf", readFixture(t, "encrypted.pdf"), ErrEncrypted, "the document is encrypted: it needs a password to open; decrypt it first"},
		{"scanned.pdf", readFixture(t, "scanned.pdf"), ErrNoTextLayer, "no text layer"},
		{"x.pdf", []byte("not a pdf at all"), ErrDamaged, "not a PDF"},
		{"x.pdf", append([]byte("%PDF-1.4\n"), bytes.Repeat([]byte("garbage "), 100)...), ErrDamaged, "damaged"},
		{"x.pdf", []byte("%PDF-1.5\n1 0 obj << /Type /XRef /Size 999999999999 /W [1 2 1] >> stream\nendstream\n%%EOF"), ErrLimit, "/Size"},
		{"x.docx", []byte("PK\x03\x04 truncated"), ErrDamaged, "DOCX"},
		{"x.docx", append(append([]byte{}, cfbMagic...), make([]byte, 512)...), ErrEncrypted, "encrypted"},
		{"x.epub", zipOf(t, map[string]string{"mimetype": "application/epub+zip"}), ErrDamaged, "container.xml"},
		{"x.docx", zipOf(t, map[string]string{"word/document.xml": strings.Repeat("<w:p><w:r><w:t>bomb</w:t></w:r></w:p>", 1)}), nil, ""},
	}
	for _, c := range cases {
		_, _, err := Document(c.file, c.data, nil)
		if c.want == nil {
			if err != nil {
				t.Errorf("%s: %v", c.file, err)
			}
			continue
		}
		if !errors.Is(err, c.want) || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%s: error %v, want %v saying %q", c.file, err, c.want, c.says)
		}
		if strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: the reason is not one line: %q", c.file, err)
		}
	}
	// A decompression bomb: a DOCX whose document part inflates beyond the
	// limit fails with ErrLimit, after reading no more than the limit.
	bomb := zipOf(t, map[string]string{"word/document.xml": "<w:document>" + strings.Repeat(" ", 4<<20) + "</w:document>"})
	if _, err := DOCX(bomb, &DocumentOptions{MaxExpanded: 1 << 20}); !errors.Is(err, ErrLimit) {
		t.Errorf("bomb: %v", err)
	}
	if _, err := PDF(readFixture(t, "guide.pdf"), &DocumentOptions{MaxExpanded: 10}); !errors.Is(err, ErrLimit) {
		t.Errorf("PDF over its decompression budget: %v", err)
	}
	if _, err := PDF(readFixture(t, "guide.pdf"), &DocumentOptions{MaxParts: 2}); !errors.Is(err, ErrLimit) {
		t.Errorf("PDF over its page limit: %v", err)
	}
}

func zipOf(t testing.TB, files map[string]string) []byte {
	var b bytes.Buffer
	w := zip.NewWriter(&b)
	for name, body := range files {
		f, err := w.Create(name)
		if err != nil {
			t.Fatal(err)
		}
		f.Write([]byte(body))
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// The readers never panic and never fail with an error outside their own
// on any input; the seeds are the fixtures and a few broken variants.
func fuzzDocument(f *testing.F, name string, seeds ...string) {
	for _, s := range seeds {
		data, err := os.ReadFile(filepath.Join(docDir, s))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
		f.Add(data[:len(data)/2])
		mid := bytes.Clone(data)
		for i := len(mid) / 3; i < len(mid)/3+64 && i < len(mid); i++ {
			mid[i] ^= 0x5a
		}
		f.Add(mid)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		p, _, err := Document(name, data, &DocumentOptions{MaxText: 1 << 20, MaxExpanded: 8 << 20, MaxParts: 200})
		if err != nil {
			for _, e := range []error{ErrEncrypted, ErrNoTextLayer, ErrDamaged, ErrLimit, ErrTooLarge, ErrNoContent} {
				if errors.Is(err, e) {
					return
				}
			}
			t.Fatalf("error outside the package's: %v", err)
		}
		if len(p.Text) > 1<<20+1024 {
			t.Fatalf("text of %d bytes past the limit", len(p.Text))
		}
	})
}

func FuzzPDF(f *testing.F) {
	fuzzDocument(f, "f.pdf", "guide.pdf", "pages.pdf", "scanned.pdf", "encrypted.pdf")
}
func FuzzDOCX(f *testing.F) { fuzzDocument(f, "f.docx", "guide.docx") }
func FuzzEPUB(f *testing.F) { fuzzDocument(f, "f.epub", "guide.epub") }

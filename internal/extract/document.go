package extract

import (
	"errors"
	"fmt"
	"html"
	"path/filepath"
	"strings"
	"time"
	"unicode/utf8"
)

// Document files: PDF (its text layer), DOCX and EPUB. Each reader turns a
// file into a Page whose HTML holds the document's structure as headings
// (PDF outline entries or pages, DOCX heading paragraphs, EPUB chapters and
// their own headings) and its text as paragraphs, ready for chunk.HTML,
// which makes the headings each chunk's heading path. The readers bound
// their memory and time by DocumentOptions and turn any failure of the
// formats' libraries, panics included, into an error.

// Errors of the document readers. Each says in one line why a file cannot
// be indexed.
var (
	// ErrEncrypted: a document that needs a password (or a DRM key) to
	// open. A PDF with only an owner password opens without one and is
	// read.
	ErrEncrypted = errors.New("extract: the document is encrypted")
	// ErrNoTextLayer: a PDF whose pages hold no text (scanned pages,
	// images of text); it needs OCR first.
	ErrNoTextLayer = errors.New("extract: the PDF has no text layer (scanned or image-only pages); run OCR on it first")
	// ErrDamaged: the file is not a readable document of its format.
	ErrDamaged = errors.New("extract: the document is damaged or not of its format")
	// ErrLimit: the document is beyond one of DocumentOptions' limits.
	ErrLimit = errors.New("extract: the document exceeds a limit")
)

// Methods reported in Page.Method by the document readers.
const (
	MethodPDF  = "pdf"
	MethodDOCX = "docx"
	MethodEPUB = "epub"
)

// Defaults of DocumentOptions.
const (
	DefaultDocMaxBytes    = 64 << 20
	DefaultDocMaxText     = 32 << 20
	DefaultDocMaxParts    = 10_000
	DefaultDocMaxExpanded = 256 << 20
	DefaultDocTimeout     = 60 * time.Second
)

// DocumentOptions configure PDF, DOCX and EPUB. A nil *DocumentOptions
// means all defaults.
type DocumentOptions struct {
	// MaxBytes is the largest file accepted; a larger one fails with
	// ErrTooLarge. Default 64 MiB.
	MaxBytes int
	// MaxText is the most text extracted; a document with more fails with
	// ErrLimit. Default 32 MiB.
	MaxText int
	// MaxParts is the most PDF pages, DOCX paragraphs (in hundreds) or
	// EPUB chapters read; a document with more fails with ErrLimit.
	// Default 10,000 (a million paragraphs).
	MaxParts int
	// MaxExpanded is the most bytes a document may expand to when its
	// compressed parts (PDF streams, the ZIP entries of DOCX and EPUB) are
	// decompressed; beyond it (a decompression bomb) it fails with
	// ErrLimit. Default 256 MiB.
	MaxExpanded int64
	// Timeout bounds the reading; a document not read within it fails
	// with ErrLimit. Default 60 s.
	Timeout time.Duration
}

func (o *DocumentOptions) withDefaults() DocumentOptions {
	var r DocumentOptions
	if o != nil {
		r = *o
	}
	if r.MaxBytes <= 0 {
		r.MaxBytes = DefaultDocMaxBytes
	}
	if r.MaxText <= 0 {
		r.MaxText = DefaultDocMaxText
	}
	if r.MaxParts <= 0 {
		r.MaxParts = DefaultDocMaxParts
	}
	if r.MaxExpanded <= 0 {
		r.MaxExpanded = DefaultDocMaxExpanded
	}
	if r.Timeout <= 0 {
		r.Timeout = DefaultDocTimeout
	}
	return r
}

// Document reads a document file by its name's extension (.pdf, .docx,
// .epub; case-insensitive). It returns false for other names.
func Document(name string, data []byte, opts *DocumentOptions) (Page, bool, error) {
	switch strings.ToLower(filepath.Ext(name)) {
	case ".pdf":
		p, err := PDF(data, opts)
		return p, true, err
	case ".docx":
		p, err := DOCX(data, opts)
		return p, true, err
	case ".epub":
		p, err := EPUB(data, opts)
		return p, true, err
	}
	return Page{}, false, nil
}

// DocumentExtensions are the extensions Document reads.
var DocumentExtensions = []string{".pdf", ".docx", ".epub"}

// docBuilder collects a document's headings and paragraphs as HTML and
// text, within a text budget and a deadline.
type docBuilder struct {
	html, text strings.Builder
	max        int
	deadline   time.Time
	err        error
	paras      int
}

func newDocBuilder(o DocumentOptions) *docBuilder {
	return &docBuilder{max: o.MaxText, deadline: time.Now().Add(o.Timeout)}
}

// check reports (and remembers) a passed deadline.
func (b *docBuilder) check() error {
	if b.err == nil && time.Now().After(b.deadline) {
		b.err = fmt.Errorf("%w: not read within the time limit", ErrLimit)
	}
	return b.err
}

func (b *docBuilder) grow(n int) bool {
	if b.err != nil {
		return false
	}
	if b.text.Len()+n > b.max {
		b.err = fmt.Errorf("%w: more than %d bytes of text", ErrLimit, b.max)
		return false
	}
	return true
}

// heading adds a heading of level 1 to 6.
func (b *docBuilder) heading(level int, s string) {
	s = cleanLine(s, 300)
	if s == "" || !b.grow(len(s)+1) {
		return
	}
	level = max(1, min(6, level))
	fmt.Fprintf(&b.html, "<h%d>%s</h%d>\n", level, html.EscapeString(s), level)
	b.text.WriteString(s)
	b.text.WriteByte('\n')
}

// para adds a paragraph; its lines are kept as line breaks.
func (b *docBuilder) para(s string) {
	s = strings.TrimSpace(cleanText(s))
	if s == "" || !b.grow(len(s)+1) {
		return
	}
	b.paras++
	lines := strings.Split(s, "\n")
	b.html.WriteString("<p>")
	for i, l := range lines {
		if i > 0 {
			b.html.WriteString("<br>")
		}
		b.html.WriteString(html.EscapeString(strings.Join(strings.Fields(l), " ")))
	}
	b.html.WriteString("</p>\n")
	b.text.WriteString(s)
	b.text.WriteByte('\n')
}

// page returns the built page.
func (b *docBuilder) page(title, method string) (Page, error) {
	if b.err != nil {
		return Page{}, b.err
	}
	return Page{Title: cleanLine(title, 300), HTML: b.html.String(), Text: strings.TrimSpace(b.text.String()), Method: method}, nil
}

// cleanText makes extracted text valid UTF-8 without control characters
// other than line feeds and tabs.
func cleanText(s string) string {
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	return strings.Map(func(r rune) rune {
		switch {
		case r == '\n' || r == '\t':
			return r
		case r == '\r' || r == '\f' || r == '\v' || r == '\u2028' || r == '\u2029':
			return '\n'
		case r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) || r == '\uFEFF' || r == '\uFFFE':
			return -1
		}
		return r
	}, s)
}

// guard runs fn, turning a panic of a format library into ErrDamaged.
func guard(what string, fn func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			if e, ok := r.(limitPanic); ok {
				err = e.err
				return
			}
			err = fmt.Errorf("%w: %s: %v", ErrDamaged, what, r)
		}
	}()
	return fn()
}

// limitPanic carries a limit error out of a library callback.
type limitPanic struct{ err error }

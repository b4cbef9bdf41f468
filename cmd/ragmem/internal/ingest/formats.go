package ingest

import (
	"context"
	"errors"
	"path/filepath"
	"strings"

	"github.com/ragmem/ragmem/chunk"
	"github.com/ragmem/ragmem/cmd/ragmem/internal/docread"
	"github.com/ragmem/ragmem/index"
	"github.com/ragmem/ragmem/internal/extract"
)

// kind is a kind of file `ragmem index` reads.
type kind struct {
	exts []string
	read func(ctx context.Context, o *Options, d index.Document, path string, data []byte) (index.Document, string, error)
}

// kinds are the files `ragmem index` reads, by extension.
var kinds = []kind{
	{[]string{".md", ".markdown"}, readText(chunk.Markdown)},
	{[]string{".txt", ".text"}, readText(chunk.Text)},
	{[]string{".html", ".htm"}, readText(chunk.HTML)},
	{[]string{".pdf"}, readDocumentFile},
	{[]string{".docx"}, readDocumentFile},
	{[]string{".epub"}, readDocumentFile},
}

// fileKind returns the kind of a file by its extension (case-insensitive).
func fileKind(path string) (kind, bool) {
	ext := strings.ToLower(filepath.Ext(path))
	for _, k := range kinds {
		for _, e := range k.exts {
			if e == ext {
				return k, true
			}
		}
	}
	return kind{}, false
}

// Exts lists the extensions of kinds, for messages.
func Exts() string {
	var es []string
	for _, k := range kinds {
		es = append(es, k.exts...)
	}
	return strings.Join(es, " ")
}

// readText reads a text, Markdown or HTML file.
func readText(f chunk.Format) func(context.Context, *Options, index.Document, string, []byte) (index.Document, string, error) {
	return func(_ context.Context, _ *Options, d index.Document, path string, data []byte) (index.Document, string, error) {
		s := string(data)
		if chunk.Binary(s) {
			return d, "binary data, not text", nil
		}
		d.Content, d.Format = s, f
		if f != chunk.HTML {
			d.Title = titleFromText(s, path)
		}
		return d, "", nil
	}
}

// readDocumentFile reads a PDF, DOCX or EPUB file through its extract
// reader, in a process of its own bounded by --document-timeout and
// --document-memory (internal/docread): a file the reader refuses (needs a
// password, has no text layer, is damaged or past a limit) or that makes
// the process pass a limit or crash is skipped with that reason (see
// skipKeep), and the rest of the folder is indexed.
func readDocumentFile(ctx context.Context, o *Options, d index.Document, path string, data []byte) (index.Document, string, error) {
	p, err := docread.Read(ctx, path, data, &docread.Options{Timeout: o.DocTimeout, Memory: o.DocMemory})
	switch {
	case ctx.Err() != nil:
		return d, "", ctx.Err()
	case errors.Is(err, docread.ErrStopped):
		return d, "", skipKeep{reason: err.Error()}
	case readerError(err):
		return d, strings.TrimPrefix(err.Error(), "extract: "), nil
	case err != nil:
		return d, "", err
	}
	d.Title = p.Title
	if d.Title == "" {
		d.Title = fileTitle(path)
	}
	d.Content, d.Format, d.Extracted = p.HTML, chunk.HTML, true
	return d, "", nil
}

// skipKeep is the error of a file skipped because the process reading it
// was stopped at one of its limits: a version indexed before is kept, as
// another run (with more time or memory, or on a less loaded machine) may
// read the file.
type skipKeep struct{ reason string }

func (e skipKeep) Error() string { return e.reason }

// readerError reports whether err says why a document cannot be read: a
// reason that belongs to the file.
func readerError(err error) bool {
	for _, e := range []error{extract.ErrEncrypted, extract.ErrNoTextLayer, extract.ErrNoContent, extract.ErrDamaged, extract.ErrLimit, extract.ErrTooLarge} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

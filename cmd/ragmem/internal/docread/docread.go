// Package docread reads PDF, DOCX and EPUB files for ragmem in a child
// process of their own (internal/sandbox): the same binary, bounded in
// wall time, CPU time and memory. The formats' readers (package extract)
// bound what they foresee; a hostile file that still makes one loop,
// exhaust memory or crash the Go runtime costs only the child, and Read
// returns an error saying which ("the PDF parser exceeded 30s"), wrapping
// extract.ErrLimit or extract.ErrDamaged, for that one file.
//
// Programs that call Read call sandbox.Main first in main (and in the
// TestMain of packages whose tests call Read).
package docread

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/ragmem/ragmem/internal/extract"
	"github.com/ragmem/ragmem/internal/sandbox"
)

// Defaults of Options.
const (
	DefaultTimeout = 30 * time.Second
	DefaultMemory  = 512 << 20
)

// Options bound one read. A nil *Options means all defaults.
type Options struct {
	// Timeout is the longest the child may take to read one document
	// (its CPU time is bounded alike); it is then killed. Default 30 s.
	Timeout time.Duration
	// Memory is the most memory the child may map beyond what it had when
	// it started. Default 512 MiB.
	Memory int64
	// Document configures the reader in the child. nil: extract's
	// defaults, except that the reader's own time limit is nine tenths of
	// Timeout, so that a document that is merely slow is refused by the
	// reader, with its reason, before the child is killed.
	Document *extract.DocumentOptions
}

// name is the function the child runs.
const name = "docread"

func init() { sandbox.Register(name, child) }

// request is what the parent sends with the file.
type request struct {
	Name     string                  `json:"name"`
	Document extract.DocumentOptions `json:"document"`
}

// response is what the child sends back: a page, or why there is none.
type response struct {
	Page  extract.Page `json:"page"`
	Kind  string       `json:"kind,omitempty"` // the extract error: see kinds
	Error string       `json:"error,omitempty"`
}

// kinds are the reader's errors, by the name that crosses the boundary.
var kinds = map[string]error{
	"encrypted": extract.ErrEncrypted,
	"notext":    extract.ErrNoTextLayer,
	"damaged":   extract.ErrDamaged,
	"limit":     extract.ErrLimit,
	"toolarge":  extract.ErrTooLarge,
	"nocontent": extract.ErrNoContent,
}

// ErrStopped is wrapped, beside extract.ErrLimit or extract.ErrDamaged, by
// the errors of a child that was stopped at one of its limits or crashed:
// the reader did not finish, so another run with more time or memory (or
// on a less loaded machine) may read the file.
var ErrStopped = errors.New("docread: the reading process was stopped")

// docError is an error carried from the child, or made of how the child
// ended: its message, and the errors it stands for.
type docError struct {
	msg   string
	kinds []error
}

func (e *docError) Error() string   { return e.msg }
func (e *docError) Unwrap() []error { return e.kinds }

// child reads one document in the child process.
func child(_ context.Context, params, input []byte) ([]byte, error) {
	var req request
	if err := json.Unmarshal(params, &req); err != nil {
		return nil, fmt.Errorf("docread: %w", err)
	}
	var resp response
	p, known, err := extract.Document(req.Name, input, &req.Document)
	switch {
	case !known:
		return nil, fmt.Errorf("docread: %s is not a PDF, DOCX or EPUB file", req.Name)
	case err != nil:
		resp.Kind, resp.Error = "damaged", err.Error()
		for k, e := range kinds {
			if errors.Is(err, e) {
				resp.Kind = k
				break
			}
		}
	default:
		resp.Page = p
	}
	return json.Marshal(resp)
}

// Read reads a PDF, DOCX or EPUB document (by name's extension) in a child
// process. The child is killed when ctx is done, and Read returns ctx's
// error. A document the reader refuses, or that makes the child pass a
// limit or crash, fails with an error wrapping one of extract's errors
// (ErrEncrypted, ErrNoTextLayer, ErrDamaged, ErrLimit, ErrTooLarge,
// ErrNoContent) whose message says why in one line. It is safe for
// concurrent use.
func Read(ctx context.Context, name string, data []byte, opts *Options) (extract.Page, error) {
	p, _, err := ReadUsage(ctx, name, data, opts)
	return p, err
}

// ReadUsage is Read that also returns what the child used.
func ReadUsage(ctx context.Context, docName string, data []byte, opts *Options) (extract.Page, sandbox.Usage, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.Memory <= 0 {
		o.Memory = DefaultMemory
	}
	var doc extract.DocumentOptions
	if o.Document != nil {
		doc = *o.Document
	}
	if doc.Timeout <= 0 || doc.Timeout > o.Timeout*9/10 {
		doc.Timeout = o.Timeout * 9 / 10
	}
	maxText := doc.MaxText
	if maxText <= 0 {
		maxText = extract.DefaultDocMaxText
	}
	params, err := json.Marshal(request{Name: docName, Document: doc})
	if err != nil {
		return extract.Page{}, sandbox.Usage{}, fmt.Errorf("docread: %w", err)
	}
	out, u, err := sandbox.Run(ctx, name, params, data, &sandbox.Limits{
		Wall: o.Timeout, Memory: o.Memory,
		// The page's HTML and text, JSON-escaped.
		Output: 6*int64(maxText) + 1<<20,
	})
	if err != nil {
		if ctx.Err() != nil {
			return extract.Page{}, u, err
		}
		return extract.Page{}, u, childError(docName, err)
	}
	var resp response
	if err := json.Unmarshal(out, &resp); err != nil {
		return extract.Page{}, u, &docError{msg: parser(docName) + " answered something unreadable: " + err.Error(), kinds: []error{extract.ErrDamaged}}
	}
	if resp.Kind != "" {
		kind, ok := kinds[resp.Kind]
		if !ok {
			kind = extract.ErrDamaged
		}
		return extract.Page{}, u, &docError{msg: resp.Error, kinds: []error{kind}}
	}
	return resp.Page, u, nil
}

// childError says how the child failed, for a skip note.
func childError(docName string, err error) error {
	var le *sandbox.LimitError
	var ce *sandbox.CrashError
	var je *sandbox.JobError
	switch {
	case errors.As(err, &le):
		return &docError{msg: parser(docName) + " " + le.Reason, kinds: []error{extract.ErrLimit, ErrStopped}}
	case errors.As(err, &ce):
		return &docError{msg: parser(docName) + " " + ce.Reason, kinds: []error{extract.ErrDamaged, ErrStopped}}
	case errors.As(err, &je):
		return &docError{msg: je.Msg, kinds: []error{extract.ErrDamaged}}
	}
	return fmt.Errorf("docread: %w", err)
}

// parser names the reader of a document: "the PDF parser".
func parser(docName string) string {
	return "the " + strings.ToUpper(strings.TrimPrefix(filepath.Ext(docName), ".")) + " parser"
}

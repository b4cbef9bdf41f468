package server

import (
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/ragmem/ragmem/chunk"
	"github.com/ragmem/ragmem/internal/reserved"
	"github.com/ragmem/ragmem/rag"
)

// maxDocuments bounds the documents of one POST /v1/documents.
const maxDocuments = 1000

// DocumentRequest is one document of POST /v1/documents: indexed as given
// (no page extraction), the way `ragmem index` indexes a file.
// It is a plain value.
type DocumentRequest struct {
	URL     string            `json:"url"`
	Title   string            `json:"title,omitempty"`
	Content string            `json:"content"`
	Format  string            `json:"format,omitempty"` // text (default), markdown or html
	Type    string            `json:"type,omitempty"`   // knowledge (the default and the only one: memories and preferences have their own APIs)
	Attrs   map[string]string `json:"attrs,omitempty"`
	// Extracted says that HTML content is already a document's main
	// content (a PDF, DOCX or EPUB file's text, as `ragmem index` reads
	// it): it is chunked as it is, not reduced by page extraction.
	Extracted bool `json:"extracted,omitempty"`
}

// DocumentsRequest is the body of POST /v1/documents.
// It is a plain value.
type DocumentsRequest struct {
	Documents []DocumentRequest `json:"documents"`
}

// DocumentResult says what indexing one document did.
// It is a plain value.
type DocumentResult struct {
	URL         string `json:"url"`
	ContentHash string `json:"contentHash,omitempty"`
	Chunks      int    `json:"chunks"`              // chunks now stored for the source
	Removed     int    `json:"removed,omitempty"`   // chunks of an earlier version replaced
	Unchanged   bool   `json:"unchanged,omitempty"` // same content already indexed: nothing written
	Superseded  bool   `json:"superseded,omitempty"`
	Error       string `json:"error,omitempty"` // this document could not be indexed
	// Code is the error's code, as an error response would carry it:
	// reserved (the URL holds a memory or a preference), too_many_chunks,
	// no_content, quota_exceeded or internal.
	Code string `json:"code,omitempty"`
}

// documentCode is the error code of a document's own failure.
func documentCode(err error) string {
	switch {
	case errors.Is(err, rag.ErrReserved):
		return CodeReserved
	case errors.Is(err, rag.ErrTooManyChunks):
		return CodeTooManyChunks
	case errors.Is(err, rag.ErrEmptyDocument), errors.Is(err, rag.ErrBinaryContent):
		return CodeNoContent
	case errors.Is(err, rag.ErrQuotaExceeded):
		return CodeQuotaExceeded
	}
	return CodeInternal
}

// DocumentsJSON answers POST /v1/documents.
// It is a plain value.
type DocumentsJSON struct {
	Results []DocumentResult `json:"results"`
}

func (s *Server) documentRoutes() {
	s.mustHandle("POST /v1/documents", s.postDocuments, true)
	s.mustHandle("DELETE /v1/sources", s.deleteSource, true)
}

// checkSourceName validates the source name of a document: any non-empty
// text without control characters (the CLI names files by their file://
// URL, and stdin by whatever --url says); pages need an absolute URL.
func checkSourceName(field, raw string) (string, *apiError) {
	u := raw
	if strings.TrimSpace(u) == "" {
		return "", badRequest("%s is required", field)
	}
	if e := checkText(field, u, maxURLBytes); e != nil {
		return "", e
	}
	if strings.ContainsAny(u, "\x00\r\n") {
		return "", badRequest("%s contains control characters", field)
	}
	return u, nil
}

// document validates one document of a batch.
func (d *DocumentRequest) document(i int) (rag.Document, *apiError) {
	field := func(name string) string { return fmt.Sprintf("documents[%d].%s", i, name) }
	u, e := checkSourceName(field("url"), d.URL)
	if e != nil {
		return rag.Document{}, e
	}
	if e := checkText(field("title"), d.Title, maxTitleBytes); e != nil {
		return rag.Document{}, e
	}
	if e := checkText(field("content"), d.Content, 1<<40); e != nil {
		return rag.Document{}, e
	}
	f := chunk.Text
	if d.Format != "" {
		var err error
		if f, err = chunk.ParseFormat(d.Format); err != nil {
			return rag.Document{}, badRequest("%s: %v", field("format"), err)
		}
	}
	t := strings.TrimSpace(d.Type)
	switch {
	case t == "":
		t = rag.DocKnowledge
	case t == rag.DocKnowledge:
	case reserved.DocType(t):
		// The engine refuses them, by the rules every surface shares
		// (rag.ErrReserved: 403).
	default:
		return rag.Document{}, badRequest("%s: %q is not a document type; documents are knowledge (memories are written with /v1/memories, preferences with /v1/preferences)", field("type"), clip(d.Type, 40))
	}
	if err := rag.CheckAttrs(d.Attrs); err != nil {
		return rag.Document{}, badRequest("%s: %s", field("attrs"), clientMessage(err, rag.ErrBadAttrs))
	}
	return rag.Document{SourceURL: u, Title: d.Title, Content: d.Content, Format: f, DocType: t, Attrs: d.Attrs, Extracted: d.Extracted && f == chunk.HTML}, nil
}

// postDocuments indexes a batch of documents synchronously, in one atomic
// write: when it answers 200, every document's result is final and durable.
func (s *Server) postDocuments(w http.ResponseWriter, r *http.Request) {
	var req DocumentsRequest
	if e := decodeJSON(r, &req); e != nil {
		writeAPIError(w, r, e)
		return
	}
	if len(req.Documents) == 0 {
		writeAPIError(w, r, badRequest("documents is empty"))
		return
	}
	if len(req.Documents) > maxDocuments {
		writeAPIError(w, r, badRequest("more than %d documents in one request", maxDocuments))
		return
	}
	docs := make([]rag.Document, len(req.Documents))
	for i := range req.Documents {
		d, e := req.Documents[i].document(i)
		if e != nil {
			writeAPIError(w, r, e)
			return
		}
		docs[i] = d
	}
	eng := s.engine(w, r)
	if eng == nil {
		return
	}
	res, err := eng.IndexDocuments(r.Context(), docs)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	out := DocumentsJSON{Results: make([]DocumentResult, len(res))}
	for i, x := range res {
		dr := DocumentResult{URL: docs[i].SourceURL, ContentHash: x.ContentHash, Chunks: x.Chunks, Removed: x.Removed, Unchanged: x.Unchanged, Superseded: x.Superseded}
		if x.Err != nil {
			dr.Error, dr.Code = publicMessage(r, x.Err.Error()), documentCode(x.Err)
		}
		out.Results[i] = dr
	}
	writeJSON(w, http.StatusOK, out)
}

// deleteSource removes every chunk of a source of any type (DELETE
// /v1/pages removes only pages).
func (s *Server) deleteSource(w http.ResponseWriter, r *http.Request) {
	u, e := checkSourceName("url", r.URL.Query().Get("url"))
	if e != nil {
		writeAPIError(w, r, e)
		return
	}
	eng := s.engine(w, r)
	if eng == nil {
		return
	}
	n, err := eng.Remove(r.Context(), u)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if n == 0 {
		WriteError(w, r, http.StatusNotFound, CodeNotFound, fmt.Sprintf("no source %s in the memory", u))
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"url": u, "removed": n})
}

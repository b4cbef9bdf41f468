package server

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/ragmem/ragmem/rag"
)

func (s *Server) documentRoutes() {
	s.mustHandle("POST /v1/documents", s.postDocuments, true)
	s.mustHandle("DELETE /v1/sources", s.deleteSource, true)
}

// postDocuments indexes a batch of documents synchronously, in one atomic
// write: when it answers 200, every document's result is final and durable.
func (s *Server) postDocuments(w http.ResponseWriter, r *http.Request) {
	var req rag.DocumentsRequest
	if e := decodeJSON(r, &req); e != nil {
		writeAPIError(w, r, e)
		return
	}
	mem := s.memory(w, r)
	if mem == nil {
		return
	}
	out, err := mem.Index(r.Context(), req)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	for i := range out.Results {
		out.Results[i].Error = publicMessage(r, out.Results[i].Error)
	}
	writeJSON(w, http.StatusOK, out)
}

// deleteSource removes every chunk of a source of any type (DELETE
// /v1/pages removes only pages).
func (s *Server) deleteSource(w http.ResponseWriter, r *http.Request) {
	u := r.URL.Query().Get("url")
	if strings.TrimSpace(u) == "" {
		writeAPIError(w, r, badRequest("url is required"))
		return
	}
	if e := checkText("url", u, maxURLBytes); e != nil {
		writeAPIError(w, r, e)
		return
	}
	if strings.ContainsAny(u, "\x00\r\n") {
		writeAPIError(w, r, badRequest("url contains control characters"))
		return
	}
	mem := s.memory(w, r)
	if mem == nil {
		return
	}
	n, err := mem.Remove(r.Context(), u)
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

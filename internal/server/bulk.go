package server

import (
	"context"
	"fmt"
	"net/http"

	"github.com/ragmem/ragmem/rag"
)

func (s *Server) bulkRoutes() {
	s.mustHandle("POST /v1/sources:delete", s.deleteSources, true)
	s.mustHandle("PATCH /v1/sources", s.patchSource, true)
}

// deleteSources answers POST /v1/sources:delete.
func (s *Server) deleteSources(w http.ResponseWriter, r *http.Request) {
	var req rag.DeleteSourcesRequest
	if e := decodeJSON(r, &req); e != nil {
		writeAPIError(w, r, e)
		return
	}
	mem := s.memory(w, r)
	if mem == nil {
		return
	}
	out, err := mem.DeleteSources(r.Context(), req)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	for i := range out.KeptSources {
		si := &out.KeptSources[i]
		si.URL = publicURL(si.URL, si.DocType, IsLocal(r))
	}
	writeJSON(w, http.StatusOK, out)
}

// patchSource answers PATCH /v1/sources?url=: it changes a source's
// attributes without embedding it again.
func (s *Server) patchSource(w http.ResponseWriter, r *http.Request) {
	var req rag.SetAttrsRequest
	if e := decodeJSON(r, &req); e != nil {
		writeAPIError(w, r, e)
		return
	}
	mem := s.memory(w, r)
	if mem == nil {
		return
	}
	out, err := mem.SetSourceAttrs(r.Context(), r.URL.Query().Get("url"), req)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, out)
}

// AcquireNamespace returns the engine of namespace ns ("" the default
// one), opening its store if needed, and the function to call once the
// caller is done with it: the in-process counterpart of a request with the
// X-Ragmem-Namespace header, for the process that owns the data directory
// (its CLI commands run with --namespace).
func (s *Server) AcquireNamespace(ctx context.Context, ns string) (*rag.Engine, func(), error) {
	if err := CheckNamespace(ns); ns != "" && err != nil {
		return nil, nil, err
	}
	return s.pool.acquire(ctx, ns)
}

// CheckNamespace checks a namespace name by the rule the HTTP API applies
// to X-Ragmem-Namespace and tokens; the error wraps ErrBadNamespace. The
// empty name (the default namespace) is not a name and fails.
func CheckNamespace(ns string) error {
	if !validNamespace(ns) {
		return fmt.Errorf("%w %q: %s", ErrBadNamespace, clip(ns, 80), namespaceRule)
	}
	return nil
}

package server

import (
	"context"
	"fmt"
	"net/http"

	"github.com/ragmem/ragmem/rag"
)

// deleteSources answers POST /v1/sources:delete.
func deleteSources(r *http.Request, mem rag.Memory, req rag.DeleteSourcesRequest) (*rag.DeleteSourcesJSON, error) {
	out, err := mem.DeleteSources(r.Context(), req)
	if err != nil {
		return nil, err
	}
	for i := range out.KeptSources {
		si := &out.KeptSources[i]
		si.URL = publicURL(si.URL, si.DocType, IsLocal(r))
	}
	return out, nil
}

// patchSource answers PATCH /v1/sources?url=: it changes a source's
// attributes without embedding it again.
func patchSource(r *http.Request, mem rag.Memory, req rag.SetAttrsRequest) (*rag.SetAttrsJSON, error) {
	return mem.SetSourceAttrs(r.Context(), r.URL.Query().Get("url"), req)
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

package server

import (
	"context"
	"fmt"
	"net/http"

	"github.com/ragmem/ragmem/rag"
)

// attrsPatch is the request of PATCH /v1/sources?url=: the source and the
// JSON merge patch of its attributes.
type attrsPatch struct {
	url string
	req rag.SetAttrsRequest
}

// readAttrsPatch reads PATCH /v1/sources?url=.
func readAttrsPatch(r *http.Request) (attrsPatch, *apiError) {
	req, e := body[rag.SetAttrsRequest](r)
	return attrsPatch{url: r.URL.Query().Get("url"), req: req}, e
}

// setSourceAttrs changes a source's attributes without embedding it
// again.
func setSourceAttrs(mem rag.Memory, ctx context.Context, p attrsPatch) (*rag.SetAttrsJSON, error) {
	return mem.SetSourceAttrs(ctx, p.url, p.req)
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

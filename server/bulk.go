package server

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"

	"github.com/ragmem/ragmem/rag"
)

// DeleteSourcesRequest is the body of POST /v1/sources:delete: remove every
// knowledge source that passes Filter (the filter language of search's
// "filter"). A Filter that matches every knowledge source (an empty one
// does) needs All. With
// DryRun nothing is removed: the answer lists what would be. It is a plain
// value.
type DeleteSourcesRequest struct {
	Filter string `json:"filter"`
	All    bool   `json:"all,omitempty"`
	DryRun bool   `json:"dryRun,omitempty"`
}

// DeleteSourcesJSON answers POST /v1/sources:delete. Sources are those
// removed (or that would be, in a dry run), ordered by URL; Kept counts
// the sources of the memory and preference stores that passed the filter
// and were left alone. It is a plain value.
type DeleteSourcesJSON struct {
	DryRun  bool             `json:"dryRun"`
	Removed int              `json:"removed"` // sources
	Chunks  int              `json:"chunks"`
	Kept    int              `json:"kept"`
	Sources []rag.SourceJSON `json:"sources"`
	// KeptSources are the sources Kept counts.
	KeptSources []rag.SourceJSON `json:"keptSources,omitempty"`
}

// SetAttrsRequest is the body of PATCH /v1/sources?url=: a JSON merge patch
// of the source's attributes (a string sets a key, null removes it). It is
// a plain value.
type SetAttrsRequest struct {
	Attrs map[string]*string `json:"attrs"`
}

// SetAttrsJSON answers PATCH /v1/sources. It is a plain value.
type SetAttrsJSON struct {
	URL     string `json:"url"`
	Changed int    `json:"changed"` // chunks whose attributes changed
}

// SplitAttrsPatch turns a merge patch of attributes into the keys to set
// and those to remove (sorted), for rag.Engine.SetAttrs.
func SplitAttrsPatch(p map[string]*string) (set map[string]string, unset []string) {
	for _, k := range slices.Sorted(maps.Keys(p)) {
		if p[k] == nil {
			unset = append(unset, k)
			continue
		}
		if set == nil {
			set = map[string]string{}
		}
		set[k] = *p[k]
	}
	return set, unset
}

func (s *Server) bulkRoutes() {
	s.mustHandle("POST /v1/sources:delete", s.deleteSources, true)
	s.mustHandle("PATCH /v1/sources", s.patchSource, true)
}

// deleteSources answers POST /v1/sources:delete.
func (s *Server) deleteSources(w http.ResponseWriter, r *http.Request) {
	var req DeleteSourcesRequest
	if e := decodeJSON(r, &req); e != nil {
		writeAPIError(w, r, e)
		return
	}
	where, e := parseFilter("filter", req.Filter)
	if e != nil {
		writeAPIError(w, r, e)
		return
	}
	if where == nil && !req.All {
		writeAPIError(w, r, badRequest("filter is empty, which matches every source: send \"all\": true to remove them all"))
		return
	}
	eng := s.engine(w, r)
	if eng == nil {
		return
	}
	res, err := eng.RemoveWhere(r.Context(), where, req.All, req.DryRun)
	if errors.Is(err, rag.ErrMatchesAll) {
		writeAPIError(w, r, badRequest("the filter matches every source: send \"all\": true to remove them all"))
		return
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	now := s.o.Now()
	out := DeleteSourcesJSON{DryRun: req.DryRun, Removed: len(res.Sources), Chunks: res.Chunks, Kept: len(res.Kept), Sources: make([]rag.SourceJSON, 0, len(res.Sources))}
	for _, si := range res.Sources {
		out.Sources = append(out.Sources, rag.NewSourceJSON(&si, now))
	}
	for _, si := range res.Kept {
		si.SourceURL = publicURL(si.SourceURL, si.DocType, IsLocal(r))
		out.KeptSources = append(out.KeptSources, rag.NewSourceJSON(&si, now))
	}
	writeJSON(w, http.StatusOK, out)
}

// patchSource answers PATCH /v1/sources?url=: it changes a source's
// attributes without embedding it again.
func (s *Server) patchSource(w http.ResponseWriter, r *http.Request) {
	u, e := checkSourceName("url", r.URL.Query().Get("url"))
	if e != nil {
		writeAPIError(w, r, e)
		return
	}
	var req SetAttrsRequest
	if e := decodeJSON(r, &req); e != nil {
		writeAPIError(w, r, e)
		return
	}
	if len(req.Attrs) == 0 {
		writeAPIError(w, r, badRequest("attrs is empty: give the attributes to set (a string) or remove (null)"))
		return
	}
	set, unset := SplitAttrsPatch(req.Attrs)
	eng := s.engine(w, r)
	if eng == nil {
		return
	}
	n, err := eng.SetAttrs(r.Context(), u, set, unset)
	switch {
	case errors.Is(err, rag.ErrNotFound):
		WriteError(w, r, http.StatusNotFound, CodeNotFound, fmt.Sprintf("no source %s in the memory", clip(u, 200)))
		return
	case errors.Is(err, rag.ErrBadAttrs):
		writeAPIError(w, r, badRequest("attrs: %s", clientMessage(err, rag.ErrBadAttrs)))
		return
	case err != nil:
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, SetAttrsJSON{URL: u, Changed: n})
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

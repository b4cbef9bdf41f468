package rag

import (
	"context"
	"errors"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/ragmem/ragmem/index"

	"github.com/ragmem/ragmem/internal/jsonbody"
)

// DeleteSourcesRequest is the body of POST /v1/sources:delete: remove every
// knowledge source that passes Filter (the filter language of search's
// "filter"). A Filter that matches every knowledge source (an empty one
// does) needs All. With
// DryRun nothing is removed: the answer lists what would be.
type DeleteSourcesRequest struct {
	Filter string `json:"filter"`
	All    bool   `json:"all,omitempty"`
	DryRun bool   `json:"dryRun,omitempty"`
}

// DeleteSourcesJSON answers POST /v1/sources:delete. Sources are those
// removed (or that would be, in a dry run), ordered by URL; Kept counts
// the sources of the memory and preference stores that passed the filter
// and were left alone.
type DeleteSourcesJSON struct {
	DryRun  bool         `json:"dryRun"`
	Removed int          `json:"removed"` // sources
	Chunks  int          `json:"chunks"`
	Kept    int          `json:"kept"`
	Sources []SourceJSON `json:"sources"`
	// KeptSources are the sources Kept counts.
	KeptSources []SourceJSON `json:"keptSources,omitempty"`
}

// SetAttrsRequest is the body of PATCH /v1/sources?url=: a JSON merge patch
// of the source's attributes (a string sets a key, null removes it).
type SetAttrsRequest struct {
	Attrs map[string]*string `json:"attrs"`
}

// SetAttrsJSON answers PATCH /v1/sources.
type SetAttrsJSON struct {
	URL     string `json:"url"`
	Changed int    `json:"changed"` // chunks whose attributes changed
}

// splitAttrsPatch turns a merge patch of attributes into the keys to set
// and those to remove (sorted), for Engine.SetAttrs.
func splitAttrsPatch(p map[string]*string) (set map[string]string, unset []string) {
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

// DeleteSources removes every knowledge source a filter matches (see
// Memory).
func (e *Engine) DeleteSources(ctx context.Context, req DeleteSourcesRequest) (*DeleteSourcesJSON, error) {
	var where *index.Expr
	if strings.TrimSpace(req.Filter) != "" {
		var err error
		if where, err = index.ParseFilter(req.Filter); err != nil {
			return nil, badRequest("filter: %s", ClientMessage(err, index.ErrBadFilter))
		}
	}
	if where == nil && !req.All {
		return nil, &Error{Code: jsonbody.CodeMatchesAll, Message: "filter is empty, which matches every source: send \"all\": true to remove them all", Err: ErrMatchesAll}
	}
	res, err := e.RemoveWhere(ctx, where, req.All, req.DryRun)
	if errors.Is(err, ErrMatchesAll) {
		return nil, &Error{Code: jsonbody.CodeMatchesAll, Message: "the filter matches every source: send \"all\": true to remove them all", Err: err}
	}
	if err != nil {
		return nil, apiError(err)
	}
	now := e.now()
	out := &DeleteSourcesJSON{DryRun: req.DryRun, Removed: len(res.Sources), Chunks: res.Chunks, Kept: len(res.Kept), Sources: make([]SourceJSON, 0, len(res.Sources))}
	for i := range res.Sources {
		out.Sources = append(out.Sources, newSourceJSON(&res.Sources[i], now))
	}
	for i := range res.Kept {
		out.KeptSources = append(out.KeptSources, newSourceJSON(&res.Kept[i], now))
	}
	return out, nil
}

// SetSourceAttrs changes a source's attributes without embedding it again
// (see Memory).
func (e *Engine) SetSourceAttrs(ctx context.Context, sourceURL string, req SetAttrsRequest) (*SetAttrsJSON, error) {
	if err := checkSourceName("url", sourceURL); err != nil {
		return nil, err
	}
	if len(req.Attrs) == 0 {
		return nil, badRequest("attrs is empty: give the attributes to set (a string) or remove (null)")
	}
	u := strings.TrimSpace(sourceURL)
	set, unset := splitAttrsPatch(req.Attrs)
	n, err := e.SetAttrs(ctx, u, set, unset)
	switch {
	case errors.Is(err, ErrNotFound):
		return nil, notFound("no source %s in the memory", clipURL(u))
	case errors.Is(err, index.ErrBadAttrs):
		return nil, badRequest("attrs: %s", ClientMessage(err, index.ErrBadAttrs))
	case err != nil:
		return nil, apiError(err)
	}
	return &SetAttrsJSON{URL: u, Changed: n}, nil
}

// DeleteSources removes the sources a filter matches (see Memory).
func (c *Client) DeleteSources(ctx context.Context, req DeleteSourcesRequest) (*DeleteSourcesJSON, error) {
	var out DeleteSourcesJSON
	if err := c.Do(ctx, http.MethodPost, "/v1/sources:delete", req, &out, c.o.WriteTimeout); err != nil {
		return nil, err
	}
	return &out, nil
}

// SetSourceAttrs changes a source's attributes (see Memory).
func (c *Client) SetSourceAttrs(ctx context.Context, sourceURL string, req SetAttrsRequest) (*SetAttrsJSON, error) {
	var out SetAttrsJSON
	if err := c.Do(ctx, http.MethodPatch, "/v1/sources?url="+url.QueryEscape(sourceURL), req, &out, 0); err != nil {
		return nil, err
	}
	return &out, nil
}

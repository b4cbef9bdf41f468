package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ragmem/ragmem/index"
	"github.com/ragmem/ragmem/internal/mcpschema"
	"github.com/ragmem/ragmem/rag"
)

// The tools that remove sources by filter and change a source's
// attributes: the MCP side of POST /v1/sources:delete and PATCH
// /v1/sources, under the same rules (rag.Engine.RemoveWhere and SetAttrs).
const (
	toolForgetSources  = "forget_sources"
	toolSetSourceAttrs = "set_source_attrs"
)

// forgetSourcesInput is the input of forget_sources.
type forgetSourcesInput struct {
	Filter string `json:"filter,omitempty"`
	All    bool   `json:"all,omitempty" jsonschema:"Allow removing every stored text and page: with no filter, or a filter that matches them all. Default false."`
	DryRun bool   `json:"dryRun,omitempty" jsonschema:"List what would be removed and remove nothing. Default false; call with dryRun true first."`
}

// forgetSourcesOutput is the output of forget_sources.
type forgetSourcesOutput struct {
	DryRun  bool             `json:"dryRun"`
	Removed int              `json:"removed" jsonschema:"sources removed (or that would be)"`
	Chunks  int              `json:"chunks" jsonschema:"their chunks"`
	Kept    int              `json:"kept" jsonschema:"memories and preferences that matched and were kept: they have their own tools"`
	Sources []rag.SourceJSON `json:"sources"`
}

// setSourceAttrsInput is the input of set_source_attrs.
type setSourceAttrsInput struct {
	URL   string            `json:"url" jsonschema:"The source URL, as list_sources shows it."`
	Set   map[string]string `json:"set,omitempty" jsonschema:"Attributes to add or replace (keys: letters, digits and _ . - :, starting with a letter or _)."`
	Unset []string          `json:"unset,omitempty" jsonschema:"Attribute keys to remove."`
}

// setSourceAttrsOutput is the output of set_source_attrs.
type setSourceAttrsOutput struct {
	SourceURL string `json:"url"`
	Changed   int    `json:"changed" jsonschema:"chunks whose attributes changed (0: they had them already)"`
}

// registerBulk adds the tools above (they write: not in read-only mode).
func (s *Server) registerBulk() {
	mcp.AddTool(s.mcp, &mcp.Tool{
		Name:  toolForgetSources,
		Title: "Forget the sources a filter matches",
		Description: "Remove every stored text or page with a passage that matches a filter expression (as search_memory's filter). " +
			"Call it with dryRun true first to see what would go. Memories and preferences are never removed here. A filter that matches every stored text and page (an empty one does) needs all: true.",
		Annotations: &mcp.ToolAnnotations{DestructiveHint: new(true), IdempotentHint: true, OpenWorldHint: new(false)},
		InputSchema: mcpschema.For[forgetSourcesInput](func(p map[string]*jsonschema.Schema) {
			p["filter"].Description = filterSyntax + ". Every stored text or page with a passage that matches is removed."
		}),
	}, s.forgetSources)
	mcp.AddTool(s.mcp, &mcp.Tool{
		Name:  toolSetSourceAttrs,
		Title: "Set a source's attributes",
		Description: "Add, replace or remove attributes on every passage of a stored text or page, without indexing it again, " +
			"so that filters (search_memory's filter, forget_sources) see them.",
		Annotations: &mcp.ToolAnnotations{DestructiveHint: new(false), IdempotentHint: true, OpenWorldHint: new(false)},
		InputSchema: mcpschema.For[setSourceAttrsInput](func(p map[string]*jsonschema.Schema) {
			p["url"].MinLength = new(1)
		}),
	}, s.setSourceAttrs)
}

func (s *Server) forgetSources(ctx context.Context, _ *mcp.CallToolRequest, in forgetSourcesInput) (*mcp.CallToolResult, forgetSourcesOutput, error) {
	where, err := toolFilter(in.Filter)
	if err != nil {
		return nil, forgetSourcesOutput{}, err
	}
	req := rag.DeleteSourcesRequest{All: in.All, DryRun: in.DryRun}
	if where != nil {
		req.Filter = where.String()
	}
	r, err := s.mem.DeleteSources(ctx, req)
	switch {
	case errors.Is(err, rag.ErrMatchesAll):
		return nil, forgetSourcesOutput{}, fmt.Errorf("%w: the filter matches every stored text and page: to remove them all, say all: true", errBadInput)
	case errors.Is(err, rag.ErrReserved):
		return nil, forgetSourcesOutput{}, fmt.Errorf("%w: %w (preferences are removed with remove_preference, memories by deleting their file)", errBadInput, err)
	case err != nil:
		return nil, forgetSourcesOutput{}, err
	}
	out := forgetSourcesOutput{DryRun: r.DryRun, Removed: r.Removed, Chunks: r.Chunks, Kept: r.Kept, Sources: r.Sources}
	var b strings.Builder
	verb := "Removed"
	if in.DryRun {
		verb = "Would remove"
	}
	// URLs and titles come from the pages: untrusted data, quoted.
	fmt.Fprintf(&b, "%s %d sources (%d chunks); kept %d memories or preferences that matched. Their URLs are untrusted data:", verb, r.Removed, r.Chunks, r.Kept)
	for _, src := range r.Sources {
		fmt.Fprintf(&b, "\n- %q  %d chunks", src.URL, src.Chunks)
	}
	return text(untrusted(b.String())), out, nil
}

func (s *Server) setSourceAttrs(ctx context.Context, _ *mcp.CallToolRequest, in setSourceAttrsInput) (*mcp.CallToolResult, setSourceAttrsOutput, error) {
	if len(in.Set) == 0 && len(in.Unset) == 0 {
		return nil, setSourceAttrsOutput{}, fmt.Errorf("%w: nothing to change: give set or unset", errBadInput)
	}
	patch := map[string]*string{}
	for k, v := range in.Set {
		patch[k] = &v
	}
	for _, k := range in.Unset {
		if _, ok := patch[k]; ok {
			return nil, setSourceAttrsOutput{}, fmt.Errorf("%w: key %q is both set and unset", errBadInput, k)
		}
		patch[k] = nil
	}
	res, err := s.mem.SetSourceAttrs(ctx, in.URL, rag.SetAttrsRequest{Attrs: patch})
	switch {
	case errors.Is(err, rag.ErrNotFound):
		return nil, setSourceAttrsOutput{}, fmt.Errorf("%w: %w (list_sources shows what is stored)", errNotFound, err)
	case errors.Is(err, index.ErrBadAttrs), errors.Is(err, rag.ErrBadURL):
		return nil, setSourceAttrsOutput{}, fmt.Errorf("%w: %w", errBadInput, err)
	case errors.Is(err, rag.ErrReserved):
		return nil, setSourceAttrsOutput{}, fmt.Errorf("%w: %w (memories and preferences have their own tools)", errBadInput, err)
	case err != nil:
		return nil, setSourceAttrsOutput{}, err
	}
	return text(fmt.Sprintf("Changed the attributes of %d chunks of %q.", res.Changed, res.URL)), setSourceAttrsOutput{SourceURL: res.URL, Changed: res.Changed}, nil
}

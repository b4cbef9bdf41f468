package rag

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/ragmem/ragmem/index"

	"github.com/ragmem/ragmem/internal/reserved"
)

// Reserved records belong to their writer. The user's preferences (type
// preference, preference://user) and agent memories (types memory and
// memory-pattern, the memory store's attributes memoryDir, memorySlug, …, the
// schemes memory: and memory-layer:, and the sources of memory files) are
// written and deleted only by the preference and memory stores
// (prefs.Store, memory.Store), which write through the index
// (Engine.Store). The engine writes knowledge: Index, IndexMany,
// IndexPage, IndexPageAsync, Remove and ForgetPage refuse the rest with
// ErrReserved, so that every surface built on the engine (the HTTP API, the
// MCP tools, the Go adapters, the CLI, a running owner's clients) refuses
// them by the same code. The index adds the one rule that needs the store's
// state at write time: a document of another type never replaces a
// reserved source (engine.ErrReserved).

// checkWritable refuses a document the engine does not write: a type other
// than knowledge, an attribute of the memory store, or a reserved URL
// scheme. It reads nothing.
func checkWritable(d *index.Document) error {
	if t := strings.TrimSpace(d.DocType); t != "" && t != index.DocKnowledge {
		if reserved.DocType(t) {
			return fmt.Errorf("%w: documents of type %q are %s", ErrReserved, t, reserved.Owner(t))
		}
		return fmt.Errorf("%w: the type %q is not one the engine writes (knowledge); memories and preferences have their own APIs", ErrReserved, clipURL(t))
	}
	for _, k := range slices.Sorted(maps.Keys(d.Attrs)) {
		if reserved.Attr(k) {
			return fmt.Errorf("%w: the attribute %q belongs to %s", ErrReserved, clipURL(k), reserved.Owner(k))
		}
	}
	return reservedScheme(d.SourceURL)
}

// reservedScheme refuses a URL with a reserved scheme: "the URL scheme
// "memory" is reserved for memories, …".
func reservedScheme(u string) error {
	s := reserved.Scheme(u)
	if s == "" {
		return nil
	}
	u = strings.TrimSpace(u)
	return fmt.Errorf("%w: the URL scheme %q is reserved for %s", ErrReserved, u[:len(s)], reserved.Owner(s))
}

// checkRemovable refuses to remove a source of the memory or preference
// store: a reserved URL scheme, or a stored source of a reserved type.
func (e *Engine) checkRemovable(ctx context.Context, u string) error {
	if s := reserved.Scheme(u); s != "" {
		return fmt.Errorf("%w: %s is a source of %s", ErrReserved, clipURL(strings.TrimSpace(u)), reserved.Owner(s))
	}
	t, err := e.ix.ReservedSource(ctx, u)
	if err != nil {
		return err
	}
	if t != "" {
		return fmt.Errorf("%w: %s is a %s source, not a page or a document: it belongs to %s", ErrReserved, clipURL(strings.TrimSpace(u)), t, reserved.Owner(t))
	}
	return nil
}

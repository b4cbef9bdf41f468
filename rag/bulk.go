package rag

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/ragmem/ragmem/index"
	"github.com/ragmem/ragmem/internal/index/engine"
	"github.com/ragmem/ragmem/internal/reserved"
)

// ErrMatchesAll is returned by RemoveWhere for a filter that matches every
// knowledge source in the store (a nil one among them) when the caller did
// not say all: removing everything must be asked for by name.
var ErrMatchesAll = errors.New("rag: the filter matches every source; say all to remove them all")

// RemoveWhere removes every knowledge source whose records pass where (the
// filter language of ParseFilter). Sources of the memory and preference
// stores that pass it are never removed: they are reported in Kept, and a
// filter that matches only such sources is refused with ErrReserved, as
// Remove refuses one. A filter that matches every knowledge source (nil
// does) is refused with ErrMatchesAll unless all is set. With dryRun
// nothing is removed and the answer lists what would be; a dry run is
// refused exactly when the removal would be. Each source is removed whole
// or not at all, durably (engine.Index.RemoveWhere).
func (e *Engine) RemoveWhere(ctx context.Context, where *index.Expr, all, dryRun bool) (index.WhereRemoval, error) {
	if where == nil && !all {
		return index.WhereRemoval{}, ErrMatchesAll
	}
	guard := func(remove, kept []index.SourceInfo) error {
		if len(remove) == 0 && len(kept) > 0 {
			k := kept[0]
			return fmt.Errorf("%w: the filter matches only sources of the memory or preference store (%d, e.g. %s, a %s source); they belong to %s",
				ErrReserved, len(kept), clipURL(k.SourceURL), k.DocType, reserved.Owner(k.DocType))
		}
		if all || len(remove) == 0 {
			return nil
		}
		every, _, err := e.ix.Sources(ctx, index.Filter{}, 0, 0)
		if err != nil {
			return err
		}
		n := 0
		for i := range every {
			if !engine.ReservedInfo(&every[i]) {
				n++
			}
		}
		if len(remove) >= n {
			return fmt.Errorf("%w (%d)", ErrMatchesAll, n)
		}
		return nil
	}
	r, err := e.ix.RemoveWhere(ctx, index.Filter{Where: where}, dryRun, guard)
	if !dryRun {
		e.cal.Changed(r.Chunks)
	}
	return r, err
}

// SetAttrs changes a knowledge source's attributes without embedding it
// again (engine.Index.SetSourceAttrs): set adds or replaces keys, unset
// removes them. It returns how many chunks changed. A source of the memory
// or preference store, or a key of theirs, is refused with ErrReserved; an
// unknown source with ErrNotFound; bad attributes with ErrBadAttrs.
func (e *Engine) SetAttrs(ctx context.Context, sourceURL string, set map[string]string, unset []string) (int, error) {
	if strings.TrimSpace(sourceURL) == "" {
		return 0, fmt.Errorf("%w: no source URL", ErrBadURL)
	}
	keys := append(slices.Sorted(maps.Keys(set)), unset...)
	for _, k := range keys {
		if reserved.Attr(k) {
			return 0, fmt.Errorf("%w: the attribute %q belongs to %s", ErrReserved, clipURL(k), reserved.Owner(k))
		}
	}
	if err := e.checkRemovable(ctx, sourceURL); err != nil {
		return 0, err
	}
	n, err := e.ix.SetSourceAttrs(ctx, sourceURL, set, unset)
	if errors.Is(err, engine.ErrNotFound) {
		err = fmt.Errorf("%w: %w", ErrNotFound, err)
	}
	return n, err
}

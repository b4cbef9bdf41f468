package engine

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/ragmem/ragmem/index"
	"github.com/ragmem/ragmem/index/driver"

	"github.com/ragmem/ragmem/internal/reserved"
)

// removeBatchSources is how many sources RemoveWhere deletes in one atomic
// batch: each batch is one journal entry, so a crash leaves every source
// either whole or gone, and a long removal does not build one huge entry.
const removeBatchSources = 64

// ReservedInfo reports whether a listed source belongs to the memory or
// preference store: a reserved document type or URL scheme.
func ReservedInfo(s *index.SourceInfo) bool {
	return reserved.DocType(s.DocType) || reserved.Scheme(s.SourceURL) != ""
}

// RemoveWhere removes every source that passes f, except the reserved ones
// (ReservedInfo), which it reports in Kept. With dryRun it removes nothing
// and reports what it would remove. guard, if not nil, sees what would be
// removed and kept before anything is, and its error stops the call with
// nothing removed (also in a dry run). The listing and the removal are
// made under the commit lock, so what is reported is what was removed: no
// write lands between them. Sources are deleted in atomic batches of
// removeBatchSources (each one journal entry), and their queued
// background jobs are cancelled first, as RemoveSource does; after a
// crash each source is either all there or gone.
func (ix *Index) RemoveWhere(ctx context.Context, f index.Filter, dryRun bool, guard func(remove, kept []index.SourceInfo) error) (index.WhereRemoval, error) {
	var out index.WhereRemoval
	if ix.closed.Load() {
		return out, ErrClosed
	}
	if !dryRun {
		ix.commitMu.Lock()
		defer ix.commitMu.Unlock()
	}
	srcs, _, err := ix.Sources(ctx, f, 0, 0)
	if err != nil {
		return out, err
	}
	for _, s := range srcs {
		if ReservedInfo(&s) {
			out.Kept = append(out.Kept, s)
			continue
		}
		out.Sources = append(out.Sources, s)
		out.Chunks += s.Chunks
	}
	if guard != nil {
		if err := guard(out.Sources, out.Kept); err != nil {
			return index.WhereRemoval{}, err
		}
	}
	if dryRun || len(out.Sources) == 0 {
		return out, nil
	}
	for start := 0; start < len(out.Sources); start += removeBatchSources {
		if err := ctx.Err(); err != nil {
			return upTo(out, start), err
		}
		part := out.Sources[start:min(start+removeBatchSources, len(out.Sources))]
		urls := make([]string, len(part))
		for i, s := range part {
			urls[i] = s.SourceURL
			ids, err := ix.cancelSource(s.SourceURL)
			if err != nil {
				return upTo(out, start), err
			}
			out.Cancelled = append(out.Cancelled, ids...)
		}
		if err := ix.be.Apply(ctx, &driver.Batch{DeleteSources: urls}); err != nil {
			return upTo(out, start), err
		}
	}
	return out, nil
}

// upTo is r cut to its first n sources: what was removed before an error.
func upTo(r index.WhereRemoval, n int) index.WhereRemoval {
	r.Sources = r.Sources[:n]
	r.Chunks = 0
	for _, s := range r.Sources {
		r.Chunks += s.Chunks
	}
	return r
}

// SetSourceAttrs changes the attributes of every chunk of a source without
// embedding anything again: set adds or replaces keys, unset removes keys
// (a key in both is an error). The chunks keep their ids, text, vectors
// and content hash, so indexing the same document again still finds it
// unchanged and keeps the attributes set here; a changed document replaces
// them with its own. The new chunks are written in one atomic batch. It
// returns the number of chunks changed, ErrNotFound (wrapped) when the
// store holds no such source. The attributes are checked with CheckAttrs
// once applied; a reserved attribute key or source is the caller's to
// refuse (see rag.Engine.SetAttrs).
func (ix *Index) SetSourceAttrs(ctx context.Context, sourceURL string, set map[string]string, unset []string) (int, error) {
	if ix.closed.Load() {
		return 0, ErrClosed
	}
	for _, k := range unset {
		if _, ok := set[k]; ok {
			return 0, fmt.Errorf("%w: key %q is both set and removed", index.ErrBadAttrs, clip(k))
		}
	}
	ix.commitMu.Lock()
	defer ix.commitMu.Unlock()
	u := ix.CanonicalURL(sourceURL)
	recs, err := ix.be.Records(ctx, index.Filter{SourceURL: u})
	if err == nil && len(recs) == 0 && u != strings.TrimSpace(sourceURL) {
		u = strings.TrimSpace(sourceURL) // stored before canonicalisation
		recs, err = ix.be.Records(ctx, index.Filter{SourceURL: u})
	}
	if err != nil {
		return 0, err
	}
	if len(recs) == 0 {
		return 0, fmt.Errorf("%w: no source %s", ErrNotFound, clip(sourceURL))
	}
	// Every chunk of a source carries the source's attributes: the first
	// one's are the source's.
	attrs := cloneAttrs(recs[0].Attrs)
	if attrs == nil {
		attrs = map[string]string{}
	}
	maps.Copy(attrs, set)
	for _, k := range unset {
		delete(attrs, k)
	}
	if err := index.CheckAttrs(attrs); err != nil {
		return 0, err
	}
	if len(attrs) == 0 {
		attrs = nil
	}
	changed := 0
	for i := range recs {
		if !maps.Equal(recs[i].Attrs, attrs) {
			changed++
		}
		recs[i].Attrs = cloneAttrs(attrs)
	}
	if changed == 0 {
		return 0, nil
	}
	slices.SortFunc(recs, func(a, b index.Record) int { return a.Position - b.Position })
	if err := ix.be.Apply(ctx, &driver.Batch{Put: recs}); err != nil {
		return 0, err
	}
	return changed, nil
}

// clip shortens s to at most 80 bytes (on a rune boundary) for an error
// message.
func clip(s string) string {
	if len(s) <= 80 {
		return s
	}
	n := 80
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

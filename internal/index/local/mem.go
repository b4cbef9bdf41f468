package local

import (
	"fmt"
	"slices"
	"sort"

	"github.com/ragmem/ragmem/index"
	"github.com/ragmem/ragmem/index/driver"
)

// The in-memory side of the store: records by id, by source and by type.

// putMem stores r in the in-memory maps (not the vector index).
func (b *Backend) putMem(r *index.Record) {
	if old, ok := b.records[r.ID]; ok {
		b.unindex(old)
	}
	b.records[r.ID] = r
	addTo(b.bySource, r.SourceURL, r.ID)
	addTo(b.byType, r.DocType, r.ID)
	if b.dim == 0 && len(r.Vector) > 0 {
		b.dim = len(r.Vector)
	}
}

// presize sizes the empty in-memory maps for recs, so that loading a
// snapshot rehashes none of them as it grows.
func (b *Backend) presize(recs []index.Record) {
	b.records = make(map[string]*index.Record, len(recs))
	b.bySource = make(map[string]map[string]struct{}, len(recs))
	types := map[string]int{}
	for i := range recs {
		types[recs[i].DocType]++
	}
	b.byType = make(map[string]map[string]struct{}, len(types))
	for t, n := range types {
		b.byType[t] = make(map[string]struct{}, n)
	}
}

func addTo(m map[string]map[string]struct{}, key, id string) {
	s := m[key]
	if s == nil {
		s = map[string]struct{}{}
		m[key] = s
	}
	s[id] = struct{}{}
}

func removeFrom(m map[string]map[string]struct{}, key, id string) {
	if s := m[key]; s != nil {
		delete(s, id)
		if len(s) == 0 {
			delete(m, key)
		}
	}
}

// unindex removes r from the by-source and by-type sets.
func (b *Backend) unindex(r *index.Record) {
	removeFrom(b.bySource, r.SourceURL, r.ID)
	removeFrom(b.byType, r.DocType, r.ID)
}

func (b *Backend) deleteMem(id string) {
	if r, ok := b.records[id]; ok {
		b.unindex(r)
		delete(b.records, id)
	}
}

// candidates returns the sets of ids a filter can match, from the narrowest
// index that covers it (one source, or the named document types), or all
// true when every record must be examined.
func (b *Backend) candidates(f index.Filter) (sets []map[string]struct{}, all bool) {
	switch {
	case f.SourceURL != "":
		return []map[string]struct{}{b.bySource[f.SourceURL]}, false
	case len(f.DocTypes) > 0:
		// A record has one type, so the sets of different types are disjoint.
		for i, t := range f.DocTypes {
			if s := b.byType[t]; s != nil && !slices.Contains(f.DocTypes[:i], t) {
				sets = append(sets, s)
			}
		}
		return sets, false
	}
	return nil, true
}

// plan resolves a batch against the current records: the ids it deletes.
func (b *Backend) plan(bt *driver.Batch) []string {
	var del []string
	seen := map[string]bool{}
	for _, s := range bt.DeleteSources {
		for id := range b.bySource[s] {
			if !seen[id] {
				seen[id] = true
				del = append(del, id)
			}
		}
	}
	for _, id := range bt.DeleteIDs {
		if _, ok := b.records[id]; ok && !seen[id] {
			seen[id] = true
			del = append(del, id)
		}
	}
	sort.Strings(del)
	return del
}

// applyMem applies an operation to the in-memory maps only (used on replay,
// before the vector index exists), noting the ids it touches.
func (b *Backend) applyMem(o *batchOp) {
	if o.Meta != nil {
		for k, v := range o.Meta {
			b.meta[k] = v
		}
		return
	}
	for _, id := range b.plan(&o.Batch) {
		b.deleteMem(id)
		b.touch(id)
	}
	for i := range o.Batch.Put {
		r := o.Batch.Put[i]
		r.Vector = unitVector(r.Vector) // journals of older versions may hold others
		b.putMem(&r)
		b.touch(r.ID)
	}
}

func (b *Backend) touch(id string) {
	if b.replayTouched != nil {
		b.replayTouched[id] = struct{}{}
	}
}

// validate checks a batch against the vector dimension dim (0: not yet
// known) and returns the dimension the store has after it.
func validate(bt *driver.Batch, dim int) (int, error) {
	seen := make(map[string]bool, len(bt.Put))
	for i := range bt.Put {
		r := &bt.Put[i]
		switch {
		case r.ID == "":
			return dim, fmt.Errorf("%w: record %d has no id", driver.ErrInvalid, i)
		case seen[r.ID]:
			return dim, fmt.Errorf("%w: id %q appears twice in one batch", driver.ErrInvalid, r.ID)
		case r.SourceURL == "":
			return dim, fmt.Errorf("%w: record %q has no source URL", driver.ErrInvalid, r.ID)
		case len(r.Vector) == 0:
			return dim, fmt.Errorf("%w: record %q has no vector", driver.ErrInvalid, r.ID)
		}
		seen[r.ID] = true
		if dim == 0 {
			dim = len(r.Vector)
		}
		if len(r.Vector) != dim {
			return dim, fmt.Errorf("%w: record %q has a %d-dimensional vector, the store holds %d-dimensional ones", driver.ErrInvalid, r.ID, len(r.Vector), dim)
		}
		for _, f := range r.Vector {
			if f != f || f > 1e30 || f < -1e30 {
				return dim, fmt.Errorf("%w: record %q has a non-finite vector", driver.ErrInvalid, r.ID)
			}
		}
	}
	return dim, nil
}

package local

import (
	"context"
	"fmt"
	"sort"
)

// Problem is one inconsistency found by Check.
type Problem struct {
	Kind string // "bleve-missing", "bleve-extra", "vector-missing", "vector-extra", "sequence"
	ID   string // the chunk id concerned, if any
	Msg  string
}

func (p Problem) String() string {
	if p.ID != "" {
		return fmt.Sprintf("%s %s: %s", p.Kind, p.ID, p.Msg)
	}
	return p.Kind + ": " + p.Msg
}

// Check verifies that bleve and the vector collection hold exactly the
// records, and that bleve has applied the current sequence. It reads only.
func (b *Backend) Check(ctx context.Context) ([]Problem, error) {
	b.wmu.Lock() // a stable view: no mutation in flight
	defer b.wmu.Unlock()
	if err := b.readableLocked(); err != nil {
		return nil, err
	}
	var probs []Problem
	have, err := b.bleveIDs(ctx)
	if err != nil {
		return nil, fmt.Errorf("index: list full-text documents: %w", err)
	}
	b.mu.RLock()
	defer b.mu.RUnlock()
	for id := range b.records {
		if _, ok := have[id]; !ok {
			probs = append(probs, Problem{"bleve-missing", id, "chunk of " + b.records[id].SourceURL + " is not in the full-text index"})
		}
		if _, err := b.coll.GetByID(ctx, id); err != nil {
			probs = append(probs, Problem{"vector-missing", id, "chunk of " + b.records[id].SourceURL + " is not in the vector index"})
		}
	}
	for id := range have {
		if _, ok := b.records[id]; !ok {
			probs = append(probs, Problem{"bleve-extra", id, "full-text index holds a chunk the store does not"})
		}
	}
	if n := b.coll.Count(); n != len(b.records) {
		probs = append(probs, Problem{"vector-extra", "", fmt.Sprintf("vector index holds %d chunks, the store %d", n, len(b.records))})
	}
	if s, err := bleveSeq(b.bl); err != nil || s != b.seq {
		probs = append(probs, Problem{"sequence", "", fmt.Sprintf("full-text index is at sequence %d (%v), the journal at %d", s, err, b.seq)})
	}
	sort.Slice(probs, func(i, j int) bool {
		if probs[i].Kind != probs[j].Kind {
			return probs[i].Kind < probs[j].Kind
		}
		return probs[i].ID < probs[j].ID
	})
	return probs, nil
}

package local

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
	"sort"

	"github.com/ragmem/ragmem/index/driver"
)

// Problem is one inconsistency found by Check. It is a plain value.
type Problem struct {
	// Kind classifies the problem:
	//
	//	fulltext-missing  a chunk of the store is not in the full-text index
	//	fulltext-extra    the full-text index holds a chunk the store does not
	//	fulltext-stale    the full-text index holds another version of a chunk
	//	vector-missing    a chunk of the store is not in the vector index
	//	vector-extra      the vector index holds a chunk the store does not
	//	vector-stale      the vector index holds another version of a chunk
	//	mixed-version     a source's chunks come from different versions of it
	//	sequence          the full-text index has not applied the journal's last operation
	//	damaged, journal-tail, lost, fulltext-behind, fulltext-damaged,
	//	fulltext-format, fulltext-absent
	//	                  (read-only opens) what a normal open would repair or report
	Kind   string
	ID     string // the chunk concerned, if any
	Source string // its source URL, if known
	Msg    string
}

// Pending reports whether p is recovery that any normal open of the store
// does by itself, losing nothing acknowledged: cutting an unfinished
// journal write, or applying acknowledged journal operations to the
// full-text index. It is not an inconsistency.
func (p Problem) Pending() bool { return p.Kind == "journal-tail" || p.Kind == "fulltext-behind" }

func (p Problem) String() string {
	s := p.Kind
	if p.ID != "" {
		s += " " + p.ID
	}
	if p.Source != "" {
		s += " (" + p.Source + ")"
	}
	return s + ": " + p.Msg
}

// Check verifies the store: every record is in both indexes with the same
// source and the same content (by hash), neither index holds anything else,
// every source's chunks come from one version of it, and bleve has applied
// the journal's last operation. On a read-only store it also reports what a
// normal open would repair (a torn journal tail, damaged files, a full-text
// index behind the journal). It changes nothing.
func (b *Backend) Check(ctx context.Context) ([]Problem, error) {
	b.wmu.Lock() // a stable view: no mutation in flight
	defer b.wmu.Unlock()
	if err := b.readableLocked(); err != nil {
		return nil, err
	}
	probs := append([]Problem(nil), b.pendingFix...)
	fulltext, err := b.checkFullText(ctx)
	if err != nil {
		return nil, err
	}
	probs = append(probs, fulltext...)
	vectors, err := b.checkVectors(ctx)
	if err != nil {
		return nil, err
	}
	probs = append(probs, vectors...)
	probs = append(probs, b.checkVersions()...)
	probs = append(probs, b.checkFallbacks()...)
	sort.SliceStable(probs, func(i, j int) bool {
		if probs[i].Kind != probs[j].Kind {
			return probs[i].Kind < probs[j].Kind
		}
		return probs[i].ID < probs[j].ID
	})
	return probs, nil
}

// checkFallbacks reads the snapshots kept as fallbacks, which opening the
// store does not need to read, and reports those that are damaged.
func (b *Backend) checkFallbacks() []Problem {
	var probs []Problem
	snaps, err := listGenerations(b.fs, b.dir, snapPrefix, snapSuffix)
	if err != nil {
		return []Problem{{Kind: "damaged", Msg: fmt.Sprintf("the store directory is unreadable: %v", err)}}
	}
	for _, s := range snaps {
		name := snapName(s)
		if name == b.report.Snapshot {
			continue
		}
		if _, err := readSnapshot(b.fs, filepath.Join(b.dir, name)); err != nil {
			already := false
			for _, p := range b.pendingFix {
				already = already || p.ID == name
			}
			if !already {
				probs = append(probs, Problem{Kind: "damaged", ID: name, Msg: fmt.Sprintf("fallback snapshot %s is damaged (%v); --repair moves it to quarantine/", name, err)})
			}
		}
	}
	return probs
}

// fullTextComparable reports whether bleve can be compared chunk by chunk
// with the records: a read-only store whose bleve is behind or must be
// rebuilt has already reported that instead.
func (b *Backend) fullTextComparable() bool {
	if b.bl == nil {
		return false
	}
	for _, p := range b.pendingFix {
		switch p.Kind {
		case "fulltext-behind", "fulltext-format", "fulltext-damaged", "fulltext-absent", "lost":
			return false
		}
	}
	return true
}

func (b *Backend) checkFullText(ctx context.Context) ([]Problem, error) {
	if !b.fullTextComparable() {
		return nil, nil
	}
	var probs []Problem
	have, err := fullTextDocs(ctx, b.bl)
	if err != nil {
		return []Problem{{Kind: "fulltext-damaged", Msg: fmt.Sprintf("listing the full-text index failed: %v", err)}}, nil
	}
	b.mu.RLock()
	for id, r := range b.records {
		chk, ok := have[id]
		if !ok {
			probs = append(probs, Problem{Kind: "fulltext-missing", ID: id, Source: r.SourceURL, Msg: "chunk is not in the full-text index"})
			continue
		}
		hash, src := splitCheck(chk)
		switch {
		case src != r.SourceURL:
			probs = append(probs, Problem{Kind: "fulltext-stale", ID: id, Source: r.SourceURL, Msg: fmt.Sprintf("the full-text index files the chunk under source %q", src)})
		case hash != chunkHash(r):
			probs = append(probs, Problem{Kind: "fulltext-stale", ID: id, Source: r.SourceURL, Msg: "the full-text index holds another version of the chunk (content hash differs)"})
		}
	}
	for id, chk := range have {
		if _, ok := b.records[id]; !ok {
			_, src := splitCheck(chk)
			probs = append(probs, Problem{Kind: "fulltext-extra", ID: id, Source: src, Msg: "the full-text index holds a chunk the store does not"})
		}
	}
	b.mu.RUnlock()
	if s, err := bleveSeq(b.bl); err != nil || s != b.seq {
		probs = append(probs, Problem{Kind: "sequence", Msg: fmt.Sprintf("the full-text index is at sequence %d (%v), the journal at %d", s, err, b.seq)})
	}
	return probs, nil
}

func (b *Backend) checkVectors(ctx context.Context) ([]Problem, error) {
	var probs []Problem
	b.mu.RLock()
	defer b.mu.RUnlock()
	for id, r := range b.records {
		doc, err := b.coll.GetByID(ctx, id)
		if err != nil {
			probs = append(probs, Problem{Kind: "vector-missing", ID: id, Source: r.SourceURL, Msg: "chunk is not in the vector index"})
			continue
		}
		if doc.Content != r.Content || doc.Metadata[fieldSource] != r.SourceURL || doc.Metadata[fieldDocType] != r.DocType || !sameDirection(doc.Embedding, r.Vector) {
			probs = append(probs, Problem{Kind: "vector-stale", ID: id, Source: r.SourceURL, Msg: "the vector index holds another version of the chunk"})
		}
	}
	extra, err := b.vectorExtras(ctx)
	if err != nil {
		return nil, err
	}
	for _, id := range extra {
		probs = append(probs, Problem{Kind: "vector-extra", ID: id, Msg: "the vector index holds a chunk the store does not"})
	}
	return probs, nil
}

// vectorExtras lists the ids in the vector collection that are not records.
// chromem-go cannot list its ids; an exhaustive query returns them all.
// Called with mu held.
func (b *Backend) vectorExtras(ctx context.Context) ([]string, error) {
	n := b.coll.Count()
	if n == 0 || b.dim == 0 {
		return nil, nil
	}
	q := make([]float32, b.dim)
	q[0] = 1
	res, err := b.coll.QueryEmbedding(ctx, q, n, nil, nil)
	if err != nil {
		return nil, fmt.Errorf("index: list vectors: %w", err)
	}
	var extra []string
	for _, r := range res {
		if _, ok := b.records[r.ID]; !ok {
			extra = append(extra, r.ID)
		}
	}
	return extra, nil
}

// sameDirection reports whether got is want normalised (chromem-go stores
// unit vectors).
func sameDirection(got, want []float32) bool {
	if len(got) != len(want) {
		return false
	}
	var norm float64
	for _, x := range want {
		norm += float64(x) * float64(x)
	}
	norm = math.Sqrt(norm)
	if norm == 0 {
		return false
	}
	for i := range got {
		if math.Abs(float64(got[i])-float64(want[i])/norm) > 1e-5 {
			return false
		}
	}
	return true
}

// checkVersions reports sources whose chunks carry different content hashes,
// or repeat a position, which a half-applied replacement would leave.
// Preferences are single records sharing one source and are skipped.
func (b *Backend) checkVersions() []Problem {
	b.mu.RLock()
	defer b.mu.RUnlock()
	var probs []Problem
	for src, ids := range b.bySource {
		hashes := map[string]int{}
		positions := map[int]bool{}
		dup := false
		for id := range ids {
			r := b.records[id]
			if r.DocType == driver.DocPreference {
				continue
			}
			hashes[r.ContentHash]++
			if r.ContentHash != "" {
				if positions[r.Position] {
					dup = true
				}
				positions[r.Position] = true
			}
		}
		if len(hashes) > 1 {
			probs = append(probs, Problem{Kind: "mixed-version", Source: src, Msg: fmt.Sprintf("the source's chunks come from %d versions of it (content hashes %v); index it again to replace them", len(hashes), keys(hashes))})
		} else if dup {
			probs = append(probs, Problem{Kind: "mixed-version", Source: src, Msg: "two chunks of the source claim the same position; index it again to replace them"})
		}
	}
	return probs
}

func keys(m map[string]int) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// repairVectors makes the vector collection hold exactly the records, in
// place (searches keep using it meanwhile).
func (b *Backend) repairVectors(ctx context.Context) error {
	b.mu.RLock()
	defer b.mu.RUnlock()
	for id, r := range b.records {
		doc, err := b.coll.GetByID(ctx, id)
		if err == nil && doc.Content == r.Content && doc.Metadata[fieldSource] == r.SourceURL &&
			doc.Metadata[fieldDocType] == r.DocType && sameDirection(doc.Embedding, r.Vector) {
			continue
		}
		if err := b.coll.AddDocument(ctx, chromemDoc(r)); err != nil {
			return fmt.Errorf("index: repair vector of %s: %w", id, err)
		}
	}
	extra, err := b.vectorExtras(ctx)
	if err != nil {
		return err
	}
	if len(extra) > 0 {
		return b.coll.Delete(ctx, nil, nil, extra...)
	}
	return nil
}

// Repair fixes what Check finds where the records say what is right: the
// full-text index is reconciled with the records (missing and outdated
// documents indexed, extra ones removed, the sequence recorded) and the
// vector index is rebuilt from them. Problems it cannot fix (mixed versions
// of a source, which need the source indexed again) are returned. A store
// opened read-only cannot be repaired; open it normally, which itself
// performs the repairs a read-only Check reports as pending.
func (b *Backend) Repair(ctx context.Context) (fixed, remaining []Problem, err error) {
	before, err := b.Check(ctx)
	if err != nil {
		return nil, nil, err
	}
	if len(before) == 0 {
		return nil, nil, nil
	}
	b.wmu.Lock()
	b.mu.RLock()
	werr := b.writable()
	b.mu.RUnlock()
	if werr != nil {
		b.wmu.Unlock()
		return nil, before, werr
	}
	var fullText, vectors bool
	for _, p := range before {
		switch p.Kind {
		case "damaged":
			if p.ID != "" {
				b.quarantine(filepath.Join(b.dir, p.ID), p.Msg)
			}
		case "fulltext-missing", "fulltext-extra", "fulltext-stale", "sequence", "fulltext-damaged":
			fullText = true
		case "vector-missing", "vector-extra", "vector-stale":
			vectors = true
		}
	}
	if fullText {
		if err = b.reconcileBleve(ctx); err == nil && !b.waitBleveDurable(bleveWait) {
			b.log.Warn("index: repair: the full-text index has not persisted yet; the next open finishes the work")
		}
	}
	if err == nil && vectors {
		err = b.repairVectors(ctx)
	}
	b.wmu.Unlock()
	if err != nil {
		return nil, before, err
	}
	after, err := b.Check(ctx)
	if err != nil {
		return nil, nil, err
	}
	left := map[string]bool{}
	for _, p := range after {
		left[p.String()] = true
	}
	for _, p := range before {
		if !left[p.String()] {
			fixed = append(fixed, p)
		}
	}
	return fixed, after, nil
}

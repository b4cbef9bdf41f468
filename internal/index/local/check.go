package local

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"sort"

	"github.com/ragmem/ragmem/index"
	"github.com/ragmem/ragmem/internal/index/vecindex"
)

// Problem is one inconsistency found by Check.
type Problem struct {
	// Kind classifies the problem:
	//
	//	fulltext-missing  a chunk of the store is not in the full-text index
	//	fulltext-extra    the full-text index holds a chunk the store does not
	//	fulltext-stale    the full-text index holds another version of a chunk
	//	vector-missing    a chunk of the store is not in the vector index
	//	vector-extra      the vector index holds a chunk the store does not
	//	vector-stale      the vector index holds another version of a chunk,
	//	                  or codes that are not those of its vector
	//	vector-codes      the snapshot's file of vector index codes is missing,
	//	                  damaged or of another snapshot
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
// store does not need to read, with their vector codes and the journals
// older than the snapshot in use, and reports those that are damaged.
func (b *Backend) checkFallbacks() []Problem {
	var probs []Problem
	if js, err := listGenerations(b.fs, b.dir, journalPrefix, journalSuffix); err == nil {
		for i := 0; i+1 < len(js); i++ {
			if js[i+1] > b.snapSeq {
				continue // read at open
			}
			name := journalName(js[i])
			scan, err := scanJournal(b.fs, filepath.Join(b.dir, name), func(*batchOp) error { return nil })
			if err == nil && scan.tail != nil {
				err = scan.tail
			}
			if err != nil {
				probs = append(probs, Problem{Kind: "damaged", ID: name, Msg: fmt.Sprintf("journal %s, kept with the fallback snapshot, is damaged (%v); --repair moves it to quarantine/", name, err)})
			}
		}
	}
	snaps, err := listGenerations(b.fs, b.dir, snapPrefix, snapSuffix)
	if err != nil {
		return []Problem{{Kind: "damaged", Msg: fmt.Sprintf("the store directory is unreadable: %v", err)}}
	}
	for _, s := range snaps {
		name := snapName(s)
		if name == b.report.Snapshot || (b.snapVersion != 0 && s == b.snapSeq) {
			continue // the snapshot in use, read at open or written since
		}
		sd, err := readSnapshot(b.fs, filepath.Join(b.dir, name))
		if err != nil {
			already := false
			for _, p := range b.pendingFix {
				already = already || p.ID == name
			}
			if !already {
				probs = append(probs, Problem{Kind: "damaged", ID: name, Msg: fmt.Sprintf("fallback snapshot %s is damaged (%v); --repair moves it to quarantine/", name, err)})
			}
			continue
		}
		_ = sd.vecs.close()
		if sd.version != 2 || len(sd.records) == 0 {
			continue
		}
		// Its vector codes, which an open from it would load.
		codes := codesName(s)
		if _, err := b.readCodes(filepath.Join(b.dir, codes), codesTag(sd.seq, len(sd.records), sd.dim, sd.fingerprint)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			probs = append(probs, Problem{Kind: "damaged", ID: codes, Msg: fmt.Sprintf("the vector codes of fallback snapshot %s are damaged (%v); --repair moves them to quarantine/ (an open from that snapshot would rebuild them)", name, err)})
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

// checkVectors compares the vector index that answers queries with the
// records: every record is in it with its metadata and its vector, it holds
// nothing else, and its codes are those of its vectors. It also reads the
// snapshot's codes file, which the next open loads. Called with wmu held.
func (b *Backend) checkVectors(ctx context.Context) ([]Problem, error) {
	var probs []Problem
	b.mu.RLock()
	defer b.mu.RUnlock()
	for id, r := range b.records {
		it, ok := b.vx.Entry(id)
		if !ok {
			probs = append(probs, Problem{Kind: "vector-missing", ID: id, Source: r.SourceURL, Msg: "chunk is not in the vector index"})
			continue
		}
		if it.DocType != r.DocType || it.Source != r.SourceURL || !vecindex.SameVector(it.Vector, r.Vector) {
			probs = append(probs, Problem{Kind: "vector-stale", ID: id, Source: r.SourceURL, Msg: "the vector index holds another version of the chunk"})
		}
	}
	for _, id := range b.vx.IDs() {
		if _, ok := b.records[id]; !ok {
			probs = append(probs, Problem{Kind: "vector-extra", ID: id, Msg: "the vector index holds a chunk the store does not"})
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	for _, id := range b.vx.VerifyCodes() {
		src := ""
		if r := b.records[id]; r != nil {
			src = r.SourceURL
		}
		probs = append(probs, Problem{Kind: "vector-stale", ID: id, Source: src, Msg: "the vector index's codes for the chunk are not those of its vector"})
	}
	b.vecs.release() // the verification read every vector
	if p := b.checkCodesFile(); p != nil {
		probs = append(probs, *p)
	}
	return probs, nil
}

// checkCodesFile reads the codes file of the snapshot the store was opened
// from or last wrote, if that snapshot has vectors.
func (b *Backend) checkCodesFile() *Problem {
	if b.snapVersion != 2 || b.vecs == nil || b.vecs.count == 0 || b.snapTag == nil {
		return nil
	}
	for _, p := range b.pendingFix {
		if p.Kind == "vector-codes" {
			return nil // reported already
		}
	}
	name := codesName(b.snapSeq)
	c, err := b.readCodes(filepath.Join(b.dir, name), b.snapTag)
	if err != nil {
		return &Problem{Kind: "vector-codes", ID: name, Msg: fmt.Sprintf("the vector index's codes file is unusable (%v); --repair writes it again (the next open would rebuild it)", err)}
	}
	if c.Len() != b.vecs.count {
		return &Problem{Kind: "vector-codes", ID: name, Msg: "the vector index's codes file describes another number of vectors; --repair writes it again"}
	}
	return nil
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
			if r.DocType == index.DocPreference {
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

// repairVectors rebuilds the vector index from the records and swaps it in
// (searches use the old one meanwhile).
func (b *Backend) repairVectors(ctx context.Context) error {
	b.mu.RLock()
	items := make([]vecindex.Item, 0, len(b.records))
	for _, r := range b.records {
		items = append(items, vecItem(r))
	}
	b.mu.RUnlock()
	vx := vecindex.New(b.vecOpts)
	if err := vx.Add(items); err != nil {
		return fmt.Errorf("index: rebuild vector index: %w", err)
	}
	b.vecs.release()
	b.mu.Lock()
	old := b.vx
	b.vx = vx
	b.mu.Unlock()
	old.Close()
	return ctx.Err()
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
	var fullText, vectors, codes bool
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
		case "vector-codes":
			codes = true
			if _, err := b.fs.Stat(filepath.Join(b.dir, p.ID)); err == nil {
				b.quarantine(filepath.Join(b.dir, p.ID), p.Msg)
			}
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
	if err == nil && codes {
		// A new snapshot of the same sequence comes with its codes.
		if err = b.checkpointLocked(true); err != nil {
			err = fmt.Errorf("index: repair: rewrite the vector index's codes: %w", err)
		}
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

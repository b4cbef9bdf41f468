package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/ragmem/ragmem/index"

	"github.com/ragmem/ragmem/index/driver"
)

// ErrCopyMismatch is returned by Copy when the destination holds records of
// another embedder, or when the counts after copying do not match.
var ErrCopyMismatch = errors.New("index: copy mismatch")

// MetaKeys are the store-level settings the index keeps in a backend (the
// embedder identity and the vector dimension); Copy carries them over.
var MetaKeys = []string{metaEmbedder, metaDimension}

// CopyOptions configure Copy. A nil *CopyOptions means all defaults.
type CopyOptions struct {
	// BatchRecords is the number of records per destination batch; a source
	// is never split across batches. Default 500.
	BatchRecords int
	// Progress is called after each batch with the records copied so far
	// and the total. Default none.
	Progress func(done, total int)
}

// CopyReport says what Copy did.
type CopyReport struct {
	Records  int            // records copied
	Sources  map[string]int // sources copied, per doc type
	Chunks   map[string]int // records copied, per doc type
	Meta     map[string]string
	Verified bool // the destination lists the same sources with the same chunk counts
}

// Copy copies every record of src (text, metadata and vector: knowledge,
// preferences and memories alike) and the index's settings (MetaKeys, and
// the embedder's spec, see EmbedderRecord) into
// dst, then verifies that dst lists, per doc type, the same sources with the
// same chunk counts. Records keep their ids, so copying again overwrites
// rather than duplicates. Each source's records go in one atomic batch.
//
// A destination built with another embedder is refused before anything is
// written. Copy does not close either backend.
func Copy(ctx context.Context, dst, src driver.Backend, opts *CopyOptions) (*CopyReport, error) {
	var o CopyOptions
	if opts != nil {
		o = *opts
	}
	if o.BatchRecords <= 0 {
		o.BatchRecords = 500
	}
	rep := &CopyReport{Sources: map[string]int{}, Chunks: map[string]int{}, Meta: map[string]string{}}
	for _, k := range MetaKeys {
		v, ok, err := src.Meta(ctx, k)
		if err != nil {
			return nil, fmt.Errorf("read source setting %s: %w", k, err)
		}
		if !ok {
			continue
		}
		dv, dok, err := dst.Meta(ctx, k)
		if err != nil {
			return nil, fmt.Errorf("read destination setting %s: %w", k, err)
		}
		if dok && dv != v {
			return nil, fmt.Errorf("%w: the destination's %s is %q but the source's is %q; copy into an empty destination",
				ErrCopyMismatch, k, dv, v)
		}
		rep.Meta[k] = v
	}
	// How to rebuild the embedder goes along; only the identity must agree.
	if v, ok, err := src.Meta(ctx, metaEmbedderSpec); err != nil {
		return nil, fmt.Errorf("read source setting %s: %w", metaEmbedderSpec, err)
	} else if ok {
		rep.Meta[metaEmbedderSpec] = v
	}
	recs, err := src.Records(ctx, index.Filter{})
	if err != nil {
		return nil, fmt.Errorf("read source records: %w", err)
	}
	// Records come ordered by source: cut batches at source boundaries.
	var bt driver.Batch
	flush := func() error {
		if len(bt.Put) == 0 {
			return nil
		}
		if err := dst.Apply(ctx, &bt); err != nil {
			return fmt.Errorf("write records: %w", err)
		}
		rep.Records += len(bt.Put)
		if o.Progress != nil {
			o.Progress(rep.Records, len(recs))
		}
		bt = driver.Batch{}
		return nil
	}
	for i := 0; i < len(recs); {
		j := i + 1
		for j < len(recs) && recs[j].SourceURL == recs[i].SourceURL {
			j++
		}
		if len(bt.Put) > 0 && len(bt.Put)+(j-i) > o.BatchRecords {
			if err := flush(); err != nil {
				return rep, err
			}
		}
		bt.Put = append(bt.Put, recs[i:j]...)
		i = j
	}
	if err := flush(); err != nil {
		return rep, err
	}
	// Settings last: a destination with settings but missing records would
	// look complete.
	for _, k := range append(slices.Clone(MetaKeys), metaEmbedderSpec) {
		if v, ok := rep.Meta[k]; ok {
			if err := dst.SetMeta(ctx, k, v); err != nil {
				return rep, fmt.Errorf("write setting %s: %w", k, err)
			}
		}
	}
	if err := verifyCopy(ctx, dst, src, rep); err != nil {
		return rep, err
	}
	rep.Verified = true
	return rep, nil
}

// verifyCopy compares, per doc type, the sources and chunk counts of src and
// dst.
func verifyCopy(ctx context.Context, dst, src driver.Backend, rep *CopyReport) error {
	types := map[string]bool{index.DocKnowledge: true, index.DocPreference: true, index.DocMemory: true}
	all, _, err := src.Sources(ctx, index.Filter{}, 0, 0)
	if err != nil {
		return err
	}
	for _, s := range all {
		types[s.DocType] = true
	}
	var probs []string
	for t := range types {
		f := index.Filter{DocTypes: []string{t}}
		ss, _, err := src.Sources(ctx, f, 0, 0)
		if err != nil {
			return err
		}
		ds, _, err := dst.Sources(ctx, f, 0, 0)
		if err != nil {
			return fmt.Errorf("verify: %w", err)
		}
		have := map[string]int{}
		for _, s := range ds {
			have[s.SourceURL] = s.Chunks
		}
		for _, s := range ss {
			rep.Sources[t]++
			rep.Chunks[t] += s.Chunks
			if have[s.SourceURL] != s.Chunks {
				probs = append(probs, fmt.Sprintf("%s %s: %d chunks copied of %d", t, s.SourceURL, have[s.SourceURL], s.Chunks))
			}
		}
	}
	if len(probs) > 0 {
		sort.Strings(probs)
		if len(probs) > 5 {
			probs = append(probs[:5], fmt.Sprintf("and %d more", len(probs)-5))
		}
		return fmt.Errorf("%w: %s", ErrCopyMismatch, strings.Join(probs, "; "))
	}
	return nil
}

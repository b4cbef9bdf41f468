package memory

import (
	"context"
	"errors"
	"fmt"

	"github.com/ragmem/ragmem/index"
	"github.com/ragmem/ragmem/internal/index/engine"
	"github.com/ragmem/ragmem/search"
)

// Related returns up to n memories whose contents hybrid search finds
// closest to text (BM25 alone when the embedder fails), best first, each
// once. Without an index it returns nil: relatedness needs the index.
// Extraction shows the related memories to the model and compares a
// proposal with them.
func (s *Store) Related(ctx context.Context, text string, n int) ([]Memory, error) {
	if s.ix == nil || n <= 0 {
		return nil, nil
	}
	all, err := s.List(ctx)
	if err != nil {
		return nil, err
	}
	bySlug := make(map[string]Memory, len(all))
	for _, m := range all {
		bySlug[m.Slug] = m
	}
	res, err := s.searchContent(ctx, text, max(20, 3*n))
	if err != nil {
		return nil, err
	}
	var out []Memory
	seen := map[string]bool{}
	for _, r := range res {
		slug := r.Record.Attrs[attrSlug]
		if m, ok := bySlug[slug]; ok && !seen[slug] {
			seen[slug] = true
			out = append(out, m)
			if len(out) == n {
				break
			}
		}
	}
	return out, nil
}

// searchContent runs a hybrid search over the memories' contents.
func (s *Store) searchContent(ctx context.Context, text string, k int) ([]search.Result, error) {
	opts := &search.Options{Mode: search.Hybrid, TopK: k, SimilarityThreshold: -1, DocTypes: []string{index.DocMemory},
		Attrs:        map[string]string{AttrDir: s.abs, attrKind: recordContent},
		MaxPerSource: -1, KeepDuplicates: true, // near-duplicates are what this search looks for
		Feedback: -1} // judged by their likeness to the text itself, not refined toward the first results
	res, err := search.Search(ctx, s.ix, text, opts)
	if err != nil && errors.Is(err, engine.ErrEmbedding) && ctx.Err() == nil {
		opts.Mode = search.FullText
		res, err = search.Search(ctx, s.ix, text, opts)
	}
	if err != nil {
		return nil, fmt.Errorf("memory: search the memories: %w", err)
	}
	return res, nil
}

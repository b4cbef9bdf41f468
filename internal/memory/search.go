package memory

import (
	"context"
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/ragmem/ragmem/internal/clean"
	"github.com/ragmem/ragmem/internal/memory/internal/pattern"
	"github.com/ragmem/ragmem/search"
)

// SearchRequest asks for memories by content and time, as opposed to Match,
// which selects the memories whose whenToUse fires for a task.
type SearchRequest struct {
	// Query is searched in the memories' contents (hybrid search). Empty:
	// every memory in the time range, newest first.
	Query string `json:"query,omitempty"`
	// Since, Until and When restrict the memories' time as in
	// MatchRequest.
	Since time.Time `json:"since,omitzero"`
	Until time.Time `json:"until,omitzero"`
	When  string    `json:"when,omitempty"`
	// IncludeSuperseded finds superseded memories too ("what did I think
	// before"). Default false, except that a time range includes the
	// superseded memories of its time.
	IncludeSuperseded bool `json:"includeSuperseded,omitempty"`
	// AsOf asks what held at that time (point-in-time recall): the
	// memories valid then (Memory.ValidAt), a memory superseded since
	// included with its old text and one that began after it left out;
	// recency is counted back from it. With IncludeSuperseded, those
	// superseded before it too. Default zero: now, today's memories.
	AsOf time.Time `json:"asOf,omitzero"`
	// Limit caps the results. Default 10, at most 100.
	Limit int `json:"limit,omitempty"`
}

// Found is a memory a search found.
type Found struct {
	Memory Memory `json:"memory"`
	// Relevance (0–1) is as in Match: half the share of the query's
	// specific words its best chunk contains, half its embedding
	// similarity. 0 for an empty query.
	Relevance float64 `json:"relevance"`
	// Recency is the recency term: RecencyWeight × 0.5^(age /
	// RecencyHalfLife), the age counted from the memory's time (ValidFrom).
	Recency float64 `json:"recency"`
	// Rank is Relevance + Recency.
	Rank float64 `json:"rank"`
	// Snippet is the start of the memory's best chunk for the query.
	Snippet string `json:"snippet,omitempty"`
}

// DefaultSearchLimit is how many memories Search returns by default.
const DefaultSearchLimit = 10

const maxSearchLimit = 100

// Search finds memories by content and time: a hybrid search of Query over
// the memories' contents (every memory in the range when Query is empty),
// restricted to the time range, superseded memories left out unless asked
// for or in a time range, ranked by relevance plus the documented recency
// term (Options.RecencyWeight, RecencyHalfLife). With AsOf, the memories
// that held at that time instead of today's.
func (s *Store) Search(ctx context.Context, req SearchRequest) ([]Found, error) {
	if err := s.maybeRefresh(ctx); err != nil {
		return nil, err
	}
	limit := req.Limit
	if limit <= 0 {
		limit = DefaultSearchLimit
	}
	if limit > maxSearchLimit {
		return nil, fmt.Errorf("%w: limit must be at most %d", ErrInvalid, maxSearchLimit)
	}
	now := s.o.Now()
	tr, err := Range(req.Since, req.Until, req.When, now)
	if err != nil {
		return nil, err
	}
	withOld := req.IncludeSuperseded || (!tr.IsZero() && req.AsOf.IsZero())
	ref := now // recency is counted back from here
	if !req.AsOf.IsZero() {
		ref = req.AsOf
	}
	query := strings.TrimSpace(clean.Line(clean.Clip(req.Query, maxTaskBytes)))
	var hits map[string][]search.Result
	if query != "" && s.ix != nil {
		res, err := s.searchContent(ctx, query, 10000)
		if err != nil {
			return nil, err
		}
		hits = map[string][]search.Result{}
		for _, r := range res {
			sl := r.Record.Attrs[attrSlug]
			hits[sl] = append(hits[sl], r)
		}
	}
	specific := pattern.Specific(pattern.Analyze(query))
	var out []Found
	for _, m := range s.view() {
		if !shown(&m, req.AsOf, withOld) || !tr.Contains(m.ValidFrom) {
			continue
		}
		f := Found{Memory: m}
		if query != "" {
			if hits != nil {
				h := hits[m.Slug]
				if len(h) == 0 {
					continue
				}
				f.Relevance, _ = s.relevance(h, specific)
				f.Snippet = clipRunes(strings.Join(strings.Fields(bestChunk(h)), " "), 200)
			} else {
				f.Relevance = keywordCoverage(&m, specific)
			}
			if f.Relevance <= 0 {
				continue
			}
		}
		f.Relevance = round3(f.Relevance)
		if age := ref.Sub(m.ValidFrom); !m.ValidFrom.IsZero() {
			f.Recency = round3(s.o.RecencyWeight * math.Pow(0.5, math.Max(0, float64(age))/float64(s.o.RecencyHalfLife)))
		}
		f.Rank = round3(f.Relevance + f.Recency)
		out = append(out, f)
	}
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Rank != b.Rank {
			return a.Rank > b.Rank
		}
		if !a.Memory.ValidFrom.Equal(b.Memory.ValidFrom) {
			return a.Memory.ValidFrom.After(b.Memory.ValidFrom)
		}
		return a.Memory.Slug < b.Memory.Slug
	})
	if len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

// bestChunk is the text of the first (best) hit.
func bestChunk(h []search.Result) string {
	if len(h) == 0 {
		return ""
	}
	return h[0].Record.Content
}

// keywordCoverage is the share of the query's specific words found in a
// memory's title, whenToUse and tags (Search without an index).
func keywordCoverage(m *Memory, specific []pattern.Term) float64 {
	if len(specific) == 0 {
		return 0
	}
	text := m.kwText
	if text == "" {
		text = m.keywordText()
	}
	n := 0
	for _, t := range specific {
		if strings.Contains(text, t.Word) || strings.Contains(text, t.Stem) {
			n++
		}
	}
	return float64(n) / float64(len(specific))
}

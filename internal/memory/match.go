package memory

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/ragmem/ragmem/index"
	"github.com/ragmem/ragmem/index/driver"
	"github.com/ragmem/ragmem/internal/clean"
	"github.com/ragmem/ragmem/internal/index/engine"
	"github.com/ragmem/ragmem/internal/memory/internal/pattern"
	"github.com/ragmem/ragmem/search"
)

// MatchRequest describes an upcoming agent execution.
type MatchRequest struct {
	// Task is what the agent is about to do.
	Task string `json:"task"`
	// Agent is the agent's name ("developer"). Patterns are matched against
	// the task and the agent name together.
	Agent string `json:"agent,omitempty"`
	// AgentTags are specialty tags added to those Options.AgentTags gives
	// the agent.
	AgentTags []string `json:"agentTags,omitempty"`
	// MaxMemories caps the selection. Default 5.
	MaxMemories int `json:"maxMemories,omitempty"`
	// MinImportance leaves out less important memories. Default low (all).
	MinImportance Importance `json:"minImportance,omitempty"`
	// NoWeak selects only memories whose whenToUse fires (no weak matches).
	NoWeak bool `json:"noWeak,omitempty"`
	// Since and Until keep the memories whose time (OccurredAt, else when
	// first stored) is in [Since, Until); zero bounds are open.
	Since time.Time `json:"since,omitzero"`
	Until time.Time `json:"until,omitzero"`
	// When is a time expression ("last week", "in May"; see ResolveTime),
	// intersected with Since and Until.
	When string `json:"when,omitempty"`
	// IncludeSuperseded selects superseded memories too (what was believed
	// before). Default false, except that a time range includes the
	// superseded memories of its time.
	IncludeSuperseded bool `json:"includeSuperseded,omitempty"`
	// AsOf selects among the memories that held at that time, as
	// SearchRequest.AsOf does. Default zero: today's.
	AsOf time.Time `json:"asOf,omitzero"`
}

// maxTaskBytes bounds the task text used for matching.
const maxTaskBytes = 16 << 10

// Match is a selected memory with why it was selected.
type Match struct {
	Memory Memory `json:"memory"`
	// Score is the relevance score (0–100) with its parts.
	Score Score `json:"score"`
	// Relevance (0–1) is what hybrid search says of the memory's content
	// for the task: half the share of the task's specific words it contains,
	// half its embedding similarity (its best chunk). 0 without an index.
	Relevance float64 `json:"relevance"`
	// Rank orders the selection (rank.go): Score.Total + RelevanceWeight ×
	// Relevance + Feedback + Decay.
	Rank float64 `json:"rank"`
	// Feedback is the feedback term of the rank: FeedbackWeight × (cite
	// rate − 0.5).
	Feedback float64 `json:"feedback,omitempty"`
	// Decay is the decay term of the rank: −DecayWeight × (1 − strength).
	Decay float64 `json:"decay,omitempty"`
	// Weak is true when no whenToUse pattern fired: the memory's tags name
	// the agent's specialty and its content shares specific words with the
	// task (docs/memory.md, "Weak matches").
	Weak bool `json:"weak,omitempty"`
	// Reasons say which patterns fired, or why a weak match was made.
	Reasons []string `json:"reasons"`
}

// Match selects the memories relevant to an upcoming execution:
// a memory qualifies when one of its whenToUse patterns fires for the task
// and agent name (substring, alternatives, wildcard, regex; natural-language
// patterns also by their content words and, with an index, by embedding
// similarity from a hybrid search of the task over the indexed patterns), or
// as a weak match (see Match.Weak). Memories below MinImportance are left
// out; the rest are ranked by Score.Total + RelevanceWeight × Relevance
// (ties: higher score, newer, slug) and the first MaxMemories returned.
//
// Match fails when the directory cannot be read or the index fails; when
// only the embedder fails, it logs that and matches with BM25 alone.
func (s *Store) Match(ctx context.Context, req MatchRequest) ([]Match, error) {
	if err := s.maybeRefresh(ctx); err != nil {
		if !errors.Is(err, engine.ErrEmbedding) {
			return nil, err
		}
		s.o.Logger.Warn("memory: the embedder is unavailable; indexing of changed memories is retried later", "err", err)
	}
	limit := req.MaxMemories
	if limit <= 0 {
		limit = DefaultMaxMemories
	}
	minImp := req.MinImportance
	if !minImp.Valid() {
		minImp = Low
	}
	task := strings.TrimSpace(clean.Line(clean.Clip(req.Task, maxTaskBytes)))
	agent := strings.TrimSpace(clean.Line(clean.Clip(req.Agent, MaxTitleLen)))
	searchText := strings.ToLower(strings.TrimSpace(task + " " + agent))
	taskTerms := pattern.Analyze(task)
	taskStems := map[string]bool{}
	for _, t := range taskTerms {
		taskStems[t.Stem] = true
	}
	specific := pattern.Specific(taskTerms)
	agentTags := normTags(agentTagsFor(s.o.AgentTags, agent, req.AgentTags))
	now := s.o.Now()
	tr, err := Range(req.Since, req.Until, req.When, now)
	if err != nil {
		return nil, err
	}
	withOld := req.IncludeSuperseded || (!tr.IsZero() && req.AsOf.IsZero())

	s.mu.RLock()
	records := 0
	for _, st := range s.files {
		if st.mem != nil {
			records += max1(st.records)
		}
	}
	s.mu.RUnlock()
	var mems []*Memory
	view := s.view()
	for i := range view {
		m := &view[i]
		if shown(m, req.AsOf, withOld) && tr.Contains(m.ValidFrom) {
			mems = append(mems, m)
		}
	}
	if len(mems) == 0 {
		return nil, nil
	}
	ev, err := s.evidence(ctx, task, records)
	if err != nil {
		return nil, err
	}
	var out []Match
	for _, m := range mems {
		if m.Importance < minImp {
			continue
		}
		c := ev.content[m.Slug]
		rel := 0.0
		var shared []string
		if c != nil {
			rel, shared = s.relevance(c, specific)
		}
		reasons := s.firedPatterns(m, searchText, taskStems, ev, len(shared) > 0 && pattern.HasSpecific(specific))
		sc := scoreMemory(m, taskTerms, scoreContext{Task: task, Agent: agent}, agentTags, now)
		weak := false
		if len(reasons) == 0 {
			if req.NoWeak || sc.AgentTags == 0 || len(shared) == 0 {
				continue
			}
			weak = true
			reasons = []string{fmt.Sprintf("weak match: tags %s fit agent %q and the content shares %s with the task",
				strings.Join(m.Tags, ", "), agent, quoteList(shared, 5))}
		}
		out = append(out, Match{Memory: *m, Score: sc, Relevance: round3(rel), Weak: weak, Reasons: reasons})
	}
	return rankMatches(out, s.weights(), limit), nil
}

func max1(n int) int { return max(1, n) }

func quoteList(ws []string, n int) string {
	if len(ws) > n {
		ws = ws[:n]
	}
	q := make([]string, len(ws))
	for i, w := range ws {
		q[i] = fmt.Sprintf("%q", w)
	}
	return strings.Join(q, ", ")
}

// evidence is what the hybrid search of the task found in the index.
type evidence struct {
	// sim maps a memory's slug and a pattern's natural-language text to its
	// embedding similarity to the task.
	sim map[string]map[string]float64
	// content maps a slug to the hits of its content chunks.
	content map[string][]search.Result
}

// evidence runs one hybrid search of the task over the directory's records.
func (s *Store) evidence(ctx context.Context, task string, records int) (*evidence, error) {
	ev := &evidence{sim: map[string]map[string]float64{}, content: map[string][]search.Result{}}
	if s.ix == nil || task == "" {
		return ev, nil
	}
	opts := &search.Options{
		Mode: search.Hybrid, TopK: min(max(records, 1), 10000), SimilarityThreshold: -1,
		DocTypes: []string{index.DocMemory, docPattern}, Attrs: map[string]string{AttrDir: s.abs},
		// Every record is evidence: no per-source cap, no collapsing.
		MaxPerSource: -1, KeepDuplicates: true,
		// Duplicates are judged by their likeness to the text itself, so
		// the ranking is not refined toward the first results.
		Feedback: -1,
	}
	res, err := search.Search(ctx, s.ix, task, opts)
	if err != nil && errors.Is(err, engine.ErrEmbedding) && ctx.Err() == nil {
		s.o.Logger.Warn("memory: the embedder is unavailable; matching with BM25 alone", "err", err)
		opts.Mode = search.FullText
		res, err = search.Search(ctx, s.ix, task, opts)
	}
	if err != nil {
		return nil, fmt.Errorf("memory: search the memories: %w", err)
	}
	for _, r := range res {
		slug := r.Record.Attrs[attrSlug]
		switch r.Record.Attrs[attrKind] {
		case recordPattern:
			if ev.sim[slug] == nil {
				ev.sim[slug] = map[string]float64{}
			}
			if r.Explanation.VectorRank > 0 {
				ev.sim[slug][r.Record.Content] = r.Explanation.VectorSimilarity
			}
		case recordContent:
			ev.content[slug] = append(ev.content[slug], r)
		}
	}
	return ev, nil
}

// firedPatterns returns a reason for each whenToUse pattern that fires.
// A natural-language pattern fires when its content words cover at least
// MinCoverage of it (by weight) including a specific word, or only generic
// task words when the memory's content corroborates (shares a specific
// word of the task: contentShares); or when its embedding similarity
// reaches the threshold (with the lexical embedder, only if it shares a
// specific word with the task).
func (s *Store) firedPatterns(m *Memory, text string, taskStems map[string]bool, ev *evidence, contentShares bool) []string {
	var out []string
	for _, p := range m.patterns {
		if p.MatchLexical(text) {
			out = append(out, fmt.Sprintf("whenToUse %q matched (%s)", p.Raw(), p.Kind()))
			continue
		}
		for _, np := range p.Phrases() {
			cov := np.Coverage(taskStems)
			specific := np.SharesSpecific(taskStems)
			sim, hasSim := ev.sim[m.Slug][np.Text]
			byWords := cov >= s.o.MinCoverage && (specific || contentShares)
			bySim := hasSim && sim >= s.thresh && (!s.lexical || specific)
			if !byWords && !bySim {
				continue
			}
			r := fmt.Sprintf("whenToUse %q matched semantically (word coverage %.2f", p.Raw(), cov)
			if hasSim {
				r += fmt.Sprintf(", similarity %.2f", sim)
			}
			if byWords && !specific {
				r += ", generic words backed by the content"
			}
			out = append(out, r+")")
			break
		}
	}
	return out
}

// relevance scores a memory's content hits for the task and returns the
// specific task words its best chunk shares.
func (s *Store) relevance(hits []search.Result, specific []pattern.Term) (float64, []string) {
	best := 0.0
	var bestShared []string
	var anyShared []string
	for _, h := range hits {
		cs := s.chunkStems(&h.Record)
		var shared []string
		for _, t := range specific {
			if cs.Covers(t.Stem) {
				shared = append(shared, t.Word)
			}
		}
		cov := 0.0
		if len(specific) > 0 {
			cov = float64(len(shared)) / float64(len(specific))
		}
		sim := 0.0
		if h.Explanation.VectorRank > 0 {
			sim = math.Max(0, math.Min(1, h.Explanation.VectorSimilarity))
		}
		r := 0.5*cov + 0.5*sim
		if r > best {
			best, bestShared = r, shared
		}
		if len(shared) > len(anyShared) {
			anyShared = shared
		}
	}
	if len(bestShared) == 0 {
		bestShared = anyShared
	}
	return math.Max(0, math.Min(1, best)), bestShared
}

// chunkStems returns the stems of a chunk (title, headings and text),
// cached by chunk id: ids derive from the content, so they never go stale.
func (s *Store) chunkStems(r *index.Record) *pattern.StemSet {
	if v, ok := s.stemCache.Load(r.ID); ok {
		return v.(*pattern.StemSet)
	}
	st := pattern.NewStemSet(pattern.Stems(driver.SearchText(r)))
	if s.stemCount.Add(1) > 20000 {
		s.stemCache.Clear()
		s.stemCount.Store(0)
	}
	s.stemCache.Store(r.ID, st)
	return st
}

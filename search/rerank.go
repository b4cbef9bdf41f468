package search

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"time"

	"github.com/ragmem/ragmem/internal/embed"
)

// Reranker scores documents against a query with a model that reads both
// together (a cross-encoder), which fusion cannot: internal/rerank's Client
// speaks the /rerank protocol of Cohere, Jina, Hugging Face TEI, llama.cpp
// and vLLM. Implementations are safe for concurrent use.
type Reranker interface {
	// Rerank returns one relevance score per document, in the order of
	// docs (higher is more relevant), or an error, in which case the
	// search keeps its fused order.
	Rerank(ctx context.Context, query string, docs []string) ([]float64, error)
}

// DefaultRerankTop is the default of Options.RerankTop.
const DefaultRerankTop = 50

// ErrRerankSkipped opens the error of a search whose rerank was skipped
// (Report.RerankErr).
var ErrRerankSkipped = errors.New("search: rerank skipped")

// errBadScores: a Reranker's scores do not fit the documents sent.
var errBadScores = errors.New("search: the reranker's scores do not fit the documents")

// reranking is the rerank stage of one search: it remembers the scores of
// the list it last reranked, so that a search that ranks again with a
// larger pool (search's loop) asks the reranker once for the same top N,
// and what happened, for the report.
type reranking struct {
	rr  Reranker
	top int

	ids    []string  // the ids last reranked, in fused order
	scores []float64 // their scores
	n      int       // how many results the last rerank ordered
	err    error     // why the last rerank was skipped (nil: it was not)
}

func newReranking(o *Options) *reranking {
	if o.Reranker == nil {
		return nil
	}
	top := o.RerankTop
	if top <= 0 {
		top = DefaultRerankTop
	}
	return &reranking{rr: o.Reranker, top: top}
}

// apply reorders the first top results of ranked (best first) by the
// reranker's scores; the rest keep their fused order after them. The
// reranked results take the scores of the places they take (the k-th
// result keeps the k-th fused score), so that results stay in descending
// score for what selects by score (the context's token budget), while
// each Explanation keeps its own fused score and gains the rerank's score
// and rank. When the reranker fails, ranked is returned as it was and the
// failure is kept for the report. A nil *reranking returns ranked.
func (x *reranking) apply(ctx context.Context, query string, ranked []Result) []Result {
	if x == nil || len(ranked) == 0 || x.err != nil {
		// A search asks a failing reranker once.
		return ranked
	}
	n := min(x.top, len(ranked))
	ids := make([]string, n)
	for i := range n {
		ids[i] = ranked[i].Record.ID
	}
	scores := x.scores
	if !slices.Equal(ids, x.ids) {
		docs := make([]string, n)
		for i := range n {
			docs[i] = ranked[i].Record.Content
		}
		var err error
		scores, err = x.rr.Rerank(ctx, query, docs)
		if err == nil && len(scores) != n {
			err = fmt.Errorf("%w: %d scores for %d documents", errBadScores, len(scores), n)
		}
		for _, s := range scores {
			if err == nil && (math.IsNaN(s) || math.IsInf(s, 0)) {
				err = fmt.Errorf("%w: a score is not a finite number", errBadScores)
			}
		}
		x.ids, x.scores, x.n = nil, nil, 0
		if err != nil {
			x.err = err
			return ranked
		}
		x.ids, x.scores = ids, scores
	}
	x.n = n
	order := make([]int, n)
	for i := range order {
		order[i] = i
	}
	// Ties keep the fused order.
	sort.SliceStable(order, func(a, b int) bool { return scores[order[a]] > scores[order[b]] })
	out := make([]Result, len(ranked))
	for place, i := range order {
		r := ranked[i]
		r.Score = ranked[place].Score
		r.Explanation.RerankRank = place + 1
		r.Explanation.RerankScore = scores[i]
		out[place] = r
	}
	copy(out[n:], ranked[n:])
	return out
}

// report fills rep's rerank fields.
func (x *reranking) report(rep *Report) {
	if x == nil {
		return
	}
	if x.err != nil {
		rep.RerankSkipped = RerankReason(x.err)
		rep.RerankErr = fmt.Errorf("%w: %w", ErrRerankSkipped, x.err)
		return
	}
	rep.Reranked = x.n
}

// RerankReason says in words why a rerank was skipped, without the
// error's own text, which may name the reranker's address and query:
// "reranker unavailable: it does not answer in time", "reranker
// unavailable: it failed repeatedly; skipped until 19:04:05", ...
func RerankReason(err error) string {
	var ue *embed.UnavailableError
	var rs interface{ Reason() string }
	why := ""
	switch {
	case errors.As(err, &rs):
		why = rs.Reason()
	case errors.Is(err, errBadScores):
		why = "it returns invalid answers"
	case errors.Is(err, context.DeadlineExceeded):
		why = "it does not answer in time"
	default:
		why = embed.Reason(err)
	}
	if errors.As(err, &ue) && !ue.RetryAt.IsZero() {
		why += "; skipped until " + ue.RetryAt.UTC().Format(time.TimeOnly) + " UTC"
	}
	return "reranker unavailable: " + why
}

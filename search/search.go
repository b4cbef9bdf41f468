// Package search is ragmem's retriever: full-text (BM25), vector, or hybrid
// search, where hybrid runs both concurrently over a candidate pool larger
// than topK and fuses the two rankings.
//
// Fusion is relative-score fusion by default: each list's scores are min-max
// normalised to [0, 1] over the candidate pool, then combined as
// alpha·vector + (1−alpha)·BM25. Reciprocal Rank Fusion is the alternative
// (score = Σ w/(k + rank), k = 60, weights 2·(1−alpha) and 2·alpha, so alpha
// 0.5 is plain RRF).
//
// The vector weight alpha defaults to 0.05 when the retriever embeds with the
// offline lexical embedder, and to 0.5 otherwise. The lexical default was
// chosen by measurement on SciFact's training queries and checked on
// Cranfield (docs/evaluation.md): a lexical vector ranking mostly agrees
// with BM25, only a small weight kept hybrid at or above BM25 alone, and
// plain RRF cost 0.06 to 0.09 nDCG@10. Semantic embedders (Model2Vec,
// OpenAI-compatible) bring what BM25 lacks and get the conventional equal
// weight; no semantic model could be measured here, so measure yours with
// ragmem eval.
//
// Every result carries its explanation: its BM25 rank and score, its vector
// rank and similarity, and the fused score. Results are in descending score
// (Property 1) and at most TopK. Preferences and memories are excluded unless
// the options ask for them.
package search

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/ragmem/ragmem/embed"
	"github.com/ragmem/ragmem/index"
)

// Mode selects the retrieval method.
type Mode string

const (
	Hybrid   Mode = "hybrid"
	Vector   Mode = "vector"
	FullText Mode = "fulltext"
)

// Fusion selects how hybrid search merges the two rankings.
type Fusion string

const (
	RRF      Fusion = "rrf"
	Relative Fusion = "relative"
)

// ParseMode parses "hybrid", "vector" or "fulltext" (also "bm25", "text").
func ParseMode(s string) (Mode, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "", "hybrid":
		return Hybrid, nil
	case "vector", "semantic", "dense":
		return Vector, nil
	case "fulltext", "full-text", "bm25", "text", "keyword":
		return FullText, nil
	}
	return "", fmt.Errorf("%w %q (want hybrid, vector or fulltext)", ErrBadMode, s)
}

// ParseFusion parses "rrf" or "relative" ("" is DefaultFusion).
func ParseFusion(s string) (Fusion, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "":
		return DefaultFusion, nil
	case "rrf":
		return RRF, nil
	case "relative", "relative-score", "rsf":
		return Relative, nil
	}
	return "", fmt.Errorf("%w %q (want rrf or relative)", ErrBadFusion, s)
}

// Errors.
var (
	ErrBadMode   = errors.New("search: unknown mode")
	ErrBadFusion = errors.New("search: unknown fusion")
)

// Defaults.
const (
	DefaultTopK      = 5
	DefaultThreshold = 0.3
	DefaultFusion    = Relative
	DefaultRRFK      = 60
	DefaultAlpha     = 0.05 // vector weight of relative fusion with the lexical embedder
	SemanticAlpha    = 0.5  // vector weight of relative fusion with any other embedder
	DefaultRRFAlpha  = 0.5  // vector weight of RRF: plain, unweighted RRF
	MinCandidatePool = 100
)

// Options configure a search. A nil *Options means all defaults.
type Options struct {
	// Mode is the retrieval method. Default Hybrid.
	Mode Mode
	// TopK is the maximum number of results. Default 5.
	TopK int
	// SimilarityThreshold drops weak results. Default 0.3; a negative value
	// disables it. What it compares, per mode:
	//   - vector: the cosine similarity of the chunk to the query;
	//   - fulltext: the BM25 score divided by the best BM25 score of the
	//     query (so the best match always passes);
	//   - hybrid: a result passes if either of its components passes the
	//     test of its own mode above.
	SimilarityThreshold float64
	// Fusion is the hybrid fusion method. Default Relative.
	Fusion Fusion
	// RRFK is the k of Reciprocal Rank Fusion. Default 60.
	RRFK int
	// Alpha is the weight of the vector ranking against BM25's (1−alpha),
	// in (0, 1]; for BM25 alone use Mode FullText. Default with relative
	// fusion: 0.05 when the retriever uses the lexical embedder (or cannot
	// say which it uses), else 0.5; with RRF: 0.5, plain RRF.
	Alpha float64
	// CandidatePool is how many candidates each side of a hybrid search
	// retrieves before fusion. Default max(10·TopK, 100).
	CandidatePool int
	// DocTypes restricts the document types searched. Default knowledge only.
	DocTypes []string
	// SourceURL restricts the search to one source. Default all.
	SourceURL string
	// Attrs restricts the search to records with these attribute values.
	Attrs map[string]string
}

func (o *Options) withDefaults() Options {
	var r Options
	if o != nil {
		r = *o
	}
	if r.Mode == "" {
		r.Mode = Hybrid
	}
	if r.TopK <= 0 {
		r.TopK = DefaultTopK
	}
	if r.SimilarityThreshold == 0 {
		r.SimilarityThreshold = DefaultThreshold
	}
	if r.Fusion == "" {
		r.Fusion = DefaultFusion
	}
	if r.RRFK <= 0 {
		r.RRFK = DefaultRRFK
	}
	if r.Alpha == 0 || math.IsNaN(r.Alpha) {
		r.Alpha = DefaultAlpha
		if r.Fusion == RRF {
			r.Alpha = DefaultRRFAlpha
		}
	}
	r.Alpha = math.Max(0, math.Min(1, r.Alpha))
	if r.CandidatePool <= 0 {
		r.CandidatePool = max(10*r.TopK, MinCandidatePool)
	}
	if r.CandidatePool < r.TopK {
		r.CandidatePool = r.TopK
	}
	if len(r.DocTypes) == 0 {
		r.DocTypes = []string{index.DocKnowledge}
	}
	return r
}

// Explanation says how a result was scored. Ranks are 1-based; 0 means the
// result was not in that list.
type Explanation struct {
	BM25Rank         int     `json:"bm25Rank,omitempty"`
	BM25Score        float64 `json:"bm25Score,omitempty"`
	VectorRank       int     `json:"vectorRank,omitempty"`
	VectorSimilarity float64 `json:"vectorSimilarity,omitempty"`
	Fused            float64 `json:"fused"`
	Method           string  `json:"method"` // "bm25", "vector", "relative(alpha=0.05)", "rrf(k=60)" or "rrf(k=60,alpha=0.30)"
}

// Result is one retrieved chunk.
type Result struct {
	Record      index.Record `json:"chunk"`
	Score       float64      `json:"score"`
	Explanation Explanation  `json:"explanation"`
}

// Retriever is what search needs from a store; *index.Index implements it.
type Retriever interface {
	FullText(ctx context.Context, query string, k int, f index.Filter) ([]index.Hit, error)
	Vector(ctx context.Context, query string, k int, f index.Filter) ([]index.Hit, error)
}

// embedderOf is implemented by retrievers that say which embedder they
// use, as *index.Index does.
type embedderOf interface {
	Embedder() embed.Embedder
}

// Search runs a query. A blank query returns no results.
func Search(ctx context.Context, r Retriever, query string, opts *Options) ([]Result, error) {
	o := opts.withDefaults()
	if (opts == nil || opts.Alpha == 0) && o.Fusion == Relative {
		if e, ok := r.(embedderOf); ok {
			if _, lexical := e.Embedder().(*embed.Lexical); !lexical && e.Embedder() != nil {
				o.Alpha = SemanticAlpha
			}
		}
	}
	switch o.Mode {
	case Hybrid, Vector, FullText:
	default:
		return nil, fmt.Errorf("%w %q", ErrBadMode, o.Mode)
	}
	switch o.Fusion {
	case RRF, Relative:
	default:
		return nil, fmt.Errorf("%w %q", ErrBadFusion, o.Fusion)
	}
	if strings.TrimSpace(query) == "" {
		return nil, nil
	}
	f := index.Filter{DocTypes: o.DocTypes, SourceURL: o.SourceURL, Attrs: o.Attrs}
	switch o.Mode {
	case FullText:
		hits, err := r.FullText(ctx, query, o.TopK, f)
		if err != nil {
			return nil, err
		}
		return single(hits, o, true), nil
	case Vector:
		hits, err := r.Vector(ctx, query, o.TopK, f)
		if err != nil {
			return nil, err
		}
		return single(hits, o, false), nil
	}
	if res, ok, err := searchNative(ctx, r, query, f, &o); ok {
		return res, err
	}
	var text, vec []index.Hit
	var terr, verr error
	done := make(chan struct{})
	go func() {
		defer close(done)
		vec, verr = r.Vector(ctx, query, o.CandidatePool, f)
	}()
	text, terr = r.FullText(ctx, query, o.CandidatePool, f)
	<-done
	if terr != nil && verr != nil {
		return nil, errors.Join(terr, verr)
	}
	if terr != nil {
		return nil, terr
	}
	if verr != nil {
		return nil, verr
	}
	return Fuse(text, vec, &o), nil
}

// single turns one ranked list into results.
func single(hits []index.Hit, o Options, bm25 bool) []Result {
	out := make([]Result, 0, len(hits))
	best := 0.0
	if len(hits) > 0 {
		best = hits[0].Score
	}
	for i, h := range hits {
		var e Explanation
		if bm25 {
			e = Explanation{BM25Rank: i + 1, BM25Score: h.Score, Fused: h.Score, Method: "bm25"}
			if o.SimilarityThreshold >= 0 && (best <= 0 || h.Score/best < o.SimilarityThreshold) {
				continue
			}
		} else {
			e = Explanation{VectorRank: i + 1, VectorSimilarity: h.Score, Fused: h.Score, Method: "vector"}
			if o.SimilarityThreshold >= 0 && h.Score < o.SimilarityThreshold {
				continue
			}
		}
		out = append(out, Result{Record: h.Record, Score: h.Score, Explanation: e})
	}
	sortResults(out)
	if len(out) > o.TopK {
		out = out[:o.TopK]
	}
	return out
}

// Fuse merges a BM25 ranking and a vector ranking under o (defaults applied
// for zero fields), applies the threshold and returns the top results.
func Fuse(text, vec []index.Hit, opts *Options) []Result {
	o := opts.withDefaults()
	byID := map[string]*Result{}
	var order []string
	get := func(h index.Hit) *Result {
		r, ok := byID[h.Record.ID]
		if !ok {
			r = &Result{Record: h.Record}
			byID[h.Record.ID] = r
			order = append(order, h.Record.ID)
		}
		return r
	}
	for i, h := range text {
		r := get(h)
		r.Explanation.BM25Rank, r.Explanation.BM25Score = i+1, h.Score
	}
	for i, h := range vec {
		r := get(h)
		r.Explanation.VectorRank, r.Explanation.VectorSimilarity = i+1, h.Score
	}
	bestText := 0.0
	if len(text) > 0 {
		bestText = text[0].Score
	}
	switch o.Fusion {
	case Relative:
		tmin, tmax := minMax(text)
		vmin, vmax := minMax(vec)
		method := fmt.Sprintf("relative(alpha=%.2f)", o.Alpha)
		for _, id := range order {
			r := byID[id]
			var s float64
			if r.Explanation.BM25Rank > 0 {
				s += (1 - o.Alpha) * norm(r.Explanation.BM25Score, tmin, tmax)
			}
			if r.Explanation.VectorRank > 0 {
				s += o.Alpha * norm(r.Explanation.VectorSimilarity, vmin, vmax)
			}
			r.Score, r.Explanation.Fused, r.Explanation.Method = s, s, method
		}
	default:
		k := float64(o.RRFK)
		// Weighted RRF: each list's reciprocal ranks are scaled by its
		// weight, 2·(1−alpha) for BM25 and 2·alpha for vectors, so alpha 0.5
		// is plain RRF.
		wt, wv := 2*(1-o.Alpha), 2*o.Alpha
		method := fmt.Sprintf("rrf(k=%d)", o.RRFK)
		if o.Alpha != 0.5 {
			method = fmt.Sprintf("rrf(k=%d,alpha=%.2f)", o.RRFK, o.Alpha)
		}
		for _, id := range order {
			r := byID[id]
			var s float64
			if r.Explanation.BM25Rank > 0 {
				s += wt / (k + float64(r.Explanation.BM25Rank))
			}
			if r.Explanation.VectorRank > 0 {
				s += wv / (k + float64(r.Explanation.VectorRank))
			}
			r.Score, r.Explanation.Fused, r.Explanation.Method = s, s, method
		}
	}
	out := make([]Result, 0, len(order))
	for _, id := range order {
		r := byID[id]
		if o.SimilarityThreshold >= 0 {
			textOK := r.Explanation.BM25Rank > 0 && bestText > 0 && r.Explanation.BM25Score/bestText >= o.SimilarityThreshold
			vecOK := r.Explanation.VectorRank > 0 && r.Explanation.VectorSimilarity >= o.SimilarityThreshold
			if !textOK && !vecOK {
				continue
			}
		}
		out = append(out, *r)
	}
	sortResults(out)
	if len(out) > o.TopK {
		out = out[:o.TopK]
	}
	return out
}

func minMax(hs []index.Hit) (lo, hi float64) {
	if len(hs) == 0 {
		return 0, 0
	}
	lo, hi = hs[0].Score, hs[0].Score
	for _, h := range hs[1:] {
		lo = math.Min(lo, h.Score)
		hi = math.Max(hi, h.Score)
	}
	return lo, hi
}

// norm maps s from [lo, hi] to [0, 1]; a list whose scores are all equal
// maps to 1 (each of its members is as good as its best).
func norm(s, lo, hi float64) float64 {
	if hi <= lo {
		return 1
	}
	return (s - lo) / (hi - lo)
}

// sortResults orders by descending score; ties by better best rank, then id,
// so that equal inputs always give the same order.
func sortResults(rs []Result) {
	sort.SliceStable(rs, func(i, j int) bool {
		a, b := rs[i], rs[j]
		if a.Score != b.Score {
			return a.Score > b.Score
		}
		ra, rb := bestRank(a.Explanation), bestRank(b.Explanation)
		if ra != rb {
			return ra < rb
		}
		return a.Record.ID < b.Record.ID
	})
}

func bestRank(e Explanation) int {
	r := math.MaxInt
	if e.BM25Rank > 0 {
		r = e.BM25Rank
	}
	if e.VectorRank > 0 && e.VectorRank < r {
		r = e.VectorRank
	}
	return r
}

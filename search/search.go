// Package search is ragmem's retriever: full-text (BM25), vector, or hybrid
// search, where hybrid runs both concurrently over a candidate pool larger
// than topK and fuses the two rankings.
//
// Fusion is relative-score fusion by default: each list's scores are min-max
// normalised to [0, 1] over the candidate pool, then combined as
// alpha·vector + (1−alpha)·BM25. Reciprocal Rank Fusion (score = Σ w/(k +
// rank), k = 60, weights 2·(1−alpha) and 2·alpha, so alpha 0.5 is plain RRF)
// and distribution-based score fusion (DBSF: each list scaled between its
// mean minus and plus three standard deviations) are the alternatives.
//
// The vector weight alpha is automatic unless the caller gives one:
// each store measures it for its embedder on its own content, per document
// type ([Calibrate]: pseudo-questions drawn from the store's chunks, whose
// source is known, answered by both rankings; the weight whose fusion ranks
// the sources best), keeps it, and measures it again as it grows
// ([Calibrator], run by rag.Engine). Until a type has been measured (a store
// with fewer than MinCalibrationChunks chunks of it), DefaultAlpha, 0.1.
//
// Hybrid search then refines its vector side by pseudo-relevance feedback
// (Options.Feedback, feedback.go): the query's vector moves toward the
// centroid of the first three fused results, every candidate of either list
// is scored again against it, and the lists are fused again. The store's
// calibration also measures whether feedback helps its questions at its
// weight, and turns it off where it does not (TypeCalibration.Feedback).
//
// The methods were chosen on the development sets (SciFact's training
// queries, Cranfield, LoCoMo's and BEAM's development conversations) with the
// lexical embedder, randproj and a real small semantic model; the weights
// themselves are each store's (docs/evaluation.md has every candidate
// measured).
//
// Every result carries its explanation: its BM25 rank and score, its vector
// rank and similarity, the fused score, and the method with the weight used
// and where it came from ("relative(alpha=0.12, calibrated)"). Results are in
// descending score (Property 1) and at most TopK. Preferences and memories
// are excluded unless the options ask for them.
package search

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/ragmem/ragmem/index"
	"github.com/ragmem/ragmem/index/driver"
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
	DBSF     Fusion = "dbsf"
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

// ParseFusion parses "relative", "rrf" or "dbsf" ("" is DefaultFusion).
func ParseFusion(s string) (Fusion, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "":
		return DefaultFusion, nil
	case "rrf":
		return RRF, nil
	case "relative", "relative-score", "rsf":
		return Relative, nil
	case "dbsf", "distribution":
		return DBSF, nil
	}
	return "", fmt.Errorf("%w %q (want relative, rrf or dbsf)", ErrBadFusion, s)
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
	DefaultRRFAlpha  = 0.5 // vector weight of RRF: plain, unweighted RRF
	MinCandidatePool = 100
)

// Special values of Options.Alpha.
const (
	// AlphaAuto asks for the automatic vector weight with any fusion
	// method (see [Calibrate]).
	AlphaAuto = -1.0
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
	// in (0, 1]; for BM25 alone use Mode FullText. Default (0) with
	// relative fusion and DBSF, and always with AlphaAuto: automatic, see
	// [Calibrate]; default with RRF: 0.5, plain RRF.
	Alpha float64
	// Agreement turns on per-query weighting, an experiment that is off by
	// default (0): each query's alpha grows by Agreement × the share of
	// results the two top-10 lists have in common, up to 1. It is kept for
	// measurement (docs/evaluation.md says why it is not the default).
	Agreement float64
	// Feedback is how many of the first fused results refine the vector
	// side of a hybrid search (pseudo-relevance feedback, see feedback.go):
	// the query's vector is moved toward their centroid and every
	// candidate of either list is scored again against it before the
	// final fusion. Default 0: defaultFeedback (3); negative: off. A store
	// that fuses natively (Weaviate) does not refine.
	Feedback int
	// CandidatePool is how many candidates each side of a hybrid search
	// retrieves before fusion. Default max(10·TopK, 100).
	CandidatePool int
	// DocTypes restricts the document types searched. Default knowledge only.
	DocTypes []string
	// SourceURL restricts the search to one source. Default all.
	SourceURL string
	// Attrs restricts the search to records with these attribute values.
	Attrs map[string]string
	// Where restricts the search to records that match a filter expression
	// (index.ParseFilter reads the syntax every surface accepts). Default
	// nil: no restriction.
	Where *index.Expr
	// MaxPerSource is the most results one source may have; the next best
	// results of other sources take the places of the rest. Default 0:
	// DefaultMaxPerSource (3); negative: no cap. See Diversify.
	MaxPerSource int
	// GroupBySource orders the results source by source (sources in the
	// order of their best result), for display. Default false: by score.
	GroupBySource bool
	// KeepDuplicates keeps identical and near-identical chunks of other
	// sources in the results. Default false: each is shown once, with the
	// other sources in Result.AlsoAt. See Diversify.
	KeepDuplicates bool
	// SpeakerWeight: a memory whose speaker (index.AttrSpeaker) the query
	// names has its score multiplied by 1+SpeakerWeight. Default
	// DefaultSpeakerWeight; a negative value turns it off. Only searches
	// that include memories (DocTypes) use it; see recall.go.
	SpeakerWeight float64
	// TimeWeight: a memory that happened (index.AttrOccurredAt) within a
	// time the query names, or up to TimeSlack after, has its score
	// multiplied by 1+TimeWeight. Default DefaultTimeWeight; a negative
	// value turns it off.
	TimeWeight float64
	// QuestionWeight: a conversation memory (one with a speaker) whose text
	// is a question has its score divided by 1+QuestionWeight: it asks
	// rather than tells, yet shares the words of questions about what it
	// asks. Default DefaultQuestionWeight; a negative value turns it off.
	QuestionWeight float64
	// TimeSlack is how long after a named time a memory still counts as
	// in it. Default DefaultTimeSlack; a negative value means none.
	TimeSlack time.Duration
	// Now is when the query is asked: the reference of relative time
	// expressions ("last week"). Default time.Now().
	Now time.Time
	// Unit is what a result of a conversation search is: a turn, a round
	// (a user's turn with the replies to it) or a whole session (UnitTurn,
	// UnitRound, UnitSession; see units.go). Default UnitTurn.
	Unit string
	// Reranker, when set, reorders the fused top RerankTop results by its
	// scores before diversification and TopK (rerank.go); results beyond
	// them keep their fused order after them. When it fails, the search
	// keeps the fused order and the Report says why. Default nil: no
	// rerank.
	Reranker Reranker
	// RerankTop is how many of the fused results the Reranker reorders.
	// Default 0: DefaultRerankTop (50).
	RerankTop int

	// auto is the automatic weight asked for (set by withDefaults);
	// weightedBy says where an automatic Alpha came from (set by
	// withDefaults and Search; "" when the caller gave Alpha).
	auto       autoWeight
	weightedBy WeightSource
	// fedBack is how many results refined the vector list being fused
	// (set by refine, for the explanation).
	fedBack int
	// feedbackAuto: Feedback was not given; with a calibrated weight, the
	// store's calibration decides it (TypeCalibration.Feedback).
	feedbackAuto bool
}

type autoWeight int

const (
	autoNone autoWeight = iota
	autoAny
)

// withDefaults returns a copy of the options (the zero Options for nil)
// with every zero field set to its default, as each field's comment says,
// and the negative values that turn a feature off made 0 (-1 for
// MaxPerSource: no cap).
func (o *Options) withDefaults() Options {
	var r Options
	if o != nil {
		r = *o
	}
	r.Mode = cmp.Or(r.Mode, Hybrid)
	r.Fusion = cmp.Or(r.Fusion, DefaultFusion)
	if r.TopK <= 0 {
		r.TopK = DefaultTopK
	}
	if r.SimilarityThreshold == 0 {
		r.SimilarityThreshold = DefaultThreshold
	}
	if r.RRFK <= 0 {
		r.RRFK = DefaultRRFK
	}
	r.resolveAlpha()
	r.Agreement = math.Max(0, r.Agreement)
	if math.IsNaN(r.Agreement) {
		r.Agreement = 0
	}
	r.feedbackAuto = r.Feedback == 0 // the store's calibration decides
	r.Feedback = orDefault(r.Feedback, defaultFeedback, 0)
	if r.CandidatePool <= 0 {
		r.CandidatePool = max(10*r.TopK, MinCandidatePool)
	}
	r.CandidatePool = max(r.CandidatePool, r.TopK)
	if len(r.DocTypes) == 0 {
		r.DocTypes = []string{index.DocKnowledge}
	}
	r.MaxPerSource = orDefault(r.MaxPerSource, DefaultMaxPerSource, -1)
	r.SpeakerWeight = weightOrDefault(r.SpeakerWeight, DefaultSpeakerWeight)
	r.TimeWeight = weightOrDefault(r.TimeWeight, DefaultTimeWeight)
	r.QuestionWeight = weightOrDefault(r.QuestionWeight, DefaultQuestionWeight)
	r.TimeSlack = orDefault(r.TimeSlack, DefaultTimeSlack, 0)
	return r
}

// resolveAlpha sets the weight of the vector ranking: plain RRF's 0.5 for
// RRF without one; for no weight, AlphaAuto or NaN otherwise, the
// automatic weight, DefaultAlpha until Search resolves it from the
// retriever (Fuse alone cannot); a weight given is clamped to [0, 1].
func (o *Options) resolveAlpha() {
	switch {
	case o.Alpha == 0 && o.Fusion == RRF:
		o.Alpha = DefaultRRFAlpha
	case o.Alpha == 0 || o.Alpha == AlphaAuto || math.IsNaN(o.Alpha):
		o.auto = autoAny
	}
	if o.auto != autoNone && o.weightedBy == "" {
		o.Alpha, o.weightedBy = DefaultAlpha, WeightDefault
	}
	if o.weightedBy == "" {
		o.Alpha = math.Max(0, math.Min(1, o.Alpha))
	}
}

// orDefault is v, def when v is zero, or off when v is negative.
func orDefault[T int | float64 | time.Duration](v, def, off T) T {
	switch {
	case v == 0:
		return def
	case v < 0:
		return off
	}
	return v
}

// weightOrDefault is a signal's weight w: def when w is zero or NaN, 0
// (off) when it is negative.
func weightOrDefault(w, def float64) float64 {
	if math.IsNaN(w) {
		return def
	}
	return orDefault(w, def, 0)
}

// Explanation says how a result was scored. Ranks are 1-based; 0 means the
// result was not in that list.
type Explanation struct {
	BM25Rank         int     `json:"bm25Rank,omitempty"`
	BM25Score        float64 `json:"bm25Score,omitempty"`
	VectorRank       int     `json:"vectorRank,omitempty"`
	VectorSimilarity float64 `json:"vectorSimilarity,omitempty"`
	// FeedbackSimilarity is the result's similarity to the query refined
	// by feedback (Options.Feedback; omitted when none applied): the
	// vector rank and the fused score use it, while VectorSimilarity stays
	// the similarity to the query itself, which the threshold tests.
	FeedbackSimilarity float64 `json:"feedbackSimilarity,omitempty"`
	Fused              float64 `json:"fused"`
	// Boost is the factor memory signals multiplied the score by (omitted
	// when none applied), and Signals name them: "speaker", "time",
	// "question".
	Boost   float64  `json:"boost,omitempty"`
	Signals []string `json:"signals,omitempty"`
	// RerankRank and RerankScore are the result's place (1-based) and
	// score from the reranker (Options.Reranker), when one reordered it;
	// 0 when none did. The reranker's scale is its model's own.
	RerankRank  int     `json:"rerankRank,omitempty"`
	RerankScore float64 `json:"rerankScore,omitempty"`
	// Method names the ranking and, for hybrid search, the fusion, the
	// vector weight and where that weight came from: "bm25", "vector",
	// "relative(alpha=0.12, calibrated)", "relative(alpha=0.05, lexical)",
	// "relative(alpha=0.30)" (given by the caller), "rrf(k=60)",
	// "dbsf(alpha=0.10, default)", ... (see [WeightSource]).
	Method string `json:"method"`
}

// Result is one retrieved chunk.
type Result struct {
	Record      index.Record `json:"chunk"`
	Score       float64      `json:"score"`
	Explanation Explanation  `json:"explanation"`
	// AlsoAt lists other sources that hold the same text, or a near copy
	// of this chunk's page, collapsed into this result (see Diversify).
	AlsoAt []string `json:"alsoAt,omitempty"`
	// Unit is set when the result is a round or session of a conversation
	// (Options.Unit): Record then holds the unit's text and the record of
	// its best-ranked turn otherwise, and Unit names every turn.
	Unit *Unit `json:"unit,omitempty"`
}

// Retriever is what search needs from a store; *engine.Index implements it.
type Retriever interface {
	FullText(ctx context.Context, query string, k int, f index.Filter) ([]driver.Hit, error)
	Vector(ctx context.Context, query string, k int, f index.Filter) ([]driver.Hit, error)
}

// Search runs a query. A blank query returns no results. When the
// embedder is unavailable (the retriever's vector side fails with
// engine.ErrEmbedding), a hybrid or vector search answers from BM25 alone;
// SearchReport says when it did, and why.
func Search(ctx context.Context, r Retriever, query string, opts *Options) ([]Result, error) {
	res, _, err := SearchReport(ctx, r, query, opts)
	return res, err
}

// search is Search; degraded is the embedder's error when BM25 answered
// alone.
func search(ctx context.Context, r Retriever, query string, opts *Options, rr *reranking) (res []Result, degraded, err error) {
	o := opts.withDefaults()
	if o.auto != autoNone && o.Mode == Hybrid {
		o.Alpha, o.weightedBy = DefaultAlpha, WeightDefault
		if tc, ok := calibrationOf(ctx, r, o.DocTypes); ok {
			o.Alpha, o.weightedBy = tc.Alpha, WeightCalibrated
			if o.feedbackAuto { // measured at that weight
				o.Feedback = tc.Feedback
			}
		}
	}
	switch o.Mode {
	case Hybrid, Vector, FullText:
	default:
		return nil, nil, fmt.Errorf("%w %q", ErrBadMode, o.Mode)
	}
	switch o.Fusion {
	case RRF, Relative, DBSF:
	default:
		return nil, nil, fmt.Errorf("%w %q", ErrBadFusion, o.Fusion)
	}
	unit, err := ParseUnit(o.Unit)
	if err != nil {
		return nil, nil, err
	}
	if strings.TrimSpace(query) == "" {
		return nil, nil, nil
	}
	f := index.Filter{DocTypes: o.DocTypes, SourceURL: o.SourceURL, Attrs: o.Attrs, Where: o.Where}
	// Rank more than TopK when diversification may drop some, and more
	// again while it leaves fewer than TopK and the store may hold more.
	fetch := o.TopK
	if o.diversifies() {
		fetch = 3 * o.TopK
	}
	if rr != nil {
		fetch = max(fetch, rr.top)
	}
	rc := newRecall(query, &o)
	for {
		ranked, more, degraded, err := retrieve(ctx, r, query, f, &o, fetch, rc)
		if err != nil {
			return nil, nil, err
		}
		if unit != UnitTurn {
			if ranked, err = units(ctx, r, ranked, unit, f); err != nil {
				return nil, nil, err
			}
		}
		ranked = rr.apply(ctx, query, ranked)
		out := diversify(ranked, &o)
		if len(out) >= o.TopK || !more || fetch >= maxFetch {
			return out, degraded, nil
		}
		fetch = min(4*fetch, maxFetch)
	}
}

// maxFetch bounds the results ranked for one search.
const maxFetch = 10000

// retrieve ranks up to fetch results under o, best first, with the memory
// signals rc (nil: none); more reports whether the store may hold more,
// degraded the embedder's error when BM25 answered alone.
func retrieve(ctx context.Context, r Retriever, query string, f index.Filter, o *Options, fetch int, rc *recall) (res []Result, more bool, degraded, err error) {
	wide := *o
	wide.TopK = fetch
	// With memory signals, one mode alone ranks a pool too, so that the
	// signals can lift a memory from below fetch.
	n := fetch
	if rc != nil {
		n = max(fetch, o.CandidatePool)
	}
	fullText := func() ([]Result, bool, error) {
		hits, err := r.FullText(ctx, query, n, f)
		if err != nil {
			return nil, false, err
		}
		res := single(hits, wide, true, rc)
		return res, len(hits) == n && len(res) == min(len(hits), fetch), nil
	}
	switch o.Mode {
	case FullText:
		res, more, err := fullText()
		return res, more, nil, err
	case Vector:
		hits, err := r.Vector(ctx, query, n, f)
		if unavailable(ctx, err) {
			if res, more, terr := fullText(); terr == nil {
				return res, more, err, nil
			}
		}
		if err != nil {
			return nil, false, nil, err
		}
		res := single(hits, wide, false, rc)
		return res, len(hits) == n && len(res) == min(len(hits), fetch), nil, nil
	}
	if res, ok, err := searchNative(ctx, r, query, f, &wide, rc); ok {
		if unavailable(ctx, err) {
			if res, more, terr := fullText(); terr == nil {
				return res, more, err, nil
			}
		}
		return res, len(res) == fetch, nil, err
	}
	pool := max(o.CandidatePool, fetch)
	var text, vec []driver.Hit
	var qv []float32 // the query's vector, when the vector side says it
	var terr, verr error
	done := make(chan struct{})
	go func() {
		defer close(done)
		vec, qv, verr = vectorLeg(ctx, r, query, pool, f)
	}()
	text, terr = r.FullText(ctx, query, pool, f)
	<-done
	if terr != nil && verr != nil {
		return nil, false, nil, errors.Join(terr, verr)
	}
	if terr != nil {
		return nil, false, nil, terr
	}
	if unavailable(ctx, verr) {
		// BM25 already answered: its candidates are the results, all of
		// them, as with fusion (diversification may skip some).
		wide.TopK = len(text)
		res := single(text, wide, true, rc)
		return res, len(text) == pool && len(res) >= fetch, verr, nil
	}
	if verr != nil {
		return nil, false, nil, verr
	}
	wide.TopK = len(text) + len(vec)
	res = rc.boost(refine(ctx, r, query, qv, text, vec, &wide))
	// Larger pools can only help when these were full and enough of their
	// candidates passed the threshold for diversification to have dropped
	// some.
	return res, (len(text) == pool || len(vec) == pool) && len(res) >= fetch, nil, nil
}

// single turns one ranked list into results, boosted by rc (nil: none),
// and cuts them to o.TopK.
func single(hits []driver.Hit, o Options, bm25 bool, rc *recall) []Result {
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
	out = rc.boost(out)
	if len(out) > o.TopK {
		out = out[:o.TopK]
	}
	return out
}

// sortResults orders by descending score; ties by better best rank, then id,
// so that equal inputs always give the same order.
//
// Results are large values: it sorts small keys and moves each result once,
// instead of swapping results (eval's depth-200 queries spent most of
// fusion's time there).
func sortResults(rs []Result) {
	keys := make([]sortKey, len(rs))
	sorted := true
	for i := range rs {
		keys[i] = sortKey{rs[i].Score, bestRank(rs[i].Explanation), rs[i].Record.ID, i}
		if sorted && i > 0 && keys[i].before(keys[i-1]) {
			sorted = false
		}
	}
	if sorted {
		return
	}
	slices.SortFunc(keys, func(a, b sortKey) int {
		switch {
		case a.before(b):
			return -1
		case b.before(a):
			return 1
		}
		return a.at - b.at // equal keys keep their order
	})
	moved := make([]Result, len(rs))
	for i, k := range keys {
		moved[i] = rs[k.at]
	}
	copy(rs, moved)
}

// sortKey is what sortResults compares of the result at index at.
type sortKey struct {
	score float64
	rank  int
	id    string
	at    int
}

// before reports whether k ranks before o: higher score, then better best
// rank, then smaller id.
func (k sortKey) before(o sortKey) bool {
	if k.score != o.score {
		return k.score > o.score
	}
	if k.rank != o.rank {
		return k.rank < o.rank
	}
	return k.id < o.id
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

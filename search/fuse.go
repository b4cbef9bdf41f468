package search

import (
	"fmt"
	"math"

	"github.com/ragmem/ragmem/index/driver"
)

// agreementDepth is how deep the two lists are compared for Options.Agreement.
const agreementDepth = 10

// Fuse merges a BM25 ranking and a vector ranking under o (defaults applied
// for zero fields; an automatic Alpha is DefaultAlpha here, as Fuse does not
// know the store: Search resolves it from the store's calibration first), applies the
// threshold and returns the top results.
//
// With every method a result first in both lists is ranked first. With a
// fixed alpha, relative fusion and RRF are also monotone in each list's
// scores: a result whose score rises in one list, all else equal, never
// falls behind a result it was ahead of. DBSF is not (a rising score widens
// its list's spread, which lifts the results below the mean), nor is
// per-query Agreement (a result's rise can change the two top-10 lists, and
// so alpha for every result); that is one reason neither is the default.
func Fuse(text, vec []driver.Hit, opts *Options) []Result {
	o := opts.withDefaults()
	byID := map[string]*Result{}
	var order []string
	get := func(h driver.Hit) *Result {
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
	alpha := o.Alpha
	if o.Agreement > 0 {
		alpha = math.Min(1, alpha+o.Agreement*agreement(text, vec, agreementDepth))
	}
	method := methodName(o.Fusion, o.RRFK, alpha, o.weightedBy, o.Agreement > 0, o.fedBack)
	var ts, vs scale
	switch o.Fusion {
	case DBSF:
		ts, vs = spread(text), spread(vec)
	default:
		ts, vs = minMax(text), minMax(vec)
	}
	k := float64(o.RRFK)
	for _, id := range order {
		r := byID[id]
		e := &r.Explanation
		var s float64
		switch o.Fusion {
		case RRF:
			// Weighted RRF: each list's reciprocal ranks are scaled by its
			// weight, 2·(1−alpha) for BM25 and 2·alpha for vectors, so alpha
			// 0.5 is plain RRF.
			if e.BM25Rank > 0 {
				s += 2 * (1 - alpha) / (k + float64(e.BM25Rank))
			}
			if e.VectorRank > 0 {
				s += 2 * alpha / (k + float64(e.VectorRank))
			}
		default:
			if e.BM25Rank > 0 {
				s += (1 - alpha) * ts.of(e.BM25Score)
			}
			if e.VectorRank > 0 {
				s += alpha * vs.of(e.VectorSimilarity)
			}
		}
		r.Score, e.Fused, e.Method = s, s, method
	}
	bestText := 0.0
	if len(text) > 0 {
		bestText = text[0].Score
	}
	out := make([]Result, 0, len(order))
	for _, id := range order {
		r := byID[id]
		if o.passes(&r.Explanation, bestText) {
			out = append(out, *r)
		}
	}
	sortResults(out)
	if len(out) > o.TopK {
		out = out[:o.TopK]
	}
	return out
}

// passes applies the similarity threshold to a fused result: it passes on
// either side, as a BM25 match scoring at least the threshold times the best
// BM25 score bestText, or as a vector match whose similarity to the query is
// at least the threshold.
func (o *Options) passes(e *Explanation, bestText float64) bool {
	if o.SimilarityThreshold < 0 {
		return true
	}
	textOK := e.BM25Rank > 0 && bestText > 0 && e.BM25Score/bestText >= o.SimilarityThreshold
	vecOK := e.VectorRank > 0 && e.VectorSimilarity >= o.SimilarityThreshold
	return textOK || vecOK
}

// methodName is the explanation's method of a hybrid search.
func methodName(f Fusion, rrfK int, alpha float64, by WeightSource, agreement bool, feedback int) string {
	why := ""
	switch {
	case by != "" && agreement:
		why = ", " + string(by) + "+agreement"
	case by != "":
		why = ", " + string(by)
	case agreement:
		why = ", agreement"
	}
	fb := ""
	if feedback > 0 {
		fb = fmt.Sprintf(", feedback=%d", feedback)
	}
	switch f {
	case RRF:
		if alpha == 0.5 && why == "" {
			return fmt.Sprintf("rrf(k=%d%s)", rrfK, fb)
		}
		return fmt.Sprintf("rrf(k=%d,alpha=%.2f%s%s)", rrfK, alpha, why, fb)
	case DBSF:
		return fmt.Sprintf("dbsf(alpha=%.2f%s%s)", alpha, why, fb)
	}
	return fmt.Sprintf("relative(alpha=%.2f%s%s)", alpha, why, fb)
}

// scale maps a list's scores onto [0, 1]; flat is what a degenerate scale
// (hi <= lo: a list whose scores are all equal) maps every score to.
type scale struct{ lo, hi, flat float64 }

// of maps s linearly so that lo maps to 0 and hi to 1 (a score outside
// [lo, hi] maps outside [0, 1]).
func (c scale) of(s float64) float64 {
	if c.hi <= c.lo {
		return c.flat
	}
	return (s - c.lo) / (c.hi - c.lo)
}

// minMax is relative-score fusion's scale: the list's lowest and highest
// scores. A list whose scores are all equal maps to 1: each member is as
// good as its best.
func minMax(hs []driver.Hit) scale {
	if len(hs) == 0 {
		return scale{}
	}
	c := scale{hs[0].Score, hs[0].Score, 1}
	for _, h := range hs[1:] {
		c.lo = math.Min(c.lo, h.Score)
		c.hi = math.Max(c.hi, h.Score)
	}
	return c
}

// spread is distribution-based score fusion's scale (DBSF, as Qdrant
// defines it): the list's mean minus and plus three standard deviations. A
// score beyond them is not clamped: an outlier keeps its lead. A list whose
// scores are all equal maps to 0.5, where DBSF maps a list's mean.
func spread(hs []driver.Hit) scale {
	if len(hs) == 0 {
		return scale{}
	}
	var mean float64
	for _, h := range hs {
		mean += h.Score
	}
	mean /= float64(len(hs))
	var v float64
	for _, h := range hs {
		v += (h.Score - mean) * (h.Score - mean)
	}
	sd := math.Sqrt(v / float64(len(hs)))
	return scale{mean - 3*sd, mean + 3*sd, 0.5}
}

// agreement is the share of the first n results of text that are also among
// the first n of vec.
func agreement(text, vec []driver.Hit, n int) float64 {
	top := make(map[string]bool, n)
	for _, h := range text[:min(n, len(text))] {
		top[h.Record.ID] = true
	}
	common := 0
	for _, h := range vec[:min(n, len(vec))] {
		if top[h.Record.ID] {
			common++
		}
	}
	return float64(common) / float64(n)
}

package eval

import (
	"math"
	"sort"
)

// The metrics below follow trec_eval (and so pytrec_eval and BEIR): a
// document is relevant when its grade is above zero, rankings are cut at k,
// and a query whose ranking is empty scores zero.

// NDCG returns nDCG@k of ranking against the graded judgements rel, with
// trec_eval's ndcg_cut definition: gain is the grade itself (not 2^grade−1),
// the discount of rank i (1-based) is log2(i+1), and the ideal ranking orders
// every relevant judged document by grade. A query without relevant
// documents scores 0. Documents repeated in ranking count once, at their
// first rank.
func NDCG(ranking []string, rel map[string]int, k int) float64 {
	if k <= 0 {
		return 0
	}
	var grades []int
	for _, g := range rel {
		if g > 0 {
			grades = append(grades, g)
		}
	}
	if len(grades) == 0 {
		return 0
	}
	sort.Sort(sort.Reverse(sort.IntSlice(grades)))
	var ideal float64
	for i, g := range grades {
		if i == k {
			break
		}
		ideal += float64(g) / math.Log2(float64(i+2))
	}
	var dcg float64
	for i, d := range dedupe(ranking, k) {
		if g := rel[d]; g > 0 {
			dcg += float64(g) / math.Log2(float64(i+2))
		}
	}
	return dcg / ideal
}

// Recall returns the fraction of the relevant documents of rel found in the
// first k of ranking (0 when rel has none).
func Recall(ranking []string, rel map[string]int, k int) float64 {
	total := 0
	for _, g := range rel {
		if g > 0 {
			total++
		}
	}
	if total == 0 || k <= 0 {
		return 0
	}
	found := 0
	for _, d := range dedupe(ranking, k) {
		if rel[d] > 0 {
			found++
		}
	}
	return float64(found) / float64(total)
}

// MRR returns the reciprocal rank of the first relevant document within the
// first k of ranking, or 0.
func MRR(ranking []string, rel map[string]int, k int) float64 {
	for i, d := range dedupe(ranking, k) {
		if rel[d] > 0 {
			return 1 / float64(i+1)
		}
	}
	return 0
}

// dedupe returns the first k distinct documents of ranking.
func dedupe(ranking []string, k int) []string {
	if k <= 0 {
		return nil
	}
	out := make([]string, 0, min(k, len(ranking)))
	seen := make(map[string]bool, min(k, len(ranking)))
	for _, d := range ranking {
		if len(out) == k {
			break
		}
		if !seen[d] {
			seen[d] = true
			out = append(out, d)
		}
	}
	return out
}

// Percentile returns the p-th percentile (0 < p <= 100) of xs by the
// nearest-rank method: the smallest value with at least p% of the values at
// or below it. xs is not modified; an empty slice gives 0.
func Percentile[T int64 | float64](xs []T, p float64) T {
	if len(xs) == 0 {
		return 0
	}
	s := append([]T(nil), xs...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	rank := int(math.Ceil(p / 100 * float64(len(s))))
	rank = max(1, min(rank, len(s)))
	return s[rank-1]
}

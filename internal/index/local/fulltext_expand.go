package local

import (
	"math"
	"sort"

	"github.com/blevesearch/bleve/v2/analysis"
)

// Query-side refinements of the BM25 ranking: RM3 pseudo-relevance feedback
// and a term-proximity boost. Both read the text of the best matches from
// the in-memory records and analyse it with the query analyzer, so the index
// needs neither term vectors nor stored fields.

// rm3Term reports whether an analysed term may become an expansion term:
// 2 to 20 characters of lower-case ASCII letters and digits (Anserini's rule).
func rm3Term(t string) bool {
	if len(t) < 2 || len(t) > 20 {
		return false
	}
	for i := 0; i < len(t); i++ {
		c := t[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// rm3MaxDocFraction drops expansion terms found in more than this fraction
// of the documents (Anserini's filter).
const rm3MaxDocFraction = 0.1

// feedback estimates an RM3 relevance model from the best documents of acc
// and returns q interpolated with it, or nil when there is nothing to learn
// from.
func (s *scorer) feedback(acc map[uint64]float64, q []qterm, qa analysis.Analyzer, body func(string) (string, bool)) ([]qterm, error) {
	fb := s.ft.fb
	top, err := s.top(acc, fb.Docs)
	if err != nil || len(top) == 0 {
		return nil, err
	}
	dfOK := map[string]bool{}
	rm := map[string]float64{}
	for _, h := range top {
		text, ok := body(h.id)
		if !ok {
			continue
		}
		counts := map[string]float64{}
		var total float64
		for _, t := range analyze(qa, text) {
			term := string(t.Term)
			ok, seen := dfOK[term]
			if !seen {
				ok = rm3Term(term)
				if ok {
					df, n, err := s.textDF(term)
					if err != nil {
						return nil, err
					}
					ok = float64(df) <= rm3MaxDocFraction*float64(n)
				}
				dfOK[term] = ok
			}
			if ok {
				counts[term]++
				total++
			}
		}
		for term, c := range counts {
			rm[term] += c / total * h.score
		}
	}
	if len(rm) == 0 {
		return nil, nil
	}
	exp := make([]qterm, 0, len(rm))
	for t, w := range rm {
		exp = append(exp, qterm{term: t, weight: w})
	}
	sort.Slice(exp, func(i, j int) bool {
		if exp[i].weight != exp[j].weight {
			return exp[i].weight > exp[j].weight
		}
		return exp[i].term < exp[j].term
	})
	exp = exp[:min(fb.Terms, len(exp))]
	var sumQ, sumE float64
	for _, t := range q {
		sumQ += t.weight
	}
	for _, t := range exp {
		sumE += t.weight
	}
	if sumE <= 0 || sumQ <= 0 {
		return nil, nil
	}
	out := make([]qterm, 0, len(q)+len(exp))
	at := map[string]int{}
	for _, t := range q {
		at[t.term] = len(out)
		out = append(out, qterm{term: t.term, weight: fb.OriginalWeight * t.weight / sumQ})
	}
	for _, t := range exp {
		w := (1 - fb.OriginalWeight) * t.weight / sumE
		if i, ok := at[t.term]; ok {
			out[i].weight += w
			continue
		}
		out = append(out, qterm{term: t.term, weight: w})
	}
	return out, nil
}

// proximityWindow is the largest distance in positions (stop words
// included) at which two query terms count as near each other.
const proximityWindow = 3

// proximityRescore adds the proximity score to hits and re-sorts them.
func (s *scorer) proximityRescore(hits []hit, qtoks analysis.TokenStream, qa analysis.Analyzer, body func(string) (string, bool)) {
	type pair struct{ a, b string }
	var pairs []pair
	seen := map[pair]bool{}
	for i := 1; i < len(qtoks); i++ {
		p := pair{string(qtoks[i-1].Term), string(qtoks[i].Term)}
		if p.a == p.b || seen[p] || seen[pair{p.b, p.a}] {
			continue
		}
		seen[p] = true
		pairs = append(pairs, p)
	}
	if len(pairs) == 0 {
		return
	}
	idfs := map[string]float64{}
	for _, p := range pairs {
		for _, t := range []string{p.a, p.b} {
			if _, ok := idfs[t]; !ok {
				df, n, err := s.textDF(t)
				if err != nil {
					return // leave the BM25 ranking as it is
				}
				idfs[t] = idf(n, df)
			}
		}
	}
	for i := range hits {
		text, ok := body(hits[i].id)
		if !ok {
			continue
		}
		pos := map[string][]int{}
		for _, t := range analyze(qa, text) {
			if _, want := idfs[string(t.Term)]; want {
				pos[string(t.Term)] = append(pos[string(t.Term)], t.Position)
			}
		}
		var prox float64
		for _, p := range pairs {
			c := float64(near(pos[p.a], pos[p.b], proximityWindow))
			if c > 0 {
				prox += math.Min(idfs[p.a], idfs[p.b]) * c / (c + s.ft.k1)
			}
		}
		hits[i].score += s.ft.proximity * prox
	}
	sortHits(hits)
}

// near counts the positions of a that have a position of b within w of
// them. Both are ascending.
func near(a, b []int, w int) int {
	n, j := 0, 0
	for _, p := range a {
		for j < len(b) && b[j] < p-w {
			j++
		}
		if j < len(b) && b[j] <= p+w {
			n++
		}
	}
	return n
}

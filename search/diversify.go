package search

import (
	"hash/fnv"
	"slices"
	"strings"
	"unicode"
)

// Diversification: the step after fusion (or after the single ranking of
// fulltext and vector searches) that decides which of the ranked chunks a
// result list shows. It never changes a score or the order of what it keeps.
//
//   - Identical chunks (the same text, up to white space) are shown once:
//     the best ranked; the sources of the others are listed in its AlsoAt.
//   - Near-duplicate pages collapse: when a chunk of another source has
//     nearly the same words as a chunk already shown (Jaccard similarity of
//     their word 3-grams at least NearDuplicate, both chunks at least
//     nearDupMinWords words long), that source is taken for a copy of the
//     shown one (a mirror, a print view, the same article under two URLs),
//     and every later chunk of it is collapsed into AlsoAt as well.
//   - At most MaxPerSource chunks of one source are shown; the next best
//     chunks of other sources take the places of the rest.
//   - With GroupBySource the shown chunks are ordered source by source
//     (sources in the order of their best chunk, chunks by score), for
//     display.

// NearDuplicate is the Jaccard similarity of word 3-grams above which two
// chunks of different sources are near duplicates.
const NearDuplicate = 0.8

// nearDupMinWords is the fewest words a chunk must have to be compared for
// near duplicates: 3-grams of a few words say too little.
const nearDupMinWords = 12

// DefaultMaxPerSource is the default of Options.MaxPerSource.
const DefaultMaxPerSource = 3

// diversifies reports whether the diversification step can drop results.
func (o *Options) diversifies() bool { return !o.KeepDuplicates || o.MaxPerSource > 0 }

// Diversify applies the diversification step (see the comment above) to
// results ranked best first, under o (defaults for zero fields), and returns
// at most o.TopK of them. It is what Search does after ranking; it is
// exported for callers that fuse rankings themselves.
func Diversify(results []Result, opts *Options) []Result {
	o := opts.withDefaults()
	return diversify(results, &o)
}

type shown struct {
	source string
	grams  []uint64 // sorted 3-gram hashes; nil when too short to compare
}

// sketch indexes the sampled 3-grams of the shown chunks, so that a
// candidate is compared exactly only with the chunks it shares many
// samples with: the step stays cheap when hundreds of results are ranked.
type sketch map[uint64][]int

// sampleFrom is the number of grams from which a chunk is sampled.
const sampleFrom = 64

// sample returns the grams a sketch keeps: all of a short chunk's, one in
// four (by hash) of a longer one's.
func sample(grams []uint64) []uint64 {
	if len(grams) < sampleFrom {
		return grams
	}
	out := make([]uint64, 0, len(grams)/3)
	for _, g := range grams {
		if sampled(g) {
			out = append(out, g)
		}
	}
	return out
}

// sampled reports whether a longer chunk's sample keeps gram g.
func sampled(g uint64) bool { return g%4 == 0 }

func diversify(results []Result, o *Options) []Result {
	out := make([]Result, 0, min(len(results), o.TopK))
	var kept []shown
	sk := sketch{}
	byText := map[uint64]int{}    // hash of the normalised text -> index in out
	copyOf := map[string]int{}    // a source found to copy a shown one -> index in out of its first match
	perSource := map[string]int{} // chunks shown per source
	for i := range results {
		if len(out) == o.TopK {
			break
		}
		r := results[i]
		src := r.Record.SourceURL
		if !o.KeepDuplicates {
			norm := normalizeText(r.Record.Content)
			h := hash64(norm)
			if j, ok := byText[h]; ok && norm != "" {
				out[j].addAlso(src)
				continue
			}
			if j, ok := copyOf[src]; ok {
				out[j].addAlso(src)
				continue
			}
			grams := shingles(norm)
			if j := nearest(kept, sk, src, grams); j >= 0 {
				copyOf[src] = j
				out[j].addAlso(src)
				continue
			}
			if o.MaxPerSource > 0 && perSource[src] >= o.MaxPerSource {
				continue
			}
			byText[h] = len(out)
			for _, g := range sample(grams) {
				sk[g] = append(sk[g], len(kept))
			}
			kept = append(kept, shown{source: src, grams: grams})
		} else if o.MaxPerSource > 0 && perSource[src] >= o.MaxPerSource {
			continue
		}
		perSource[src]++
		r.AlsoAt = nil
		out = append(out, r)
	}
	if o.GroupBySource {
		groupBySource(out)
	}
	return out
}

// addAlso records another source where the result's text also is.
func (r *Result) addAlso(src string) {
	if src == r.Record.SourceURL || slices.Contains(r.AlsoAt, src) {
		return
	}
	r.AlsoAt = append(r.AlsoAt, src)
}

// nearest returns the index of the first shown chunk of another source that
// grams nearly duplicates, or -1. Only chunks that share at least half of
// the candidate's sampled grams are compared exactly (a pair at the
// threshold shares about 80% of them). A shown chunk of sampleFrom grams or
// more is in the sketch by its sample only, so a shorter candidate (probed
// with all its grams) can meet it on the grams that sample keeps alone: it
// is compared when it shares half of those.
func nearest(kept []shown, sk sketch, src string, grams []uint64) int {
	if grams == nil {
		return -1
	}
	smp := sample(grams)
	inSample := 0 // the probed grams a long shown chunk can have in the sketch
	for _, g := range grams {
		if sampled(g) {
			inSample++
		}
	}
	hits := map[int]int{}
	for _, g := range smp {
		for _, j := range sk[g] {
			hits[j]++
		}
	}
	best := -1
	for j, n := range hits {
		need := len(smp)
		if len(kept[j].grams) >= sampleFrom {
			need = inSample
		}
		if 2*n < need || kept[j].source == src || kept[j].grams == nil || best >= 0 && j > best {
			continue
		}
		if jaccard(grams, kept[j].grams) >= NearDuplicate {
			best = j
		}
	}
	return best
}

// groupBySource orders rs source by source, sources in the order of their
// first (best) result, keeping the order within each source.
func groupBySource(rs []Result) {
	first := map[string]int{}
	for i, r := range rs {
		if _, ok := first[r.Record.SourceURL]; !ok {
			first[r.Record.SourceURL] = i
		}
	}
	slices.SortStableFunc(rs, func(a, b Result) int {
		return first[a.Record.SourceURL] - first[b.Record.SourceURL]
	})
}

// normalizeText collapses white space, so that chunks that differ only in
// it are identical.
func normalizeText(s string) string { return strings.Join(strings.Fields(s), " ") }

func hash64(s string) uint64 {
	h := fnv.New64a()
	_, _ = h.Write([]byte(s))
	return h.Sum64()
}

// shingles returns the sorted, distinct hashes of the lower-cased word
// 3-grams of a normalised text, or nil when it has fewer than
// nearDupMinWords words.
func shingles(norm string) []uint64 {
	words := strings.FieldsFunc(strings.ToLower(norm), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	})
	if len(words) < nearDupMinWords {
		return nil
	}
	hs := make([]uint64, len(words))
	for i, w := range words {
		hs[i] = hash64(w)
	}
	out := make([]uint64, 0, len(words)-2)
	for i := 0; i+2 < len(hs); i++ {
		out = append(out, mix(mix(hs[i], hs[i+1]), hs[i+2]))
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// mix combines two hashes (the finaliser of splitmix64 over their sum).
func mix(a, b uint64) uint64 {
	x := a*0x9e3779b97f4a7c15 + b
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	return x ^ x>>31
}

// jaccard is |a ∩ b| / |a ∪ b| of two sorted sets.
func jaccard(a, b []uint64) float64 {
	i, j, both := 0, 0, 0
	for i < len(a) && j < len(b) {
		switch {
		case a[i] == b[j]:
			both++
			i++
			j++
		case a[i] < b[j]:
			i++
		default:
			j++
		}
	}
	union := len(a) + len(b) - both
	if union == 0 {
		return 0
	}
	return float64(both) / float64(union)
}

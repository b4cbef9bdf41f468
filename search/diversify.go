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
	res    *Result
	source string
	grams  []uint64 // sorted 3-gram hashes; nil when too short to compare
}

func diversify(results []Result, o *Options) []Result {
	out := make([]Result, 0, min(len(results), o.TopK))
	var kept []shown
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
			if j := nearest(kept, src, grams); j >= 0 {
				copyOf[src] = j
				out[j].addAlso(src)
				continue
			}
			if o.MaxPerSource > 0 && perSource[src] >= o.MaxPerSource {
				continue
			}
			byText[h] = len(out)
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
// grams nearly duplicates, or -1.
func nearest(kept []shown, src string, grams []uint64) int {
	if grams == nil {
		return -1
	}
	for j := range kept {
		if kept[j].source != src && kept[j].grams != nil && jaccard(grams, kept[j].grams) >= NearDuplicate {
			return j
		}
	}
	return -1
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
	out := make([]uint64, 0, len(words)-2)
	for i := 0; i+2 < len(words); i++ {
		out = append(out, hash64(words[i]+" "+words[i+1]+" "+words[i+2]))
	}
	slices.Sort(out)
	return slices.Compact(out)
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

package search

import (
	"hash/fnv"
	"hash/maphash"
	"slices"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"
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
// Each gram's list of shown chunks is a chain through nodes (head maps a
// gram to its last node, plus one), so that adding a chunk allocates
// nothing once the query's first results have grown the pooled storage.
type sketch struct {
	head  map[uint64]int32
	nodes []sketchNode
}

type sketchNode struct {
	kept int32 // index of the shown chunk
	next int32 // previous node of the same gram, plus one; 0 ends the chain
}

// add records that shown chunk k has gram g.
func (s *sketch) add(g uint64, k int) {
	s.nodes = append(s.nodes, sketchNode{kept: int32(k), next: s.head[g]})
	s.head[g] = int32(len(s.nodes))
}

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

// dedup is diversify's working state: the shown chunks, their sketch and
// the per-query maps. It is pooled, so that a query ranking hundreds of
// chunks does not grow (and rehash) fresh maps each time. It is used by one
// query at a time.
type dedup struct {
	kept      []shown
	sk        sketch
	byText    map[uint64]int // hash of the normalised text -> index in out
	copyOf    map[string]int // a source found to copy a shown one -> index in out of its first match
	perSource map[string]int // chunks shown per source
	hits      []int32        // per kept chunk: sampled grams shared with the candidate
	touched   []int          // the kept chunks whose hits are not zero
	scratch   []uint64
}

var dedups = sync.Pool{New: func() any {
	return &dedup{sk: sketch{head: map[uint64]int32{}}, byText: map[uint64]int{}, copyOf: map[string]int{}, perSource: map[string]int{}}
}}

// release empties d, keeping its capacity, and returns it to the pool.
func (d *dedup) release() {
	clear(d.kept)
	d.kept = d.kept[:0]
	clear(d.sk.head)
	d.sk.nodes = d.sk.nodes[:0]
	clear(d.byText)
	clear(d.copyOf)
	clear(d.perSource)
	d.touched = d.touched[:0]
	dedups.Put(d)
}

func diversify(results []Result, o *Options) []Result {
	out := make([]Result, 0, min(len(results), o.TopK))
	d := dedups.Get().(*dedup)
	defer d.release()
	for i := range results {
		if len(out) == o.TopK {
			break
		}
		r := results[i]
		src := r.Record.SourceURL
		if !o.KeepDuplicates {
			fp := fingerprints.get(r.Record.Content, &d.scratch)
			h, empty, grams := fp.hash, fp.empty, fp.grams
			if j, ok := d.byText[h]; ok && !empty {
				out[j].addAlso(src)
				continue
			}
			if j, ok := d.copyOf[src]; ok {
				out[j].addAlso(src)
				continue
			}
			if j := d.nearest(src, &fp); j >= 0 {
				d.copyOf[src] = j
				out[j].addAlso(src)
				continue
			}
			if o.MaxPerSource > 0 && d.perSource[src] >= o.MaxPerSource {
				continue
			}
			d.byText[h] = len(out)
			for _, g := range fp.smp {
				d.sk.add(g, len(d.kept))
			}
			d.kept = append(d.kept, shown{source: src, grams: grams})
		} else if o.MaxPerSource > 0 && d.perSource[src] >= o.MaxPerSource {
			continue
		}
		d.perSource[src]++
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
func (d *dedup) nearest(src string, f *fp) int {
	grams, smp, inSample := f.grams, f.smp, f.inSample
	if grams == nil {
		return -1
	}
	if cap(d.hits) < len(d.kept) {
		d.hits = make([]int32, len(d.kept), 2*len(d.kept))
	}
	hits := d.hits[:len(d.kept)]
	for _, g := range smp {
		for n := d.sk.head[g]; n != 0; n = d.sk.nodes[n-1].next {
			j := int(d.sk.nodes[n-1].kept)
			if hits[j] == 0 {
				d.touched = append(d.touched, j)
			}
			hits[j]++
		}
	}
	best := -1
	for _, j := range d.touched {
		n := int(hits[j])
		hits[j] = 0
		need := len(smp)
		if len(d.kept[j].grams) >= sampleFrom {
			need = inSample
		}
		if 2*n < need || d.kept[j].source == src || d.kept[j].grams == nil || best >= 0 && j > best {
			continue
		}
		if jaccard(grams, d.kept[j].grams) >= NearDuplicate {
			best = j
		}
	}
	d.touched = d.touched[:0]
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

// fp is a chunk text's fingerprint (see fingerprint); grams is never
// changed once made.
type fp struct {
	hash  uint64
	empty bool
	grams []uint64
	smp   []uint64 // sample(grams)
	// inSample is how many of grams a sketch keeps of a long chunk (see
	// nearest).
	inSample int
}

// fpCache keeps the fingerprints of the texts diversified last, by a hash of
// the whole text: a search ranks many of the chunks the previous ones did
// (an eval's queries over one collection, a user's follow-up questions), and
// hashing a text costs a small part of fingerprinting it. It holds at most
// fpCacheSize texts, the oldest dropped first, and is safe for concurrent
// use.
type fpCache struct {
	seed  maphash.Seed
	mu    sync.Mutex
	m     map[uint64]fp
	order []uint64 // keys, oldest first, as a ring from next
	next  int
}

const fpCacheSize = 4096

var fingerprints = &fpCache{seed: maphash.MakeSeed(), m: map[uint64]fp{}}

// get returns text's fingerprint, computed with scratch when not cached.
func (c *fpCache) get(text string, scratch *[]uint64) fp {
	k := maphash.String(c.seed, text)
	c.mu.Lock()
	f, ok := c.m[k]
	c.mu.Unlock()
	if ok {
		return f
	}
	f.hash, f.empty, f.grams = fingerprint(text, scratch)
	f.grams = slices.Clone(f.grams) // out of the scratch
	f.smp = sample(f.grams)
	for _, g := range f.grams {
		if sampled(g) {
			f.inSample++
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.m[k]; ok {
		return f
	}
	if len(c.order) < fpCacheSize {
		c.order = append(c.order, k)
	} else {
		delete(c.m, c.order[c.next])
		c.order[c.next] = k
		c.next = (c.next + 1) % fpCacheSize
	}
	c.m[k] = f
	return f
}

// FNV-1a, 64 bits (hash/fnv's, inlined for fingerprint's single pass).
const (
	fnvOffset64 = 14695981039346656037
	fnvPrime64  = 1099511628211
)

// fingerprint is what diversification compares of a chunk's text, in one
// pass and without allocating (but for *scratch's growth): the hash of
// normalizeText(text) (hash64), whether that is empty, and shingles(that),
// in *scratch (valid until the next call).
func fingerprint(text string, scratch *[]uint64) (h uint64, empty bool, grams []uint64) {
	h = fnvOffset64
	empty = true
	space := false
	words := (*scratch)[:0]
	w, inWord := uint64(fnvOffset64), false
	var buf [utf8.UTFMax]byte
	for i := 0; i < len(text); {
		r, size := rune(text[i]), 1
		if r >= utf8.RuneSelf {
			r, size = utf8.DecodeRuneInString(text[i:])
		}
		if unicode.IsSpace(r) {
			space = true
		} else {
			if space && !empty {
				h = (h ^ ' ') * fnvPrime64
			}
			space, empty = false, false
			for j := i; j < i+size; j++ {
				h = (h ^ uint64(text[j])) * fnvPrime64
			}
		}
		i += size
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			lr := unicode.ToLower(r)
			n := utf8.EncodeRune(buf[:], lr)
			for _, b := range buf[:n] {
				w = (w ^ uint64(b)) * fnvPrime64
			}
			inWord = true
		} else if inWord {
			words = append(words, w)
			w, inWord = fnvOffset64, false
		}
	}
	if inWord {
		words = append(words, w)
	}
	if len(words) < nearDupMinWords {
		*scratch = words
		return h, empty, nil
	}
	n := len(words)
	for i := 0; i+2 < n; i++ {
		words = append(words, mix(mix(words[i], words[i+1]), words[i+2]))
	}
	grams = words[n:]
	slices.Sort(grams)
	grams = slices.Compact(grams)
	*scratch = words
	return h, empty, grams
}

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

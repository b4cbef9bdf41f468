package local

import (
	"container/heap"
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"reflect"
	"sort"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/analysis"
	"github.com/blevesearch/bleve/v2/index/scorch"
	bleveindex "github.com/blevesearch/bleve_index_api"
	segment "github.com/blevesearch/scorch_segment_api/v2"
	"github.com/ragmem/ragmem/index"
)

// BM25 as Lucene computes it (BM25Similarity since Lucene 8, used by
// Anserini), for a query of weighted terms q:
//
//	score(D) = Σ_{t∈q} w_t · idf(t) · tf / (tf + k1·B(D))
//	idf(t)   = ln(1 + (N − df + 0.5) / (df + 0.5))
//
// tf is the term's frequency in D's field, N the number of documents with
// the field. The query weight w_t is the term's count in the query
// (Anserini's bag of words), or its RM3 weight. B(D) normalises for the
// document's length |D| (tokens) in one of two ways:
//
//	B(D) = 1 − b + b·|D|/avgdl                      Lucene's, with a given b
//	B(D) = v(D)/mv² + (1 − 1/mv)·|D|/avgdl          automatic (the default)
//
// The automatic form is BM25-VA (Lipani, Lupu, Hanbury and Aizawa,
// "Verboseness Fission for BM25 Document Length Normalization", ICTIR 2015):
// v(D) is D's verbosity, its tokens per distinct term, and mv the mean
// verbosity of the field's documents. A document is long because it says
// more (more distinct terms: it may well match more queries) or because it
// repeats itself (a verbose answer that names a topic ten times); the first
// deserves little normalisation and the second a lot. The mean verbosity
// decides how much of the length to discount, so the normalisation comes
// from the store's own text, without a parameter fitted to a collection, and
// follows the store as it changes: a store of short conversation turns
// (mv ≈ 1.05) is hardly normalised, one of long, repetitive answers is. Both
// forms give an average document B = 1.
//
// Unlike Lucene, field lengths are exact, not quantised to a byte. The
// context field of memories is never length-normalised (B = 1): its length
// is that of the turns around the memory, clipped by whoever wrote it.

// fieldStats are a field's collection statistics.
type fieldStats struct {
	docs     uint64  // documents with the field
	sumLen   uint64  // total tokens
	texts    uint64  // documents with at least one token
	sumVerb  float64 // their verbosities (tokens per distinct term), summed
	distinct []uint32
	// distinct holds each document's number of distinct terms, by global
	// document number (scorch); byID does for other index readers.
	byID map[string]uint32
}

func (s fieldStats) avgdl() float64 {
	if s.docs == 0 {
		return 1
	}
	return math.Max(float64(s.sumLen)/float64(s.docs), 1e-9)
}

// meanVerbosity is mv, the mean tokens per distinct term of the field's
// documents (1 when none has text).
func (s fieldStats) meanVerbosity() float64 {
	if s.texts == 0 {
		return 1
	}
	return math.Max(1, s.sumVerb/float64(s.texts))
}

// distinctOf returns the number of distinct terms the field of document id
// has (0 when unknown).
func (s *fieldStats) distinctOf(id bleveindex.IndexInternalID) uint32 {
	if s.byID != nil {
		return s.byID[string(id)]
	}
	if len(id) == 8 {
		if n := binary.BigEndian.Uint64(id); n < uint64(len(s.distinct)) {
			return s.distinct[n]
		}
	}
	return 0
}

// add counts one document whose marker posting has frequency u (distinct
// terms) and norm norm.
func (s *fieldStats) add(u uint64, norm float64) {
	l := fieldLength(norm) - float64(u)
	s.docs++
	if l <= 0 {
		return
	}
	s.sumLen += uint64(l)
	s.texts++
	s.sumVerb += l / float64(u)
}

// collectionStats caches the statistics of one index snapshot.
type collectionStats struct {
	reader                       bleveindex.IndexReader // the snapshot they were computed on
	body, memory, title, context fieldStats
}

// fieldLength recovers a field's token count from a posting's norm, which
// bleve computes as 1/sqrt(length) and keeps as a float32.
func fieldLength(norm float64) float64 {
	if norm <= 0 || math.IsNaN(norm) {
		return 1
	}
	return math.Round(1 / (norm * norm))
}

// readFieldStats walks the marker's postings: one per document with the
// field, its frequency the document's distinct terms, its length including
// the markers.
func readFieldStats(ctx context.Context, r bleveindex.IndexReader, field string) (fieldStats, error) {
	tfr, err := r.TermFieldReader(ctx, []byte(markerTerm), field, true, true, false)
	if err != nil {
		return fieldStats{}, err
	}
	defer tfr.Close()
	s := fieldStats{byID: map[string]uint32{}}
	var tfd bleveindex.TermFieldDoc
	for {
		d, err := tfr.Next(tfd.Reset())
		if err != nil {
			return fieldStats{}, err
		}
		if d == nil {
			return s, nil
		}
		s.add(d.Freq, d.Norm)
		s.byID[string(d.ID)] = uint32(d.Freq)
	}
}

func (ft *fullText) collection(ctx context.Context, r bleveindex.IndexReader) (collectionStats, error) {
	ft.statsMu.Lock()
	defer ft.statsMu.Unlock()
	if ft.stats.reader == r {
		return ft.stats, nil
	}
	var cs collectionStats
	var err error
	if snap, ok := r.(*scorch.IndexSnapshot); ok {
		cs, err = ft.segmentedStats(snap)
	} else {
		cs, err = ft.walkStats(ctx, r)
	}
	if err != nil {
		return cs, err
	}
	cs.reader = r
	ft.stats = cs
	return cs, nil
}

// walkStats reads the statistics from the whole index through r.
func (ft *fullText) walkStats(ctx context.Context, r bleveindex.IndexReader) (collectionStats, error) {
	var cs collectionStats
	var err error
	if cs.body, err = readFieldStats(ctx, r, fieldBody); err != nil {
		return cs, err
	}
	if cs.memory, err = readFieldStats(ctx, r, fieldMemory); err != nil {
		return cs, err
	}
	if ft.titleWeight > 0 {
		if cs.title, err = readFieldStats(ctx, r, fieldTitle); err != nil {
			return cs, err
		}
	}
	if ft.ctxWeight > 0 {
		if cs.context, err = readFieldStats(ctx, r, fieldContext); err != nil {
			return cs, err
		}
	}
	return cs, nil
}

// segKey identifies what a segment's statistics were computed on: segments
// are immutable and their deletions only grow, so the segment and the number
// of its deleted documents identify its live documents. The segment is
// identified by its address; segStat keeps it referenced, so that no other
// segment can be allocated at that address while the entry exists.
type segKey struct {
	addr    uintptr
	deleted uint64
}

type segStat struct {
	seg                          segment.Segment // keeps addr in use
	body, memory, title, context fieldStats      // distinct: by the segment's own document numbers
}

// segmentedStats sums per-segment statistics, reusing those of segments the
// previous snapshot already had. Under writes every batch makes a new
// snapshot, but it only adds a small segment (or deletes from one), and a
// merge replaces several segments by one: recounting the whole index for
// every new snapshot cost about 5% of the CPU of a mixed read/write load.
// Each field's distinct-term counts are laid end to end in segment order,
// which is how scorch numbers a snapshot's documents.
func (ft *fullText) segmentedStats(snap *scorch.IndexSnapshot) (collectionStats, error) {
	var cs collectionStats
	segs := snap.Segments()
	next := make(map[segKey]segStat, len(ft.segStats)+1)
	total := 0
	for _, ss := range segs {
		total += int(ss.Segment().Count())
	}
	fields := []*fieldStats{&cs.body, &cs.memory, &cs.title, &cs.context}
	for _, f := range fields[:3] {
		f.distinct = make([]uint32, 0, total)
	}
	for _, ss := range segs {
		var deleted uint64
		if d := ss.Deleted(); d != nil {
			deleted = d.GetCardinality()
		}
		seg := ss.Segment()
		var k segKey
		if v := reflect.ValueOf(seg); v.Kind() == reflect.Pointer {
			k = segKey{v.Pointer(), deleted}
		}
		st, ok := ft.segStats[k]
		if !ok || k.addr == 0 {
			st = segStat{seg: seg}
			var err error
			if st.body, err = segmentFieldStats(ss, fieldBody); err != nil {
				return cs, err
			}
			if st.memory, err = segmentFieldStats(ss, fieldMemory); err != nil {
				return cs, err
			}
			if ft.titleWeight > 0 {
				if st.title, err = segmentFieldStats(ss, fieldTitle); err != nil {
					return cs, err
				}
			}
			if ft.ctxWeight > 0 {
				if st.context, err = segmentFieldStats(ss, fieldContext); err != nil {
					return cs, err
				}
			}
		}
		if k.addr != 0 {
			next[k] = st
		}
		n := int(seg.Count())
		for i, f := range []*fieldStats{&st.body, &st.memory, &st.title, &st.context} {
			c := fields[i]
			c.docs += f.docs
			c.sumLen += f.sumLen
			c.texts += f.texts
			c.sumVerb += f.sumVerb
			if i < 3 {
				d := f.distinct
				if len(d) < n {
					d = append(d[:len(d):len(d)], make([]uint32, n-len(d))...)
				}
				c.distinct = append(c.distinct, d[:n]...)
			}
		}
	}
	ft.segStats = next // only the current segments: merged-away ones are dropped
	return cs, nil
}

// segmentFieldStats walks the marker's postings in one segment, skipping its
// deleted documents, as readFieldStats does across the index; distinct is
// by the segment's document numbers (only as long as its last document with
// the field).
func segmentFieldStats(ss *scorch.SegmentSnapshot, field string) (fieldStats, error) {
	var s fieldStats
	dict, err := ss.Segment().Dictionary(field)
	if err != nil || dict == nil {
		return s, err
	}
	pl, err := dict.PostingsList([]byte(markerTerm), ss.Deleted(), nil)
	if err != nil || pl == nil {
		return s, err
	}
	it := pl.Iterator(true, true, false, nil)
	for {
		p, err := it.Next()
		if err != nil {
			return fieldStats{}, err
		}
		if p == nil {
			return s, nil
		}
		s.add(p.Frequency(), p.Norm())
		n := int(p.Number())
		if n >= len(s.distinct) {
			s.distinct = append(s.distinct, make([]uint32, n+1-len(s.distinct))...)
		}
		s.distinct[n] = uint32(p.Frequency())
	}
}

// qterm is one term of a weighted query.
type qterm struct {
	term   string
	weight float64
}

// analyze runs the query analyzer over text and returns its tokens.
func analyze(a analysis.Analyzer, text string) analysis.TokenStream {
	return a.Analyze([]byte(text))
}

// bagOfWords turns tokens into weighted terms, in order of first
// occurrence, each weighted by its count.
func bagOfWords(toks analysis.TokenStream) []qterm {
	var q []qterm
	at := map[string]int{}
	for _, t := range toks {
		s := string(t.Term)
		if i, ok := at[s]; ok {
			q[i].weight++
			continue
		}
		at[s] = len(q)
		q = append(q, qterm{term: s, weight: 1})
	}
	return q
}

// docKeys maps bleve's internal ids (8 bytes in scorch) to map keys and back.
type docKeys struct {
	ids  map[string]uint64
	back []bleveindex.IndexInternalID
}

const genericKey = uint64(1) << 63

func (k *docKeys) key(id bleveindex.IndexInternalID) uint64 {
	if len(id) == 8 && id[0]&0x80 == 0 {
		return binary.BigEndian.Uint64(id)
	}
	if k.ids == nil {
		k.ids = map[string]uint64{}
	}
	if v, ok := k.ids[string(id)]; ok {
		return v
	}
	v := genericKey | uint64(len(k.back))
	k.ids[string(id)] = v
	k.back = append(k.back, append(bleveindex.IndexInternalID(nil), id...))
	return v
}

func (k *docKeys) id(key uint64) bleveindex.IndexInternalID {
	if key&genericKey != 0 {
		return k.back[key&^genericKey]
	}
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], key)
	return b[:]
}

// scorer holds the state of one search against one index snapshot.
type scorer struct {
	ft    *fullText
	ctx   context.Context
	r     bleveindex.IndexReader
	stats collectionStats
	keys  docKeys
	// allow, when non-nil, is the set of documents the filter admits; deny
	// the set it rejects. At most one is set.
	allow, deny map[uint64]bool
}

// textDF returns the document frequency of term in the text of any record
// (knowledge or memory) and the number of records with text.
func (s *scorer) textDF(term string) (df, n uint64, err error) {
	for _, f := range []string{fieldBody, fieldMemory} {
		d, err := s.df(f, term)
		if err != nil {
			return 0, 0, err
		}
		df += d
	}
	return df, s.stats.body.docs + s.stats.memory.docs, nil
}

// df returns the document frequency of term in field.
func (s *scorer) df(field, term string) (uint64, error) {
	tfr, err := s.r.TermFieldReader(s.ctx, []byte(term), field, false, false, false)
	if err != nil {
		return 0, err
	}
	defer tfr.Close()
	return tfr.Count(), nil
}

func idf(n, df uint64) float64 {
	return math.Log(1 + (float64(n)-float64(df)+0.5)/(float64(df)+0.5))
}

// accumulate adds scale · BM25(q) over field to acc, with parameters k1
// and b (bAuto: the field's own normalisation, BM25-VA).
func (s *scorer) accumulate(acc map[uint64]float64, field string, fs *fieldStats, q []qterm, scale, k1, b float64) error {
	if fs.docs == 0 {
		return nil
	}
	avgdl := fs.avgdl()
	mv := fs.meanVerbosity()
	var tfd bleveindex.TermFieldDoc
	for _, t := range q {
		if err := s.ctx.Err(); err != nil {
			return err
		}
		tfr, err := s.r.TermFieldReader(s.ctx, []byte(t.term), field, true, b != 0, false)
		if err != nil {
			return err
		}
		w := scale * t.weight * idf(fs.docs, tfr.Count())
		for {
			d, err := tfr.Next(tfd.Reset())
			if err != nil {
				_ = tfr.Close()
				return err
			}
			if d == nil {
				break
			}
			tf := float64(d.Freq)
			norm := 1.0
			if b != 0 {
				u := float64(max(fs.distinctOf(d.ID), 1))
				dl := math.Max(fieldLength(d.Norm)-u, u)
				if b == bAuto {
					norm = dl/u/(mv*mv) + (1-1/mv)*dl/avgdl
				} else {
					norm = 1 - b + b*dl/avgdl
				}
			}
			acc[s.keys.key(d.ID)] += w * tf / (tf + k1*norm)
		}
		if err := tfr.Close(); err != nil {
			return err
		}
	}
	return nil
}

// scores returns the BM25 score of every matching document for q.
func (s *scorer) scores(q []qterm) (map[uint64]float64, error) {
	// The accumulator is sized for every document the terms' postings may
	// name (at most the records with text): growing it as they arrive
	// rehashed it over and over, most of the cost of a query of common
	// words in a large store.
	var hint uint64
	for _, t := range q {
		df, n, err := s.textDF(t.term)
		if err != nil {
			return nil, err
		}
		hint = min(hint+df, n)
	}
	acc := make(map[uint64]float64, max(256, hint))
	ft := s.ft
	if err := s.accumulate(acc, fieldBody, &s.stats.body, q, 1, ft.k1, ft.b); err != nil {
		return nil, err
	}
	if err := s.accumulate(acc, fieldMemory, &s.stats.memory, q, 1, ft.k1, ft.mb); err != nil {
		return nil, err
	}
	if ft.titleWeight > 0 {
		if err := s.accumulate(acc, fieldTitle, &s.stats.title, q, ft.titleWeight, ft.k1, ft.b); err != nil {
			return nil, err
		}
	}
	if ft.ctxWeight > 0 {
		// Only memories have a context.
		if err := s.accumulate(acc, fieldContext, &s.stats.context, q, ft.ctxWeight, ft.k1, 0); err != nil {
			return nil, err
		}
	}
	return acc, nil
}

// hit is a scored document.
type hit struct {
	key   uint64
	score float64
	id    string // external id, once resolved
}

// hitHeap is a min-heap by (score, then larger key first) for top-k selection.
type hitHeap []hit

func (h hitHeap) Len() int { return len(h) }
func (h hitHeap) Less(i, j int) bool {
	if h[i].score != h[j].score {
		return h[i].score < h[j].score
	}
	return h[i].key > h[j].key
}
func (h hitHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *hitHeap) Push(x any)   { *h = append(*h, x.(hit)) }
func (h *hitHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// top returns the k best admitted documents of acc with their external
// ids, best first (ties by external id).
func (s *scorer) top(acc map[uint64]float64, k int) ([]hit, error) {
	h := make(hitHeap, 0, min(k, len(acc)))
	// left holds the documents left out that scored as much as the list's
	// last when they were left out: the last's score only rises, so every
	// document outside the final list that ties with its last is among them.
	var left []hit
	for key, sc := range acc {
		if s.allow != nil && !s.allow[key] || s.deny != nil && s.deny[key] {
			continue
		}
		x := hit{key: key, score: sc}
		switch {
		case len(h) < k:
			heap.Push(&h, x)
		case sc > h[0].score || sc == h[0].score && key < h[0].key:
			out := h[0]
			h[0] = x
			heap.Fix(&h, 0)
			if out.score == h[0].score {
				left = append(left, out)
			}
		case sc == h[0].score:
			left = append(left, x)
		}
	}
	out := []hit(h)
	for i := range out {
		id, err := s.r.ExternalID(s.keys.id(out[i].key))
		if err != nil {
			return nil, err
		}
		out[i].id = id
	}
	if len(left) > 0 {
		var err error
		if out, err = s.settleTies(left, out); err != nil {
			return nil, err
		}
	}
	sortHits(out)
	return out, nil
}

// settleTies makes the cut of a full top-k list independent of bleve's
// internal numbering, which follows the order segments were built and
// merged in: when documents left out (left, see top) score exactly as much
// as the list's last, the ones kept among all that tie are those with the
// smallest external ids, as sortHits orders them. Without it, the same
// query over the same records could return different documents from run to
// run.
func (s *scorer) settleTies(left, out []hit) ([]hit, error) {
	last := out[0].score
	for _, x := range out[1:] {
		last = min(last, x.score)
	}
	kept := out[:0:0]
	var tied []hit
	for _, x := range out {
		if x.score == last {
			tied = append(tied, x)
		} else {
			kept = append(kept, x)
		}
	}
	slots := len(tied)
	for _, x := range left {
		if x.score != last {
			continue
		}
		id, err := s.r.ExternalID(s.keys.id(x.key))
		if err != nil {
			return nil, err
		}
		x.id = id
		tied = append(tied, x)
	}
	if len(tied) == slots {
		return out, nil
	}
	sort.Slice(tied, func(i, j int) bool { return tied[i].id < tied[j].id })
	return append(kept, tied[:slots]...), nil
}

func sortHits(hs []hit) {
	sort.Slice(hs, func(i, j int) bool {
		if hs[i].score != hs[j].score {
			return hs[i].score > hs[j].score
		}
		return hs[i].id < hs[j].id
	})
}

// postings adds every document of term in field to set.
func (s *scorer) postings(set map[uint64]bool, field, term string) error {
	tfr, err := s.r.TermFieldReader(s.ctx, []byte(term), field, false, false, false)
	if err != nil {
		return err
	}
	defer tfr.Close()
	var tfd bleveindex.TermFieldDoc
	for {
		d, err := tfr.Next(tfd.Reset())
		if err != nil {
			return err
		}
		if d == nil {
			return nil
		}
		set[s.keys.key(d.ID)] = true
	}
}

// setFilter turns the doc-type and source parts of f into the allow or deny
// set, whichever is smaller. Attribute filters are left to the caller.
func (s *scorer) setFilter(f *index.Filter) error {
	if f.SourceURL != "" {
		s.allow = map[uint64]bool{}
		if err := s.postings(s.allow, fieldSource, f.SourceURL); err != nil {
			return err
		}
		// Doc types are then checked by the caller against the records:
		// one source's chunks are few.
		return nil
	}
	if len(f.DocTypes) == 0 {
		return nil
	}
	want := map[string]bool{}
	for _, t := range f.DocTypes {
		want[t] = true
	}
	dict, err := s.r.FieldDict(fieldDocType)
	if err != nil {
		return err
	}
	var in, out []string
	var nIn, nOut uint64
	for {
		e, err := dict.Next()
		if err != nil {
			_ = dict.Close()
			return err
		}
		if e == nil {
			break
		}
		if want[e.Term] {
			in, nIn = append(in, e.Term), nIn+e.Count
		} else {
			out, nOut = append(out, e.Term), nOut+e.Count
		}
	}
	if err := dict.Close(); err != nil {
		return err
	}
	if len(out) == 0 {
		return nil
	}
	terms := out
	if nIn <= nOut {
		s.allow, terms = map[uint64]bool{}, in
	} else {
		s.deny = map[uint64]bool{}
	}
	set := s.allow
	if set == nil {
		set = s.deny
	}
	for _, t := range terms {
		if err := s.postings(set, fieldDocType, t); err != nil {
			return err
		}
	}
	return nil
}

// search returns the ids and BM25 scores of the best k matches of text under
// f, best first. body, when the configuration needs documents' text
// (proximity, feedback), returns a record's analysed text by id.
func (ft *fullText) search(ctx context.Context, bi bleve.Index, text string, k int, f *index.Filter, body func(id string) (string, bool)) ([]string, []float64, error) {
	ids, scores, err := ft.searchIndex(ctx, bi, text, k, f, body)
	if err != nil {
		return nil, nil, fmt.Errorf("index: full-text search: %w", err)
	}
	return ids, scores, nil
}

// warm computes the collection statistics of bi's current snapshot, which
// the first search would otherwise compute (a walk of one posting per
// document and field).
func (ft *fullText) warm(ctx context.Context, bi bleve.Index) error {
	adv, err := bi.Advanced()
	if err != nil {
		return err
	}
	r, err := adv.Reader()
	if err != nil {
		return err
	}
	defer r.Close()
	_, err = ft.collection(ctx, r)
	return err
}

func (ft *fullText) searchIndex(ctx context.Context, bi bleve.Index, text string, k int, f *index.Filter, body func(id string) (string, bool)) ([]string, []float64, error) {
	if k <= 0 {
		return nil, nil, nil
	}
	qa := bi.Mapping().AnalyzerNamed(analyzerQuery)
	if qa == nil {
		return nil, nil, fmt.Errorf("the index has no %s analyzer", analyzerQuery)
	}
	toks := analyze(qa, text)
	q := bagOfWords(toks)
	if len(q) == 0 {
		return nil, nil, nil
	}
	adv, err := bi.Advanced()
	if err != nil {
		return nil, nil, err
	}
	r, err := adv.Reader()
	if err != nil {
		return nil, nil, err
	}
	defer r.Close()
	s := &scorer{ft: ft, ctx: ctx, r: r}
	if s.stats, err = ft.collection(ctx, r); err != nil {
		return nil, nil, err
	}
	if err := s.setFilter(f); err != nil {
		return nil, nil, err
	}
	acc, err := s.scores(q)
	if err != nil {
		return nil, nil, err
	}
	if ft.fb != nil && body != nil {
		fbq, err := s.feedback(acc, q, qa, body)
		if err != nil {
			return nil, nil, err
		}
		if fbq != nil {
			if acc, err = s.scores(fbq); err != nil {
				return nil, nil, err
			}
		}
	}
	depth := k
	prox := ft.proximity > 0 && body != nil && len(q) > 1
	if prox {
		depth = max(k, ft.proxDepth)
	}
	hits, err := s.top(acc, depth)
	if err != nil {
		return nil, nil, err
	}
	if prox {
		// Only the best proxDepth are boosted; the boost is never negative,
		// so they stay above the rest.
		s.proximityRescore(hits[:min(len(hits), ft.proxDepth)], toks, qa, body)
		sortHits(hits)
		hits = hits[:min(k, len(hits))]
	}
	ids := make([]string, len(hits))
	scores := make([]float64, len(hits))
	for i, h := range hits {
		ids[i], scores[i] = h.id, h.score
	}
	return ids, scores, nil
}

// bodyText returns the text bleve indexes in the body field of record id.
func (b *Backend) bodyText(id string) (string, bool) {
	b.mu.RLock()
	defer b.mu.RUnlock()
	r, ok := b.records[id]
	if !ok {
		return "", false
	}
	s, _ := bleveDoc(r)[textField(r)].(string)
	return s, true
}

package search

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/ragmem/ragmem/index"
	"github.com/ragmem/ragmem/index/driver"
	"github.com/ragmem/ragmem/internal/embed"
	"github.com/ragmem/ragmem/internal/index/engine"
)

// Calibration of the vector weight.
//
// How much the vector ranking should count against BM25's differs from
// store to store and embedder to embedder: the same small model that finds
// short conversation turns well drowns in long scientific abstracts, and an
// embedder that matches words repeats BM25 less precisely on one collection
// and matches what BM25 misses (a typo, a word's other form) on another. So
// each store measures it on its own content, for each document type it
// holds (knowledge and memories are searched apart and differ): it draws
// chunks at random and asks a pseudo-question of each, as a reader who
// remembers a passage asks about it: two of its more telling words (drawn
// in proportion to their frequency in the chunk times their rarity in the
// store), up to two of the words around it (a memory's context: a question
// about a turn often names what was said just before), and one common word
// of the store, in random order. A store of conversations asks its own
// questions: where its turns say their session and place (index.AttrSession,
// AttrTurn) and at least minAsked of them are questions answered by the next
// turn, those questions are asked instead, and the answering turn is the one
// to find (the question's own turn left out). Both rankings answer every
// question, and the weight is the one whose fused ranking puts the source
// to find highest (mean reciprocal rank at 10) over a grid from
// DefaultAlpha (0.1) to 0.9, the smallest of those within one question's
// worth of the best (a difference of less than one question found at rank
// 1 is chance). In a chat, whose turns say their role (index.AttrRole), the
// questions are drawn from the user's turns instead: what a user asks their
// assistant's memory is what they said, often in passing in a short turn,
// not the long answers around it (and the chat's own questions, which the
// assistant answered, are not asked). At the weight chosen, the same
// questions decide whether pseudo-relevance feedback (feedback.go) stays
// on. No constant is fitted to a collection: the
// store's text decides, and the calibration is measured again as the store
// grows ([Calibrator]).

// Calibration constants.
const (
	// CalibrationKey is the store setting that holds the calibration.
	CalibrationKey = "search.fusion"
	// MinCalibrationChunks is the fewest chunks of a document type that
	// are calibrated; a type with fewer uses DefaultAlpha (a store that
	// small ranks a handful of candidates, whatever the weight).
	MinCalibrationChunks = 50
	// defaultCalibrationSamples is the number of pseudo-questions per
	// document type.
	defaultCalibrationSamples = 200

	calibrationVersion = 3
	calibrationDepth   = 10  // MRR@10
	calibrationPool    = 100 // candidates of each ranking fused
	calibrationTimeout = 2 * time.Minute
	minQuestionWords   = 3 // chunks with fewer distinct words are not asked about
)

// Where a calibration's questions came from (TypeCalibration.From).
const (
	FromChunks        = "chunks"
	FromConversations = "conversations"
	// FromUserTurns: pseudo-questions drawn from a chat's user turns (see
	// questionFilter).
	FromUserTurns = "user turns"
)

// calibrationGrid are the weights tried, in increasing order.
// It starts at DefaultAlpha: the vector ranking always counts for at least
// a tenth, and calibration raises its weight where the store shows that it
// finds what BM25 does not.
var calibrationGrid = []float64{DefaultAlpha, 0.15, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9}

// ErrTooSmall is returned by Calibrate for a store with fewer than
// MinCalibrationChunks chunks of every document type asked for.
var ErrTooSmall = errors.New("search: store too small to calibrate")

// Calibration is a store's measured vector weights, by document type.
type Calibration struct {
	Version  int       `json:"v"`
	Embedder string    `json:"embedder"` // the embedder measured, for reference
	At       time.Time `json:"at"`
	// Types holds the measurement of each document type large enough to be
	// calibrated.
	Types map[string]TypeCalibration `json:"types"`
}

// TypeCalibration is the measured vector weight of one document type.
type TypeCalibration struct {
	Chunks  int `json:"chunks"`  // chunks of the type when measured
	Samples int `json:"samples"` // questions asked
	// From says where the questions came from: FromChunks (pseudo-questions
	// drawn from chunks) or FromConversations (questions the store's
	// conversations ask).
	From string `json:"from"`
	// MRRFullText, MRRVector and MRRFused are the mean reciprocal ranks at
	// 10 of the questions' sources in BM25's ranking, the vector ranking,
	// and the fused ranking at Alpha.
	MRRFullText float64 `json:"mrrFullText"`
	MRRVector   float64 `json:"mrrVector"`
	MRRFused    float64 `json:"mrrFused"`
	Alpha       float64 `json:"alpha"`
	// Feedback is how many results refine the vector query when a search
	// does not say (Options.Feedback): defaultFeedback, or 0 where the
	// questions were found better without feedback.
	Feedback int `json:"feedback,omitempty"`
}

// CalibrateOptions tune Calibrate. A nil *CalibrateOptions means all
// defaults.
type CalibrateOptions struct {
	// Samples is the number of pseudo-questions per document type. Default
	// 200 (fewer when the type has fewer chunks).
	Samples int
	// Seed selects the sample. Default 1: the same store content always
	// gives the same questions.
	Seed uint64
	// Now returns the time recorded. Default time.Now.
	Now func() time.Time
	// DocTypes are the document types calibrated. Default knowledge and
	// memories.
	DocTypes []string
}

// Calibrate measures the store's vector weight of each document type (see
// above) and records it in the store, where Search finds it; a type too
// small to measure keeps none. It embeds the pseudo-questions in one batch
// per type (through the embedder's query form when it has one) and runs two
// searches per question; the store is not changed otherwise. It returns
// ErrTooSmall when no type could be measured (the store's calibration is
// then left as it was).
func Calibrate(ctx context.Context, ix *engine.Index, opts *CalibrateOptions) (Calibration, error) {
	var o CalibrateOptions
	if opts != nil {
		o = *opts
	}
	if o.Samples <= 0 {
		o.Samples = defaultCalibrationSamples
	}
	if o.Seed == 0 {
		o.Seed = 1
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if len(o.DocTypes) == 0 {
		o.DocTypes = []string{index.DocKnowledge, index.DocMemory}
	}
	c := Calibration{Version: calibrationVersion, Types: map[string]TypeCalibration{}}
	var small error
	for _, dt := range o.DocTypes {
		tc, err := calibrateType(ctx, ix, dt, o.Samples, o.Seed)
		switch {
		case errors.Is(err, ErrTooSmall):
			small = err
			continue
		case err != nil:
			return Calibration{}, err
		}
		c.Types[dt] = tc
	}
	if len(c.Types) == 0 {
		if small == nil {
			small = ErrTooSmall
		}
		return Calibration{}, small
	}
	c.Embedder = ix.Embedder().Identity() // after embedding: some embedders learn their dimension
	c.At = o.Now().UTC()
	b, err := json.Marshal(c)
	if err != nil {
		return Calibration{}, err
	}
	if err := ix.SetSetting(ctx, CalibrationKey, string(b)); err != nil {
		return c, fmt.Errorf("search: calibrate: recording the weight: %w", err)
	}
	return c, nil
}

// calibrateType measures one document type.
func calibrateType(ctx context.Context, ix *engine.Index, docType string, n int, seed uint64) (TypeCalibration, error) {
	f := index.Filter{DocTypes: []string{docType}}
	asked, chat, err := questionFilter(ctx, ix, f)
	if err != nil {
		return TypeCalibration{}, err
	}
	qs, chunks, err := pseudoQuestions(ctx, ix, asked, n, seed)
	if err != nil {
		return TypeCalibration{}, err
	}
	from := FromChunks
	if chat {
		from = FromUserTurns
		if _, chunks, err = countChunks(ctx, ix, f); err != nil { // all the type's chunks
			return TypeCalibration{}, err
		}
	} else if mined, err := storeQuestions(ctx, ix, f, n, seed); err != nil {
		return TypeCalibration{}, err
	} else if len(mined) >= minAsked {
		qs, from = mined, FromConversations
	}
	texts := make([]string, len(qs))
	for i, q := range qs {
		texts[i] = q.text
	}
	vecs, err := embedQueries(ctx, ix.Embedder(), texts)
	if err != nil {
		return TypeCalibration{}, fmt.Errorf("search: calibrate: %w: %w", engine.ErrEmbedding, err)
	}
	tc := TypeCalibration{Chunks: chunks, Samples: len(qs), From: from}
	fused := make([]float64, len(calibrationGrid))
	lists := make([][2][]driver.Hit, len(qs)) // each question's BM25 and vector rankings
	var cands []candidate
	for i, q := range qs {
		text, err := ix.FullText(ctx, q.text, calibrationPool, f)
		if err != nil {
			return TypeCalibration{}, fmt.Errorf("search: calibrate: %w", err)
		}
		vec, err := ix.VectorByEmbedding(ctx, vecs[i], calibrationPool, f)
		if err != nil {
			return TypeCalibration{}, fmt.Errorf("search: calibrate: %w", err)
		}
		text, vec = without(text, q.self), without(vec, q.self)
		lists[i] = [2][]driver.Hit{text, vec}
		tc.MRRFullText += reciprocalRank(hitSources(text), q.source)
		tc.MRRVector += reciprocalRank(hitSources(vec), q.source)
		cands = candidates(cands[:0], text, vec)
		for j, a := range calibrationGrid {
			fused[j] += fusedReciprocalRank(cands, a, q.source)
		}
	}
	best := pickWeight(fused)
	tc.Alpha = calibrationGrid[best]
	// Feedback (feedback.go) at that weight: kept unless the questions are
	// found better without it by more than one question's worth. It helps
	// where the first results are a good picture of what is asked, and
	// misleads where they are long texts that match the words but not the
	// question.
	fedBack := 0.0
	for i, q := range qs {
		o := &Options{Alpha: tc.Alpha, TopK: 3 * calibrationDepth, SimilarityThreshold: -1, Feedback: defaultFeedback}
		fedBack += reciprocalRank(resultSources(refine(ctx, ix, q.text, vecs[i], lists[i][0], lists[i][1], o)), q.source)
	}
	k := float64(len(qs))
	tc.MRRFullText, tc.MRRVector, tc.MRRFused = tc.MRRFullText/k, tc.MRRVector/k, fused[best]/k
	if fedBack >= fused[best]-1 {
		tc.Feedback, tc.MRRFused = defaultFeedback, fedBack/k
	}
	return tc, nil
}

// questionFilter returns the filter of the chunks pseudo-questions are
// drawn from: in a chat (a store with at least MinCalibrationChunks chunks
// of the user's turns, as index.AttrRole says), the user's turns, as what a user asks their assistant's
// memory is what they told it (a fact said in passing in a short turn, not
// the long answers around it); elsewhere f. chat says which.
func questionFilter(ctx context.Context, ix *engine.Index, f index.Filter) (index.Filter, bool, error) {
	u := f
	u.Attrs = map[string]string{index.AttrRole: "user"}
	_, n, err := countChunks(ctx, ix, u)
	switch {
	case err != nil:
		return f, false, err
	case n < MinCalibrationChunks:
		return f, false, nil
	}
	return u, true, nil
}

// candidate is a record of a question's two rankings as relative fusion
// scores it: its sort key (Fuse's order) with the score left to fill, its
// source, and its min-max normalised score in each ranking it is in.
type candidate struct {
	key           sortKey
	source        string
	text, vec     float64
	inText, inVec bool
}

// candidates appends to cs the records of text and vec, each once.
func candidates(cs []candidate, text, vec []driver.Hit) []candidate {
	ts, vs := minMax(text), minMax(vec)
	at := make(map[string]int, len(text)+len(vec))
	get := func(h driver.Hit) *candidate {
		i, ok := at[h.Record.ID]
		if !ok {
			i = len(cs)
			at[h.Record.ID] = i
			cs = append(cs, candidate{key: sortKey{rank: math.MaxInt, id: h.Record.ID, at: i}, source: h.Record.SourceURL})
		}
		return &cs[i]
	}
	for i, h := range text {
		c := get(h)
		c.text, c.inText, c.key.rank = ts.of(h.Score), true, min(c.key.rank, i+1)
	}
	for i, h := range vec {
		c := get(h)
		c.vec, c.inVec, c.key.rank = vs.of(h.Score), true, min(c.key.rank, i+1)
	}
	return cs
}

// fusedReciprocalRank is reciprocalRank(resultSources(Fuse(text, vec,
// &Options{Alpha: alpha, TopK: 3·calibrationDepth, SimilarityThreshold: -1})),
// source) for the candidates of text and vec, without building the results:
// the rank of source's best record among the distinct sources ranked before
// it, or 0 when that record is past the fused list's end. It is what the
// calibration grid asks of every question at every weight.
func fusedReciprocalRank(cs []candidate, alpha float64, source string) float64 {
	best := -1
	for i := range cs {
		c := &cs[i]
		s := 0.0
		if c.inText {
			s += (1 - alpha) * c.text
		}
		if c.inVec {
			s += alpha * c.vec
		}
		c.key.score = s
		if c.source == source && (best < 0 || c.key.before(cs[best].key)) {
			best = i
		}
	}
	if best < 0 {
		return 0
	}
	ahead, sources := 0, map[string]bool{}
	for i := range cs {
		if i != best && cs[i].key.before(cs[best].key) {
			ahead++
			sources[cs[i].source] = true
		}
	}
	if ahead >= 3*calibrationDepth || len(sources) >= calibrationDepth {
		return 0
	}
	return 1 / float64(len(sources)+1)
}

// pickWeight returns the index of the weight to use given the summed
// reciprocal ranks of each weight of the grid: the smallest within one
// question's worth (a reciprocal rank of 1) of the best, as less than that
// is chance.
func pickWeight(fused []float64) int {
	top := slices.Max(fused)
	return slices.IndexFunc(fused, func(v float64) bool { return v >= top-1 })
}

// question is a pseudo-question and the source of the chunk it asks about.
type question struct {
	text, source string
	self         string // a source left out of the rankings (the question's own)
}

// minAsked is the fewest questions asked in the store's conversations that
// calibrate a type in place of pseudo-questions.
const minAsked = 20

// storeQuestions returns up to n questions that the store's conversations ask, each
// with the turn that answers it: a turn that is a question (it ends with a
// question mark and has minQuestionWords words or more), and the next turn
// of its session (index.AttrSession, AttrTurn), said by another speaker.
// They are drawn from 20·n chunks sampled as pseudoQuestions draws its.
func storeQuestions(ctx context.Context, ix *engine.Index, f index.Filter, n int, seed uint64) ([]question, error) {
	recs, _, err := sampleChunks(ctx, ix, f, 20*n, seed)
	if err != nil {
		return nil, err
	}
	var qs []question
	for _, r := range recs {
		if len(qs) == n {
			break
		}
		if !isQuestion(r.Content) || distinct(questionWords(r.Content)) < minQuestionWords {
			continue
		}
		sess, turn := r.Attrs[index.AttrSession], r.Attrs[index.AttrTurn]
		t, err := strconv.Atoi(turn)
		if sess == "" || err != nil {
			continue
		}
		g := f
		g.Attrs = map[string]string{index.AttrSession: sess, index.AttrTurn: strconv.Itoa(t + 1)}
		next, err := ix.Records(ctx, g)
		if err != nil {
			return nil, fmt.Errorf("search: calibrate: %w", err)
		}
		if len(next) == 0 || next[0].Attrs[index.AttrSpeaker] == r.Attrs[index.AttrSpeaker] {
			continue
		}
		qs = append(qs, question{text: r.Content, source: next[0].SourceURL, self: r.SourceURL})
	}
	return qs, nil
}

// pseudoQuestions draws up to n distinct chunks matching f uniformly and
// asks a question of each (see the comment above), with the number of
// chunks matching f. The rarity of a word is measured on four times as many
// chunks, drawn the same way.
func pseudoQuestions(ctx context.Context, ix *engine.Index, f index.Filter, n int, seed uint64) ([]question, int, error) {
	recs, total, err := sampleChunks(ctx, ix, f, 4*n, seed)
	if err != nil {
		return nil, total, err
	}
	df := map[string]int{}
	words := make([][]string, len(recs))
	for i := range recs {
		words[i] = questionWords(recs[i].Content)
		seen := map[string]bool{}
		for _, w := range words[i] {
			if !seen[w] {
				seen[w] = true
				df[w]++
			}
		}
	}
	rng := rand.New(rand.NewPCG(seed, uint64(total)))
	var qs []question
	for i := range recs {
		if len(qs) == n {
			break
		}
		if distinct(words[i]) < minQuestionWords {
			continue
		}
		var q []string
		q = drawWords(rng, q, words[i], df, len(recs), 2)
		q = drawWords(rng, q, questionWords(recs[i].Attrs[index.AttrContext]), df, len(recs), 2)
		if other := words[rng.IntN(len(words))]; len(other) > 0 {
			q = append(q, other[rng.IntN(len(other))]) // a common word: drawn by its frequency
		}
		rng.Shuffle(len(q), func(a, b int) { q[a], q[b] = q[b], q[a] })
		qs = append(qs, question{text: strings.Join(q, " "), source: recs[i].SourceURL})
	}
	if len(qs) < min(n, MinCalibrationChunks) {
		return nil, total, fmt.Errorf("%w: only %d chunks with %d distinct words or more", ErrTooSmall, len(qs), minQuestionWords)
	}
	return qs, total, nil
}

// drawWords appends up to k distinct words of ws not in q, each drawn in
// proportion to its count in ws times its rarity ln(docs/df).
func drawWords(rng *rand.Rand, q, ws []string, df map[string]int, docs, k int) []string {
	tf := map[string]float64{}
	var order []string
	for _, w := range ws {
		if tf[w] == 0 && !slices.Contains(q, w) {
			order = append(order, w)
		}
		tf[w]++
	}
	weight := make([]float64, len(order))
	for i, w := range order {
		weight[i] = tf[w] * math.Log(float64(docs+1)/float64(max(df[w], 1)))
	}
	for range k {
		total := 0.0
		for _, x := range weight {
			total += x
		}
		if total <= 0 {
			break
		}
		u := rng.Float64() * total
		for i, x := range weight {
			if x <= 0 {
				continue
			}
			if u -= x; u <= 0 {
				q = append(q, order[i])
				weight[i] = 0
				break
			}
		}
	}
	return q
}

// questionWords are the lower-cased words of text a question would ask
// with: three letters or more, not a function word.
func questionWords(text string) []string {
	var out []string
	for _, w := range strings.FieldsFunc(strings.ToLower(text), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	}) {
		if utf8.RuneCountInString(w) >= 3 && !functionWords[w] {
			out = append(out, w)
		}
	}
	return out
}

func distinct(ws []string) int {
	seen := map[string]bool{}
	for _, w := range ws {
		seen[w] = true
	}
	return len(seen)
}

// functionWords are English words of three letters or more that say nothing
// of a passage's subject.
var functionWords = func() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(`the and for are but not you all any can had her was one our out has him his
		how its may new now old see two way who did get got let say she too use that with have this will your from
		they know want been good much some time very when come here just like long make many more only over such
		take than them well were what into also back after most than then these those there their would could
		should about which while where other being does each just whom whose yours ours mine myself yourself
		because before between both during under until again once same very can't don't didn't i'm it's that's`) {
		m[w] = true
	}
	return m
}()

// countChunks returns the sources matching f and their number of chunks.
func countChunks(ctx context.Context, ix *engine.Index, f index.Filter) ([]index.SourceInfo, int, error) {
	srcs, _, err := ix.Sources(ctx, f, 0, 0)
	if err != nil {
		return nil, 0, fmt.Errorf("search: calibrate: %w", err)
	}
	total := 0
	for _, s := range srcs {
		total += s.Chunks
	}
	return srcs, total, nil
}

// sampleChunks draws up to n distinct chunks matching f uniformly, in store
// order, with the number of chunks matching f.
func sampleChunks(ctx context.Context, ix *engine.Index, f index.Filter, n int, seed uint64) ([]index.Record, int, error) {
	srcs, total, err := countChunks(ctx, ix, f)
	if err != nil {
		return nil, 0, err
	}
	ends := make([]int, len(srcs)) // ends[i]: chunks in srcs[:i+1]
	end := 0
	for i, s := range srcs {
		end += s.Chunks
		ends[i] = end
	}
	if total < MinCalibrationChunks {
		return nil, total, fmt.Errorf("%w: %d chunks, want at least %d", ErrTooSmall, total, MinCalibrationChunks)
	}
	rng := rand.New(rand.NewPCG(seed, uint64(total)))
	picks := rng.Perm(total)[:min(n, total)]
	slices.Sort(picks)
	var out []index.Record
	var recs []index.Record
	cur := -1
	for _, p := range picks {
		si, _ := slices.BinarySearch(ends, p+1) // first source whose end passes p
		if si != cur {
			if recs, err = ix.Source(ctx, srcs[si].SourceURL); err != nil {
				return nil, 0, fmt.Errorf("search: calibrate: %w", err)
			}
			recs = slices.DeleteFunc(recs, func(r index.Record) bool { return !f.Match(&r) })
			cur = si
		}
		if at := p - (ends[si] - srcs[si].Chunks); at < len(recs) { // else the source changed since it was listed
			out = append(out, recs[at])
		}
	}
	// A stable order that does not follow the store's: questions are asked
	// of the first n, and the rest only count words.
	rng.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	return out, total, nil
}

// embedQueries embeds texts as queries: one by one through the embedder's
// query form when it has one, else in one Embed call.
func embedQueries(ctx context.Context, emb embed.Embedder, texts []string) ([][]float32, error) {
	if qe, ok := emb.(embed.QueryEmbedder); ok {
		out := make([][]float32, len(texts))
		for i, t := range texts {
			v, err := qe.EmbedQuery(ctx, t)
			if err != nil {
				return nil, err
			}
			out[i] = v
		}
		return out, nil
	}
	out, err := emb.Embed(ctx, texts)
	if err == nil && len(out) != len(texts) {
		err = fmt.Errorf("%w: %d vectors for %d texts", embed.ErrBadResponse, len(out), len(texts))
	}
	return out, err
}

// without drops the hits of source src ("" drops nothing).
func without(hs []driver.Hit, src string) []driver.Hit {
	if src == "" {
		return hs
	}
	return slices.DeleteFunc(slices.Clone(hs), func(h driver.Hit) bool { return h.Record.SourceURL == src })
}

func hitSources(hs []driver.Hit) []string {
	out := make([]string, len(hs))
	for i, h := range hs {
		out[i] = h.Record.SourceURL
	}
	return out
}

func resultSources(rs []Result) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r.Record.SourceURL
	}
	return out
}

// reciprocalRank is 1/rank of source among the first calibrationDepth
// distinct sources of a ranking, or 0.
func reciprocalRank(sources []string, source string) float64 {
	seen := map[string]bool{}
	for _, s := range sources {
		if seen[s] {
			continue
		}
		seen[s] = true
		if len(seen) > calibrationDepth {
			break
		}
		if s == source {
			return 1 / float64(len(seen))
		}
	}
	return 0
}

// settingsOf is implemented by retrievers that keep store settings, as
// *engine.Index does.
type settingsOf interface {
	Setting(ctx context.Context, key string) (string, bool, error)
}

// StoredCalibration returns the calibration r's store holds, if r keeps
// store settings and holds a valid one.
func StoredCalibration(ctx context.Context, r Retriever) (Calibration, bool) {
	s, ok := r.(settingsOf)
	if !ok {
		return Calibration{}, false
	}
	v, ok, err := s.Setting(ctx, CalibrationKey)
	if err != nil || !ok {
		return Calibration{}, false
	}
	var c Calibration
	if json.Unmarshal([]byte(v), &c) != nil || c.Version != calibrationVersion {
		return Calibration{}, false
	}
	for dt, tc := range c.Types {
		if !(tc.Alpha >= calibrationGrid[0] && tc.Alpha <= calibrationGrid[len(calibrationGrid)-1]) {
			delete(c.Types, dt)
		}
	}
	return c, len(c.Types) > 0
}

// Calibrator keeps a store's calibration fresh in the background: it checks
// when it is created, and again once a quarter of the store's size in chunks
// (at least 10) has been written or removed and the store has then been
// quiet for two seconds (so that a bulk import is measured once, at its
// end); it calibrates when the store has no calibration, or a document type
// has grown past MinCalibrationChunks without one, or a type's chunk count
// has moved by a quarter since it was measured. Close runs a check that is
// still due. rag.Engine runs one per open store. A Calibrator is safe for
// concurrent use.
type Calibrator struct {
	ix    *engine.Index
	log   *slog.Logger
	quiet time.Duration

	mu      sync.Mutex
	off     bool // nothing to calibrate, or closed
	pending int  // chunks written or removed since the last check
	next    int  // a check is due when pending reaches it
	timer   *time.Timer
	due     bool // a check waits for the store to be quiet
	running bool
	again   bool
	wg      sync.WaitGroup
}

// calibrationQuiet is how long the store must be unchanged before a due
// check runs.
const calibrationQuiet = 2 * time.Second

// NewCalibrator starts keeping ix calibrated; a nil log means slog.Default().
func NewCalibrator(ix *engine.Index, log *slog.Logger) *Calibrator {
	if log == nil {
		log = slog.Default()
	}
	c := &Calibrator{ix: ix, log: log, quiet: calibrationQuiet}
	c.mu.Lock()
	c.start()
	c.mu.Unlock()
	return c
}

// Changed tells the calibrator that n chunks were written or removed.
func (c *Calibrator) Changed(n int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.off || n <= 0 {
		return
	}
	c.pending += n
	if c.pending < c.next && !c.due {
		return
	}
	c.due = true
	if c.timer == nil {
		c.timer = time.AfterFunc(c.quiet, c.quietNow)
	} else {
		c.timer.Reset(c.quiet)
	}
}

// quietNow runs the due check once the store has been quiet.
func (c *Calibrator) quietNow() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.due && !c.off {
		c.due = false
		c.start()
	}
}

// Close runs a check that is due, waits for the one under way (each is
// bounded to two minutes) and stops the calibrator.
func (c *Calibrator) Close() {
	c.mu.Lock()
	if c.timer != nil {
		c.timer.Stop()
	}
	if c.due && !c.off {
		c.due = false
		c.start()
	}
	c.off = true
	c.mu.Unlock()
	c.wg.Wait()
}

// start runs a check, or asks the one under way for another; c.mu is held.
func (c *Calibrator) start() {
	c.pending = 0
	if c.running {
		c.again = true
		return
	}
	c.running = true
	c.wg.Add(1)
	go c.run()
}

func (c *Calibrator) run() {
	defer c.wg.Done()
	for {
		next := c.refresh()
		c.mu.Lock()
		c.next = next
		if !c.again {
			c.running = false
			c.mu.Unlock()
			return
		}
		c.again = false
		c.mu.Unlock()
	}
}

// refresh calibrates when due and returns how many changes to wait for
// before the next check.
func (c *Calibrator) refresh() int {
	ctx, cancel := context.WithTimeout(context.Background(), calibrationTimeout)
	defer cancel()
	types := []string{index.DocKnowledge, index.DocMemory}
	counts := map[string]int{}
	all := 0
	for _, dt := range types {
		_, n, err := countChunks(ctx, c.ix, index.Filter{DocTypes: []string{dt}})
		if err != nil {
			c.log.Warn("search: cannot check the fusion calibration", "err", err)
			return MinCalibrationChunks
		}
		counts[dt] = n
		all += n
	}
	next := max(10, all/4)
	cur, _ := StoredCalibration(ctx, c.ix)
	due := false
	for _, dt := range types {
		n := counts[dt]
		tc, ok := cur.Types[dt]
		switch {
		case !ok && n >= MinCalibrationChunks:
			due = true
		case ok && 4*abs(n-tc.Chunks) >= tc.Chunks:
			due = true
		}
	}
	if !due {
		if all < MinCalibrationChunks {
			return max(1, MinCalibrationChunks-all)
		}
		return next
	}
	cal, err := Calibrate(ctx, c.ix, nil)
	switch {
	case errors.Is(err, ErrTooSmall):
	case err != nil:
		c.log.Warn("search: fusion calibration failed; hybrid search keeps its previous weights", "err", err)
	default:
		for dt, tc := range cal.Types {
			c.log.Info("search: calibrated the hybrid fusion weight", "docType", dt, "alpha", tc.Alpha,
				"mrrFullText", tc.MRRFullText, "mrrVector", tc.MRRVector, "mrrFused", tc.MRRFused, "samples", tc.Samples, "chunks", tc.Chunks)
		}
	}
	return next
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

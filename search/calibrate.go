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
	"strings"
	"sync"
	"time"

	"github.com/ragmem/ragmem/embed"
	"github.com/ragmem/ragmem/index"
)

// Calibration of the vector weight.
//
// A semantic embedder's worth next to BM25 differs from store to store: the
// same small model that finds short conversation turns well drowns in long
// scientific abstracts. So each store measures it on its own content. It
// draws chunks at random, takes a span of consecutive words from each as a
// pseudo-query, and runs the span through BM25 and through the vector index:
// each ranking scores the reciprocal rank of the first chunk that contains
// the span (MRR@10). BM25 finds a verbatim span almost always, so the ratio
// of the vector's MRR to BM25's says how well the embedder represents this
// store's texts; the weight is CalibrationScale times that ratio, clamped to
// [MinCalibratedAlpha, MaxCalibratedAlpha].
//
// The pseudo-queries are the store's own words, so they cannot tell a
// semantic model from a lexical one (both find a verbatim span); embedders
// that match words say so (embed.WordMatcher) and are not calibrated.

// Calibration constants.
const (
	// CalibrationKey is the store setting that holds the calibration.
	CalibrationKey = "search.fusion"
	// CalibrationScale turns the MRR ratio into alpha; chosen on SciFact
	// train, Cranfield and LoCoMo dev (docs/evaluation.md).
	CalibrationScale   = 0.4
	MinCalibratedAlpha = 0.05
	MaxCalibratedAlpha = 0.5
	// MinCalibrationChunks is the smallest store that is calibrated; a
	// smaller one uses DefaultAlpha.
	MinCalibrationChunks = 50
	// DefaultCalibrationSamples is the number of pseudo-queries.
	DefaultCalibrationSamples = 200

	calibrationVersion = 1
	spanWords          = 12 // words per pseudo-query
	minSpanWords       = 3  // chunks with fewer words are not sampled
	calibrationDepth   = 10 // MRR@10
	calibrationTimeout = 2 * time.Minute
)

// ErrTooSmall is returned by Calibrate for a store with fewer than
// MinCalibrationChunks knowledge chunks (or too few with words to sample).
var ErrTooSmall = errors.New("search: store too small to calibrate")

// Calibration is a store's measured vector weight. It is a plain value.
type Calibration struct {
	Version     int       `json:"v"`
	Embedder    string    `json:"embedder"` // the embedder measured, for reference
	Chunks      int       `json:"chunks"`   // knowledge chunks in the store when measured
	Samples     int       `json:"samples"`  // pseudo-queries run
	MRRFullText float64   `json:"mrrFullText"`
	MRRVector   float64   `json:"mrrVector"`
	Alpha       float64   `json:"alpha"`
	At          time.Time `json:"at"`
}

// CalibrateOptions tune Calibrate. A nil *CalibrateOptions means all
// defaults.
type CalibrateOptions struct {
	// Samples is the number of pseudo-queries. Default 200 (fewer when the
	// store has fewer chunks).
	Samples int
	// Seed selects the sample. Default 1: the same store content always
	// gives the same pseudo-queries.
	Seed uint64
	// Now returns the time recorded. Default time.Now.
	Now func() time.Time
	// DocTypes are the chunks sampled and searched. Default knowledge
	// only, the chunks knowledge searches rank (ragmem eval calibrates a
	// store of conversation memories on its memories).
	DocTypes []string
}

// AlphaFor is the weight a calibration with these MRRs gives at scale:
// scale × mrrVector/mrrFullText, clamped to [MinCalibratedAlpha,
// MaxCalibratedAlpha].
func AlphaFor(scale, mrrFullText, mrrVector float64) float64 {
	ratio := 0.0
	if mrrFullText > 0 {
		ratio = mrrVector / mrrFullText
	}
	return math.Max(MinCalibratedAlpha, math.Min(MaxCalibratedAlpha, scale*ratio))
}

// Calibrate measures the store's vector weight (see above) and records it in
// the store, where Search finds it. It embeds the pseudo-queries in one
// batch (through the embedder's query form when it has one) and runs two
// searches per pseudo-query; the store is not changed otherwise.
func Calibrate(ctx context.Context, ix *index.Index, opts *CalibrateOptions) (Calibration, error) {
	var o CalibrateOptions
	if opts != nil {
		o = *opts
	}
	if o.Samples <= 0 {
		o.Samples = DefaultCalibrationSamples
	}
	if o.Seed == 0 {
		o.Seed = 1
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if len(o.DocTypes) == 0 {
		o.DocTypes = []string{index.DocKnowledge}
	}
	f := index.Filter{DocTypes: o.DocTypes}
	spans, chunks, err := sampleSpans(ctx, ix, f, o.Samples, o.Seed)
	if err != nil {
		return Calibration{}, err
	}
	vecs, err := embedQueries(ctx, ix.Embedder(), spans)
	if err != nil {
		return Calibration{}, fmt.Errorf("search: calibrate: %w: %w", index.ErrEmbedding, err)
	}
	c := Calibration{Version: calibrationVersion, Chunks: chunks, Samples: len(spans)}
	for i, span := range spans {
		text, err := ix.FullText(ctx, span, calibrationDepth, f)
		if err != nil {
			return Calibration{}, fmt.Errorf("search: calibrate: %w", err)
		}
		vec, err := ix.VectorByEmbedding(ctx, vecs[i], calibrationDepth, f)
		if err != nil {
			return Calibration{}, fmt.Errorf("search: calibrate: %w", err)
		}
		c.MRRFullText += reciprocalRank(text, span)
		c.MRRVector += reciprocalRank(vec, span)
	}
	n := float64(len(spans))
	c.MRRFullText, c.MRRVector = c.MRRFullText/n, c.MRRVector/n
	c.Alpha = AlphaFor(CalibrationScale, c.MRRFullText, c.MRRVector)
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

// sampleSpans draws up to n distinct knowledge chunks uniformly and returns a
// span of their words each, with the number of knowledge chunks.
func sampleSpans(ctx context.Context, ix *index.Index, f index.Filter, n int, seed uint64) ([]string, int, error) {
	srcs, _, err := ix.Sources(ctx, f, 0, 0)
	if err != nil {
		return nil, 0, fmt.Errorf("search: calibrate: %w", err)
	}
	ends := make([]int, len(srcs)) // ends[i]: chunks in srcs[:i+1]
	total := 0
	for i, s := range srcs {
		total += s.Chunks
		ends[i] = total
	}
	if total < MinCalibrationChunks {
		return nil, total, fmt.Errorf("%w: %d chunks, want at least %d", ErrTooSmall, total, MinCalibrationChunks)
	}
	rng := rand.New(rand.NewPCG(seed, uint64(total)))
	picks := rng.Perm(total)[:min(n, total)]
	slices.Sort(picks)
	var spans []string
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
		at := p - (ends[si] - srcs[si].Chunks)
		if at >= len(recs) {
			continue // the source changed since it was listed
		}
		words := strings.Fields(recs[at].Content)
		if len(words) < minSpanWords {
			continue
		}
		l := min(spanWords, len(words))
		start := rng.IntN(len(words) - l + 1)
		spans = append(spans, strings.Join(words[start:start+l], " "))
	}
	if len(spans) < min(n, MinCalibrationChunks) {
		return nil, total, fmt.Errorf("%w: only %d chunks with %d words or more", ErrTooSmall, len(spans), minSpanWords)
	}
	return spans, total, nil
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

// reciprocalRank is 1/rank of the first hit whose text contains span (words
// compared with whitespace collapsed), or 0.
func reciprocalRank(hits []index.Hit, span string) float64 {
	for i, h := range hits {
		if strings.Contains(strings.Join(strings.Fields(h.Record.Content), " "), span) {
			return 1 / float64(i+1)
		}
	}
	return 0
}

// settingsOf is implemented by retrievers that keep store settings, as
// *index.Index does.
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
	if json.Unmarshal([]byte(v), &c) != nil || c.Version != calibrationVersion ||
		!(c.Alpha >= MinCalibratedAlpha && c.Alpha <= MaxCalibratedAlpha) {
		return Calibration{}, false
	}
	return c, true
}

// Calibrator keeps a store's calibration fresh in the background: it checks
// when it is created, and again once a quarter of the store's size in chunks
// (at least 10) has been written or removed and the store has then been
// quiet for two seconds (so that a bulk import is measured once, at its
// end); it calibrates when the store has no calibration or its chunk count
// has moved by a quarter since the last one. Close runs a check that is
// still due. Embedders that match words are never calibrated; neither is a
// store with fewer than MinCalibrationChunks knowledge chunks. rag.Engine
// runs one per open store. A Calibrator is safe for concurrent use.
type Calibrator struct {
	ix    *index.Index
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
func NewCalibrator(ix *index.Index, log *slog.Logger) *Calibrator {
	if log == nil {
		log = slog.Default()
	}
	c := &Calibrator{ix: ix, log: log, quiet: calibrationQuiet}
	if embed.MatchesWords(ix.Embedder()) {
		c.off = true
		return c
	}
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
	srcs, _, err := c.ix.Sources(ctx, index.Filter{DocTypes: []string{index.DocKnowledge}}, 0, 0)
	if err != nil {
		c.log.Warn("search: cannot check the fusion calibration", "err", err)
		return MinCalibrationChunks
	}
	chunks := 0
	for _, s := range srcs {
		chunks += s.Chunks
	}
	next := max(10, chunks/4)
	if chunks < MinCalibrationChunks {
		return max(1, MinCalibrationChunks-chunks)
	}
	cur, ok := StoredCalibration(ctx, c.ix)
	if ok && 4*abs(chunks-cur.Chunks) < cur.Chunks {
		return next
	}
	cal, err := Calibrate(ctx, c.ix, nil)
	switch {
	case err != nil:
		c.log.Warn("search: fusion calibration failed; hybrid search keeps its previous weight", "err", err)
	default:
		c.log.Info("search: calibrated the hybrid fusion weight", "alpha", cal.Alpha,
			"mrrFullText", cal.MRRFullText, "mrrVector", cal.MRRVector, "samples", cal.Samples, "chunks", cal.Chunks)
	}
	return next
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

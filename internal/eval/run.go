// Package eval measures retrieval quality: it loads a BEIR-format data set,
// indexes its corpus into a temporary store through ragmem's normal pipeline
// (chunking, embedding, both indexes), runs every judged query in each
// search mode and reports nDCG@10, Recall@5, @10, @25 and @100 and MRR@10
// (the trec_eval definitions, see [NDCG]), query latency and indexing time.
// [Macro] averages the reports of several data sets.
//
// Retrieval returns chunks; the metrics judge documents. A document's rank is
// that of its best chunk (the first of its chunks in the ranking), and Run
// asks for chunks until Depth distinct documents are ranked (or the store has
// no more), so Recall@100 is computed over 100 documents however the corpus
// was chunked.
//
// Run may be called from several goroutines at once (each call has its own
// temporary store); a loaded Dataset is read-only, and the other types are
// plain values.
package eval

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"time"

	"github.com/ragmem/ragmem/chunk"
	"github.com/ragmem/ragmem/index"
	"github.com/ragmem/ragmem/index/driver"
	"github.com/ragmem/ragmem/internal/embed"
	"github.com/ragmem/ragmem/internal/index/engine"
	"github.com/ragmem/ragmem/internal/index/local"
	"github.com/ragmem/ragmem/search"
)

// Defaults.
const (
	DefaultDepth     = 100
	DefaultBatchSize = 256
)

// Options configure Run. A nil *Options means all defaults.
type Options struct {
	// Modes are the search modes evaluated, in order. Default fulltext,
	// vector, hybrid.
	Modes []search.Mode
	// Search is the base of every search: Fusion, RRFK, Alpha and
	// CandidatePool are used as given (zero fields: search defaults); Mode,
	// TopK, SimilarityThreshold (disabled, so that rankings are complete)
	// and DocTypes are set by Run. Default nil: search defaults.
	Search *search.Options
	// Embedder embeds the corpus and the queries. Default embed.Default().
	Embedder embed.Embedder
	// FullText configures the local backend's BM25 index. Default nil: its
	// defaults.
	FullText *local.FullTextOptions
	// Chunking sizes the chunks. Default: the chunk package defaults.
	Chunking *chunk.Options
	// Depth is the number of distinct documents ranked per query. Default 100.
	Depth int
	// Dir is where the temporary store is created (and removed after).
	// Default os.TempDir().
	Dir string
	// BatchSize is the number of documents per indexing batch. Default 256.
	BatchSize int
	// Hybrids are the hybrid searches evaluated when Modes has Hybrid, one
	// result row each, in order: several fusion methods compared on one
	// index. Each is used as Search is (Mode, TopK, SimilarityThreshold and
	// DocTypes are set by Run). The first is searched as usual; the others
	// reuse, per query, the two candidate lists the first retrieved (their
	// latency is that of the fusion alone). Default: one, Search.
	Hybrids []Hybrid
	// PerQuery keeps every query's metrics and its ranking (Depth documents)
	// in the report. Default false.
	PerQuery bool
	// AsReturned ranks the documents of the first Depth results as search
	// returns them, in order, a document's second and later results
	// counting as results that show nothing relevant: what a reader of the
	// list sees, and what per-source caps and duplicate removal change.
	// Default false: each document ranks once, by its best result.
	AsReturned bool
	// Progress, when set, is called as indexing and searching advance, from
	// the goroutine that called Run. Default nil.
	Progress func(Progress)
	// Logger receives the store's warnings. Default slog.Default().
	Logger *slog.Logger
}

// Hybrid is one hybrid search configuration to evaluate.
type Hybrid struct {
	// Label names the row (ModeResult.Fusion), e.g. the fusion spec given
	// on the command line. Default "".
	Label  string
	Search search.Options
}

// Progress reports how far Run is.
type Progress struct {
	Stage string // "index", or "search <mode>"
	Done  int
	Total int
}

// Report is what Run measured.
type Report struct {
	Dataset      string  `json:"dataset"`
	Split        string  `json:"split"`
	Documents    int     `json:"documents"`        // documents indexed
	Skipped      int     `json:"skippedDocuments"` // documents without text
	Chunks       int     `json:"chunks"`
	Queries      int     `json:"queries"`
	Embedder     string  `json:"embedder"`
	FullText     string  `json:"fullText"`           // the BM25 configuration
	Memories     string  `json:"memories,omitempty"` // how a conversation's turns were written (Dataset.Memories)
	IndexSeconds float64 `json:"indexSeconds"`       // chunk + embed + both indexes, durable
	Depth        int     `json:"documentDepth"`      // documents ranked per query
	// Calibration is the store's fusion calibration (search.Calibrate), run
	// after indexing when hybrid search is evaluated and the store is large
	// enough; nil otherwise. Hybrid search uses it when its vector weight is
	// automatic and the embedder does not match words.
	Calibration      *search.Calibration `json:"calibration,omitempty"`
	CalibrateSeconds float64             `json:"calibrateSeconds,omitempty"`
	Results          []ModeResult        `json:"results"`
}

// Metrics are the quality figures of one query or their mean over queries.
type Metrics struct {
	NDCG10    float64 `json:"ndcg@10"`
	Recall5   float64 `json:"recall@5"`
	Recall10  float64 `json:"recall@10"`
	Recall25  float64 `json:"recall@25"`
	Recall100 float64 `json:"recall@100"`
	MRR10     float64 `json:"mrr@10"`
}

// Measure computes every metric of one ranking against its judgements.
func Measure(ranking []string, rel map[string]int) Metrics {
	return Metrics{
		NDCG10:    NDCG(ranking, rel, 10),
		Recall5:   Recall(ranking, rel, 5),
		Recall10:  Recall(ranking, rel, 10),
		Recall25:  Recall(ranking, rel, 25),
		Recall100: Recall(ranking, rel, 100),
		MRR10:     MRR(ranking, rel, 10),
	}
}

func (m *Metrics) add(o Metrics, w float64) {
	m.NDCG10 += w * o.NDCG10
	m.Recall5 += w * o.Recall5
	m.Recall10 += w * o.Recall10
	m.Recall25 += w * o.Recall25
	m.Recall100 += w * o.Recall100
	m.MRR10 += w * o.MRR10
}

// ModeResult holds one mode's metrics, averaged over the queries.
type ModeResult struct {
	Mode string `json:"mode"`
	// Fusion is the Hybrid's Label (hybrid rows only).
	Fusion string `json:"fusion,omitempty"`
	// Method is the explanation's method of the last query that returned
	// a result: "bm25", "vector", "relative(alpha=0.05, lexical)", ...
	Method string `json:"method"`
	Metrics
	LatencyP50Ms float64 `json:"latencyP50Ms"`
	LatencyP95Ms float64 `json:"latencyP95Ms"`
	// Categories are the metrics of each query category (Dataset.Categories),
	// in label order; nil when the data set has none.
	Categories []CategoryResult `json:"categories,omitempty"`
	PerQuery   []QueryResult    `json:"perQuery,omitempty"`
}

// CategoryResult is the mean of one category's queries.
type CategoryResult struct {
	Category string `json:"category"`
	Queries  int    `json:"queries"`
	Metrics
}

// QueryResult is one query's outcome (Options.PerQuery).
type QueryResult struct {
	ID       string `json:"id"`
	Category string `json:"category,omitempty"`
	Metrics
	LatencyMs float64  `json:"latencyMs"`
	Ranking   []string `json:"ranking"` // document ids, best first, at most Depth
}

// ErrNoQueries is returned when a data set has no judged query.
var ErrNoQueries = errors.New("eval: no judged queries")

const sourcePrefix = "beir:"

// Run indexes ds into a temporary store, evaluates every mode and removes
// the store. It stops early, returning ctx's error, when ctx is done.
func Run(ctx context.Context, ds *Dataset, opts *Options) (*Report, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if len(o.Modes) == 0 {
		o.Modes = []search.Mode{search.FullText, search.Vector, search.Hybrid}
	}
	if o.Embedder == nil {
		o.Embedder = embed.Default()
	}
	if o.Depth <= 0 {
		o.Depth = DefaultDepth
	}
	if o.BatchSize <= 0 {
		o.BatchSize = DefaultBatchSize
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if len(ds.Order) == 0 {
		return nil, ErrNoQueries
	}
	parent := o.Dir
	if parent == "" {
		parent = os.TempDir()
	}
	tmp, err := os.MkdirTemp(parent, "ragmem-eval-")
	if err != nil {
		return nil, fmt.Errorf("eval: temporary store: %w", err)
	}
	defer os.RemoveAll(tmp)

	be, err := local.Open(ctx, filepath.Join(tmp, "store"), &local.Options{Logger: o.Logger, FullText: o.FullText})
	if err != nil {
		return nil, err
	}
	ix, err := engine.Open(ctx, "", &engine.Options{Embedder: o.Embedder, Backend: be, Chunking: o.Chunking, Logger: o.Logger})
	if err != nil {
		_ = be.Close()
		return nil, err
	}
	defer ix.Close()

	rep := &Report{
		Dataset: ds.Name, Split: ds.Split, Queries: len(ds.Order), Depth: o.Depth,
		FullText: be.FullTextConfig(), Memories: ds.Memories,
	}
	start := time.Now()
	if err := indexCorpus(ctx, ix, ds, &o, rep); err != nil {
		return nil, err
	}
	rep.IndexSeconds = time.Since(start).Seconds()
	rep.Embedder = o.Embedder.Identity() // after indexing: some embedders learn their dimension
	st, err := ix.Stats(ctx)
	if err != nil {
		return nil, err
	}
	rep.Chunks = st.ChunkCount
	if slices.Contains(o.Modes, search.Hybrid) {
		progress(&o, "calibrate", 0, 1)
		start := time.Now()
		cal, err := search.Calibrate(ctx, ix, &search.CalibrateOptions{DocTypes: []string{ds.docType()}})
		switch {
		case err == nil:
			rep.Calibration, rep.CalibrateSeconds = &cal, time.Since(start).Seconds()
		case !errors.Is(err, search.ErrTooSmall):
			return nil, fmt.Errorf("eval: %w", err)
		}
		progress(&o, "calibrate", 1, 1)
	}

	for _, m := range o.Modes {
		mrs, err := runMode(ctx, ix, ds, m, &o, st.ChunkCount)
		if err != nil {
			return nil, err
		}
		rep.Results = append(rep.Results, mrs...)
	}
	return rep, nil
}

func indexCorpus(ctx context.Context, ix *engine.Index, ds *Dataset, o *Options, rep *Report) error {
	total := len(ds.Corpus)
	progress(o, "index", 0, total)
	batch := make([]index.Document, 0, o.BatchSize)
	flush := func(done int) error {
		if len(batch) == 0 {
			return nil
		}
		res, err := ix.AddMany(ctx, batch)
		if err != nil {
			return fmt.Errorf("eval: indexing: %w", err)
		}
		for _, r := range res {
			switch {
			case errors.Is(r.Err, engine.ErrEmptyDocument):
				rep.Skipped++
			case r.Err != nil:
				return fmt.Errorf("eval: indexing %s: %w", r.SourceURL, r.Err)
			default:
				rep.Documents++
			}
		}
		batch = batch[:0]
		progress(o, "index", done, total)
		return nil
	}
	for i, d := range ds.Corpus {
		text := d.Text
		if text == "" {
			text = d.Title
		}
		batch = append(batch, index.Document{SourceURL: sourcePrefix + d.ID, Title: d.Title, Content: text, DocType: ds.docType(), Attrs: d.Attrs})
		if len(batch) == o.BatchSize {
			if err := flush(i + 1); err != nil {
				return err
			}
		}
	}
	return flush(total)
}

func progress(o *Options, stage string, done, total int) {
	if o.Progress != nil {
		o.Progress(Progress{Stage: stage, Done: done, Total: total})
	}
}

// runMode evaluates mode m: one result, or one per Hybrid for hybrid search.
// Queries run one at a time; for each, the hybrid variants run in turn, the
// first through the store and the others on the candidates it retrieved.
func runMode(ctx context.Context, ix *engine.Index, ds *Dataset, m search.Mode, o *Options, chunks int) ([]ModeResult, error) {
	variants := []Hybrid{{}}
	if o.Search != nil {
		variants[0].Search = *o.Search
	}
	if m == search.Hybrid && len(o.Hybrids) > 0 {
		variants = o.Hybrids
	}
	bases := make([]search.Options, len(variants))
	mrs := make([]ModeResult, len(variants))
	lats := make([][]float64, len(variants))
	for i, v := range variants {
		b := v.Search
		b.Mode = m
		b.SimilarityThreshold = -1
		b.DocTypes = []string{ds.docType()}
		b.SourceURL, b.Attrs = "", nil
		if b.Now.IsZero() {
			b.Now = ds.AskedAt
		}
		bases[i] = b
		mrs[i].Mode = string(m)
		if m == search.Hybrid {
			mrs[i].Fusion = v.Label
		}
		lats[i] = make([]float64, 0, len(ds.Order))
	}
	cats := make([]map[string]*CategoryResult, len(variants))
	for i := range cats {
		cats[i] = map[string]*CategoryResult{}
	}
	rec := newRecorder(ix)
	stage := "search " + string(m)
	for qi, qid := range ds.Order {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		rec.reset(ds.Queries[qid])
		rel := ds.Qrels[qid]
		for i := range variants {
			ranking, method, took, err := rank(ctx, rec, ds.Queries[qid], bases[i], o.Depth, chunks, o.AsReturned)
			if err != nil {
				return nil, fmt.Errorf("eval: query %s (%s): %w", clip(qid), m, err)
			}
			if method != "" {
				mrs[i].Method = method
			}
			q := QueryResult{ID: qid, Category: ds.Categories[qid], Metrics: Measure(ranking, rel), LatencyMs: float64(took.Microseconds()) / 1000}
			mrs[i].Metrics.add(q.Metrics, 1)
			if c, ok := ds.Categories[qid]; ok {
				cr := cats[i][c]
				if cr == nil {
					cr = &CategoryResult{Category: c}
					cats[i][c] = cr
				}
				cr.Queries++
				cr.Metrics.add(q.Metrics, 1)
			}
			lats[i] = append(lats[i], q.LatencyMs)
			if o.PerQuery {
				q.Ranking = ranking
				mrs[i].PerQuery = append(mrs[i].PerQuery, q)
			}
		}
		if (qi+1)%10 == 0 || qi+1 == len(ds.Order) {
			progress(o, stage, qi+1, len(ds.Order))
		}
	}
	n := float64(len(ds.Order))
	for i := range mrs {
		mrs[i].Metrics = scaled(mrs[i].Metrics, 1/n)
		mrs[i].LatencyP50Ms, mrs[i].LatencyP95Ms = Percentile(lats[i], 50), Percentile(lats[i], 95)
		if mrs[i].Method == "" {
			mrs[i].Method = methodOf(m)
		}
		for _, cr := range cats[i] {
			cr.Metrics = scaled(cr.Metrics, 1/float64(cr.Queries))
			mrs[i].Categories = append(mrs[i].Categories, *cr)
		}
		sort.Slice(mrs[i].Categories, func(a, b int) bool { return mrs[i].Categories[a].Category < mrs[i].Categories[b].Category })
	}
	return mrs, nil
}

func scaled(m Metrics, w float64) Metrics {
	var r Metrics
	r.add(m, w)
	return r
}

// recorder is the retriever the queries of runMode go through: it keeps the
// candidate lists of the current query, so that the second and later hybrid
// variants fuse the very lists the first retrieved.
type recorder struct {
	ix    *engine.Index
	query string
	text  map[int][]driver.Hit
	vec   map[int][]driver.Hit
}

func newRecorder(ix *engine.Index) *recorder { return &recorder{ix: ix} }

// Embedder and Setting let search see the store through the recorder, as
// it would see the index itself (its automatic fusion weight).
func (r *recorder) Embedder() embed.Embedder { return r.ix.Embedder() }

func (r *recorder) Setting(ctx context.Context, key string) (string, bool, error) {
	return r.ix.Setting(ctx, key)
}

// EmbedQuery, Vectors and Similarities let hybrid search refine its vector
// list by feedback through the recorder, as it would on the index.
func (r *recorder) EmbedQuery(ctx context.Context, query string) ([]float32, error) {
	return r.ix.EmbedQuery(ctx, query)
}

func (r *recorder) Vectors(ctx context.Context, ids []string) ([][]float32, error) {
	return r.ix.Vectors(ctx, ids)
}

func (r *recorder) Similarities(ctx context.Context, vecs [][]float32, ids []string) ([][]float64, error) {
	return r.ix.Similarities(ctx, vecs, ids)
}

// Records lists the store's records, for searches by conversation unit.
func (r *recorder) Records(ctx context.Context, f index.Filter) ([]index.Record, error) {
	return r.ix.Records(ctx, f)
}

func (r *recorder) reset(query string) {
	r.query, r.text, r.vec = query, map[int][]driver.Hit{}, map[int][]driver.Hit{}
}

func (r *recorder) FullText(ctx context.Context, query string, k int, f index.Filter) ([]driver.Hit, error) {
	return r.lookup(ctx, r.text, r.ix.FullText, query, k, f)
}

func (r *recorder) Vector(ctx context.Context, query string, k int, f index.Filter) ([]driver.Hit, error) {
	return r.lookup(ctx, r.vec, r.ix.Vector, query, k, f)
}

func (r *recorder) lookup(ctx context.Context, seen map[int][]driver.Hit, search func(context.Context, string, int, index.Filter) ([]driver.Hit, error), query string, k int, f index.Filter) ([]driver.Hit, error) {
	if query == r.query {
		if hs, ok := seen[k]; ok {
			return hs, nil
		}
	}
	hs, err := search(ctx, query, k, f)
	if err == nil && query == r.query {
		seen[k] = hs
	}
	return hs, err
}

// methodOf names a mode's method when no query returned anything to read it from.
func methodOf(m search.Mode) string {
	switch m {
	case search.FullText:
		return "bm25"
	case search.Vector:
		return "vector"
	}
	return string(m)
}

// rank returns the documents of query's ranking, best first, at least depth
// of them unless the store holds fewer matching chunks.
func rank(ctx context.Context, r search.Retriever, query string, o search.Options, depth, chunks int, asReturned bool) ([]string, string, time.Duration, error) {
	k := 2 * depth
	start := time.Now()
	if asReturned {
		o.TopK = depth
		res, err := search.Search(ctx, r, query, &o)
		if err != nil {
			return nil, "", 0, err
		}
		docs := make([]string, 0, len(res))
		seen := make(map[string]bool, len(res))
		method := ""
		for i, x := range res {
			for j, src := range resultSources(&x) {
				id, ok := docID(src)
				if !ok || seen[id] {
					id = fmt.Sprintf("\x00repeat-%d-%d", i, j) // judged by no qrel
				}
				seen[id] = true
				docs = append(docs, id)
			}
			method = x.Explanation.Method
		}
		return docs, method, time.Since(start), nil
	}
	for {
		o.TopK = k
		res, err := search.Search(ctx, r, query, &o)
		if err != nil {
			return nil, "", 0, err
		}
		docs := make([]string, 0, depth)
		seen := make(map[string]bool, len(res))
		for _, x := range res {
			for _, src := range resultSources(&x) {
				id, ok := docID(src)
				if !ok || seen[id] {
					continue
				}
				seen[id] = true
				docs = append(docs, id)
			}
		}
		method := ""
		if len(res) > 0 {
			method = res[0].Explanation.Method
		}
		if len(docs) >= depth || len(res) < k || k >= chunks {
			return docs[:min(depth, len(docs))], method, time.Since(start), nil
		}
		k *= 4
	}
}

func docID(src string) (string, bool) {
	if len(src) <= len(sourcePrefix) || src[:len(sourcePrefix)] != sourcePrefix {
		return "", false
	}
	return src[len(sourcePrefix):], true
}

// resultSources are the sources a result shows, in the order a reader
// meets them: its own, or a unit's turns, those the search ranked first
// (best first), then the others in the conversation's order.
func resultSources(x *search.Result) []string {
	if x.Unit == nil {
		return []string{x.Record.SourceURL}
	}
	turns := slices.Clone(x.Unit.Turns)
	slices.SortStableFunc(turns, func(a, b search.UnitMember) int { return cmp.Compare(b.Score, a.Score) })
	out := make([]string, len(turns))
	for i, t := range turns {
		out[i] = t.SourceURL
	}
	return out
}

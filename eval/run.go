// Package eval measures retrieval quality: it loads a BEIR-format data set,
// indexes its corpus into a temporary store through ragmem's normal pipeline
// (chunking, embedding, both indexes), runs every judged query in each
// search mode and reports nDCG@10, Recall@10, Recall@100 and MRR@10 (the
// trec_eval definitions, see [NDCG]), query latency and indexing time.
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
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/ragmem/ragmem/chunk"
	"github.com/ragmem/ragmem/embed"
	"github.com/ragmem/ragmem/index"
	"github.com/ragmem/ragmem/index/driver"
	"github.com/ragmem/ragmem/index/local"
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
	// PerQuery keeps every query's metrics and ranking in the report.
	// Default false.
	PerQuery bool
	// Progress, when set, is called as indexing and searching advance, from
	// the goroutine that called Run. Default nil.
	Progress func(Progress)
	// Logger receives the store's warnings. Default slog.Default().
	Logger *slog.Logger
}

// Progress reports how far Run is.
type Progress struct {
	Stage string // "index", or "search <mode>"
	Done  int
	Total int
}

// Report is what Run measured.
type Report struct {
	Dataset      string       `json:"dataset"`
	Split        string       `json:"split"`
	Documents    int          `json:"documents"`        // documents indexed
	Skipped      int          `json:"skippedDocuments"` // documents without text
	Chunks       int          `json:"chunks"`
	Queries      int          `json:"queries"`
	Embedder     string       `json:"embedder"`
	FullText     string       `json:"fullText"`      // the BM25 configuration
	IndexSeconds float64      `json:"indexSeconds"`  // chunk + embed + both indexes, durable
	Depth        int          `json:"documentDepth"` // documents ranked per query
	Results      []ModeResult `json:"results"`
}

// ModeResult holds one mode's metrics, averaged over the queries.
type ModeResult struct {
	Mode         string        `json:"mode"`
	Method       string        `json:"method"` // "bm25", "vector", "rrf(k=60)", ...
	NDCG10       float64       `json:"ndcg@10"`
	Recall10     float64       `json:"recall@10"`
	Recall100    float64       `json:"recall@100"`
	MRR10        float64       `json:"mrr@10"`
	LatencyP50Ms float64       `json:"latencyP50Ms"`
	LatencyP95Ms float64       `json:"latencyP95Ms"`
	PerQuery     []QueryResult `json:"perQuery,omitempty"`
}

// QueryResult is one query's outcome (Options.PerQuery).
type QueryResult struct {
	ID        string   `json:"id"`
	NDCG10    float64  `json:"ndcg@10"`
	Recall100 float64  `json:"recall@100"`
	LatencyMs float64  `json:"latencyMs"`
	Ranking   []string `json:"ranking"` // document ids, best first, at most 10
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
	ix, err := index.Open(ctx, "", &index.Options{Embedder: o.Embedder, Backend: be, Chunking: o.Chunking, Logger: o.Logger})
	if err != nil {
		_ = be.Close()
		return nil, err
	}
	defer ix.Close()

	rep := &Report{
		Dataset: ds.Name, Split: ds.Split, Queries: len(ds.Order), Depth: o.Depth,
		FullText: be.FullTextConfig(),
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

	for _, m := range o.Modes {
		mr, err := runMode(ctx, ix, ds, m, &o, st.ChunkCount)
		if err != nil {
			return nil, err
		}
		rep.Results = append(rep.Results, *mr)
	}
	return rep, nil
}

func indexCorpus(ctx context.Context, ix *index.Index, ds *Dataset, o *Options, rep *Report) error {
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
			case errors.Is(r.Err, index.ErrEmptyDocument):
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
		batch = append(batch, index.Document{SourceURL: sourcePrefix + d.ID, Title: d.Title, Content: text})
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

func runMode(ctx context.Context, ix *index.Index, ds *Dataset, m search.Mode, o *Options, chunks int) (*ModeResult, error) {
	var base search.Options
	if o.Search != nil {
		base = *o.Search
	}
	base.Mode = m
	base.SimilarityThreshold = -1
	base.DocTypes = []string{index.DocKnowledge}
	base.SourceURL, base.Attrs = "", nil

	mr := &ModeResult{Mode: string(m)}
	stage := "search " + string(m)
	lat := make([]float64, 0, len(ds.Order))
	var sum ModeResult
	for i, qid := range ds.Order {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		ranking, method, took, err := rank(ctx, ix, ds.Queries[qid], base, o.Depth, chunks)
		if err != nil {
			return nil, fmt.Errorf("eval: query %s (%s): %w", clip(qid), m, err)
		}
		if method != "" {
			mr.Method = method
		}
		rel := ds.Qrels[qid]
		q := QueryResult{
			ID:        qid,
			NDCG10:    NDCG(ranking, rel, 10),
			Recall100: Recall(ranking, rel, 100),
			LatencyMs: float64(took.Microseconds()) / 1000,
		}
		sum.NDCG10 += q.NDCG10
		sum.Recall10 += Recall(ranking, rel, 10)
		sum.Recall100 += q.Recall100
		sum.MRR10 += MRR(ranking, rel, 10)
		lat = append(lat, q.LatencyMs)
		if o.PerQuery {
			q.Ranking = ranking[:min(10, len(ranking))]
			mr.PerQuery = append(mr.PerQuery, q)
		}
		if (i+1)%10 == 0 || i+1 == len(ds.Order) {
			progress(o, stage, i+1, len(ds.Order))
		}
	}
	n := float64(len(ds.Order))
	mr.NDCG10, mr.Recall10, mr.Recall100, mr.MRR10 = sum.NDCG10/n, sum.Recall10/n, sum.Recall100/n, sum.MRR10/n
	mr.LatencyP50Ms, mr.LatencyP95Ms = Percentile(lat, 50), Percentile(lat, 95)
	if mr.Method == "" {
		mr.Method = methodOf(m)
	}
	return mr, nil
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
func rank(ctx context.Context, r search.Retriever, query string, o search.Options, depth, chunks int) ([]string, string, time.Duration, error) {
	k := 2 * depth
	start := time.Now()
	for {
		o.TopK = k
		res, err := search.Search(ctx, r, query, &o)
		if err != nil {
			return nil, "", 0, err
		}
		docs := make([]string, 0, depth)
		seen := make(map[string]bool, len(res))
		for _, x := range res {
			id, ok := docID(&x.Record)
			if !ok || seen[id] {
				continue
			}
			seen[id] = true
			docs = append(docs, id)
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

func docID(r *driver.Record) (string, bool) {
	if len(r.SourceURL) <= len(sourcePrefix) || r.SourceURL[:len(sourcePrefix)] != sourcePrefix {
		return "", false
	}
	return r.SourceURL[len(sourcePrefix):], true
}

package bench

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"time"

	"github.com/ragmem/ragmem/cmd/ragmem/internal/units"
	"github.com/ragmem/ragmem/index"
	"github.com/ragmem/ragmem/internal/benchdata"
	"github.com/ragmem/ragmem/internal/embed"
	"github.com/ragmem/ragmem/internal/index/engine"
	"github.com/ragmem/ragmem/internal/index/local"
	"github.com/ragmem/ragmem/search"
)

// corpusRun is the measurement of one corpus with one embedder, in steps:
// pre-embed, index, settle and calibrate, query in each mode, the vector
// index alone, the peers and the export, then a cold open. Each step fills
// its part of res.
type corpusRun struct {
	c         *corpus
	dir       string
	be        Embedder
	exportDir string
	o         Options
	res       *Result

	emb     embed.Embedder    // be's embedder, or its memo when pre-embedded
	noCache *embed.QueryCache // no query cache: every mode's latency includes embedding its query
	ix      *engine.Index     // open from index to the close before the cold open
	lb      *local.Backend    // the index's backend when it is the local one
	texts   []string          // the queries' texts
	qvecs   [][]float32       // their vectors
	truth   [][]string        // the exact top 10 of each query, for the peers' recall

	stopQueryProfile func() // the CPU profile of querying: queryModes to vectorPool
}

func benchCorpus(ctx context.Context, c *corpus, dir string, be Embedder, exportDir string, o Options) (*Result, error) {
	_ = os.RemoveAll(dir)
	r := &corpusRun{c: c, dir: dir, be: be, exportDir: exportDir, o: o, emb: be.Embedder,
		noCache: embed.NewQueryCache(&embed.QueryCacheOptions{MaxEntries: -1})}
	r.res = &Result{Corpus: c.name, Documents: c.n, GOMAXPROCS: runtime.GOMAXPROCS(0), NDCG10: map[string]float64{}, EmbedderName: be.Name,
		Load1: loadAverage(), Embedder: be.Embedder.Identity()}
	if o.PreEmbed {
		cleanup, err := r.preEmbed(ctx)
		if err != nil {
			return nil, err
		}
		defer cleanup()
	}
	if err := r.measureOpen(ctx); err != nil {
		if r.stopQueryProfile != nil {
			r.stopQueryProfile()
		}
		if r.ix != nil {
			r.ix.Close()
		}
		return nil, err
	}
	if err := r.ix.Close(); err != nil {
		return nil, err
	}
	r.res.DiskBytes = dirSize(dir)
	r.res.DiskBleveBytes = dirSize(filepath.Join(dir, "bleve"))
	if err := r.coldOpen(ctx); err != nil {
		return nil, err
	}
	return r.res, nil
}

// preEmbed embeds every chunk beforehand and makes the memo the embedder
// indexing uses; the returned function removes the memo's file.
func (r *corpusRun) preEmbed(ctx context.Context) (func(), error) {
	c, be, o, res := r.c, r.be, r.o, r.res
	o.logf("%s/%s: embedding every chunk before indexing", c.name, be.Name)
	memo, took, err := preEmbed(ctx, c, r.emb, r.dir+"-vectors", o)
	if err != nil {
		return nil, err
	}
	res.PreEmbedded = true
	res.EmbedSeconds = took.Seconds()
	res.EmbedChunksPerSec = float64(len(memo.rows)) / took.Seconds()
	o.logf("%s/%s: embedded %d chunks in %.1fs (%.0f chunks/s)", c.name, be.Name, len(memo.rows), took.Seconds(), res.EmbedChunksPerSec)
	r.emb = memo
	return func() {
		memo.close()
		os.RemoveAll(r.dir + "-vectors")
	}, nil
}

// measureOpen runs the steps that need the store open; the caller closes
// r.ix.
func (r *corpusRun) measureOpen(ctx context.Context) error {
	for _, step := range []func(context.Context) error{r.index, r.settleAndCalibrate, r.queryModes, r.vectorPool, r.peersAndExport} {
		if err := step(ctx); err != nil {
			return err
		}
	}
	return nil
}

// index opens a fresh store and indexes the corpus into it.
func (r *corpusRun) index(ctx context.Context) error {
	c, o, res := r.c, r.o, r.res
	ix, err := engine.Open(ctx, r.dir, &engine.Options{Embedder: r.emb, QueryCache: r.noCache, Logger: quietLogger()})
	if err != nil {
		return err
	}
	r.ix = ix
	o.logf("%s: indexing %d documents", c.name, c.n)
	stopProfile := o.startProfile(c.name, "index")
	start := time.Now()
	cpu0 := cpuSeconds()
	if err := indexCorpus(ctx, ix, c, o, start); err != nil {
		return err
	}
	res.IndexCPUSeconds = cpuSeconds() - cpu0
	res.IndexSeconds = time.Since(start).Seconds()
	if memo, ok := r.emb.(*memoEmbedder); ok {
		res.EmbedMisses = memo.misses.Load() // queries later miss by design
	}
	stopProfile()
	st, err := ix.Stats(ctx)
	if err != nil {
		return err
	}
	res.Chunks = st.ChunkCount
	res.Dimension = st.Dimension
	res.ChunksPerSec = float64(res.Chunks) / res.IndexSeconds
	res.Writers = max(1, o.Writers)
	r.lb, _ = ix.Backend().(*local.Backend)
	o.logf("%s: %d chunks in %.1fs (%.0f chunks/s)", c.name, res.Chunks, res.IndexSeconds, res.ChunksPerSec)
	res.RSSAfterIndexBytes, res.HeapAfterIndexBytes = memUsage()
	return nil
}

// settleAndCalibrate waits for background work to stop, then calibrates
// the fusion as rag.Engine does once a store has settled, so that the
// queries run with the weight users get.
func (r *corpusRun) settleAndCalibrate(ctx context.Context) error {
	c, o, res := r.c, r.o, r.res
	res.SettleSeconds = settle()
	if res.SettleSeconds >= 1 {
		o.logf("%s: background work (bleve's segment merges) settled %.0fs after indexing", c.name, res.SettleSeconds)
	}
	calStart := time.Now()
	if _, err := search.Calibrate(ctx, r.ix, nil); err != nil && !errors.Is(err, search.ErrTooSmall) {
		return err
	}
	res.CalibrateSeconds = time.Since(calStart).Seconds()
	o.logf("%s: fusion calibrated in %.1fs", c.name, res.CalibrateSeconds)
	return nil
}

// queryModes runs the queries in each mode as the CLI runs them (top 10,
// no threshold so that every query returns results to rank). The CPU
// profile of querying starts here and stops after vectorPool.
func (r *corpusRun) queryModes(ctx context.Context) error {
	c, res := r.c, r.res
	r.stopQueryProfile = r.o.startProfile(c.name, "query")
	r.texts = make([]string, len(c.queries))
	for i, q := range c.queries {
		r.texts[i] = q.Text
	}
	for _, mode := range []search.Mode{search.Hybrid, search.Vector, search.FullText} {
		l, ndcg, err := r.queryMode(ctx, mode)
		if err != nil {
			return err
		}
		switch mode {
		case search.Hybrid:
			res.Hybrid = l
		case search.Vector:
			res.Vector = l
		case search.FullText:
			res.FullText = l
		}
		res.NDCG10[string(mode)] = ndcg
		r.o.logf("%s: %s p50 %.2f ms, nDCG@10 %.4f", c.name, mode, l.P50, ndcg)
	}
	return nil
}

// queryMode times every query in one mode and returns the latencies and
// the mean nDCG@10.
func (r *corpusRun) queryMode(ctx context.Context, mode search.Mode) (Latency, float64, error) {
	qs := r.c.queries
	var ds []time.Duration
	var ndcg float64
	for i, q := range qs {
		t0 := time.Now()
		so := search.Options{Mode: mode, TopK: 10, SimilarityThreshold: -1}
		if mode == search.Hybrid {
			so = r.o.Fusion
			so.Mode, so.TopK, so.SimilarityThreshold = mode, 10, -1
		}
		rs, err := search.Search(ctx, r.ix, q.Text, &so)
		d := time.Since(t0)
		if err != nil {
			return Latency{}, 0, err
		}
		if i >= 5 || len(qs) <= 5 { // the first few warm caches
			ds = append(ds, d)
		}
		ranked := make([]string, len(rs))
		for j, x := range rs {
			ranked[j] = docOf(x.Record.SourceURL)
		}
		if mode == search.Hybrid && r.res.HybridMethod == "" && len(rs) > 0 {
			r.res.HybridMethod = rs[0].Explanation.Method
		}
		ndcg += benchdata.NDCG10(ranked, q.Relevant)
	}
	return summarise(ds), ndcg / float64(max(1, len(qs))), nil
}

// vectorPool measures the vector index alone answering a hybrid candidate
// pool, approximate and exact, and its recall; with an export, it keeps
// each query's exact top 10 for the peers' recall.
func (r *corpusRun) vectorPool(ctx context.Context) error {
	defer r.stopQueryProfile()
	res := r.res
	r.qvecs = make([][]float32, len(r.texts))
	for i, t := range r.texts {
		var err error
		if r.qvecs[i], err = r.ix.EmbedQuery(ctx, t); err != nil {
			return err
		}
	}
	f := index.Filter{DocTypes: []string{index.DocKnowledge}}
	pool := search.MinCandidatePool
	var approx, exact []time.Duration
	for _, q := range r.qvecs {
		t0 := time.Now()
		if _, err := r.ix.VectorByEmbedding(ctx, q, pool, f); err != nil {
			return err
		}
		approx = append(approx, time.Since(t0))
	}
	if lb := r.lb; lb != nil {
		for _, q := range r.qvecs[:min(len(r.qvecs), 100)] {
			t0 := time.Now()
			lb.VectorSearchExact(q, pool)
			exact = append(exact, time.Since(t0))
		}
		res.Recall10, _ = lb.VectorRecall(r.qvecs, 10)
		if r.exportDir != "" {
			for _, q := range r.qvecs {
				top, _ := lb.VectorSearchExact(q, 10)
				ids := make([]string, len(top))
				for i, x := range top {
					ids[i] = x.ID
				}
				r.truth = append(r.truth, ids)
			}
		}
	}
	res.VectorPool, res.VectorPoolExact = summarise(approx), summarise(exact)
	r.o.logf("%s: vector index top-%d p50 %.2f ms (exact scan %.2f ms), recall@10 %.4f", r.c.name, pool, res.VectorPool.P50, res.VectorPoolExact.P50, res.Recall10)
	return nil
}

// peersAndExport measures chromem-go's exhaustive query on the same
// vectors (up to --chromem-max chunks), exports the corpus for the Node
// peers, and measures chromem-go and bleve alone (--peers).
func (r *corpusRun) peersAndExport(ctx context.Context) error {
	c, o, res := r.c, r.o, r.res
	var records []index.Record
	if r.exportDir != "" || o.Peers || res.Chunks <= o.ChromemMax {
		var err error
		if records, err = r.ix.Records(ctx, index.Filter{}); err != nil {
			return err
		}
	}
	if res.Chunks <= o.ChromemMax {
		l, err := benchChromem(ctx, records, r.qvecs)
		if err != nil {
			return err
		}
		res.Chromem = &l
		if res.Hybrid.P50 > 0 {
			res.HybridSpeedup = l.P50 / res.Hybrid.P50
		}
		o.logf("%s: chromem-go exhaustive top-%d p50 %.2f ms (hybrid %.1fx faster)", c.name, search.MinCandidatePool, l.P50, res.HybridSpeedup)
	}
	if r.exportDir != "" {
		if err := exportCorpus(r.exportDir, records, c.queries, r.qvecs, r.truth); err != nil {
			return err
		}
	}
	if o.Peers {
		res.Peers = append(res.Peers, chromemAlone(ctx, records, c.queries, r.qvecs))
		bl, err := bleveAlone(ctx, r.dir+"-bleve", records, c.queries)
		if err != nil {
			return err
		}
		res.Peers = append(res.Peers, bl)
		_ = os.RemoveAll(r.dir + "-bleve")
	}
	return nil
}

// coldOpen opens the closed store anew and times the open and the first
// query after it.
func (r *corpusRun) coldOpen(ctx context.Context) error {
	c, res := r.c, r.res
	runtime.GC()
	debug.FreeOSMemory()
	start := time.Now()
	ix, err := engine.Open(ctx, r.dir, &engine.Options{Embedder: r.emb, QueryCache: r.noCache, Logger: quietLogger()})
	if err != nil {
		return err
	}
	res.ColdOpenSeconds = time.Since(start).Seconds()
	t0 := time.Now()
	if _, err := search.Search(ctx, ix, r.texts[0], nil); err != nil {
		ix.Close()
		return err
	}
	res.ColdFirstQueryMs = float64(time.Since(t0).Microseconds()) / 1000
	if lb, ok := ix.Backend().(*local.Backend); ok {
		res.ColdCodesLoaded = !lb.Recovery().VectorIndexRebuilt
	}
	res.RSSAfterOpenBytes, res.HeapAfterOpenBytes = memUsage()
	r.o.logf("%s: cold open %.2fs, first query %.1f ms (vector codes loaded: %v); disk %s", c.name, res.ColdOpenSeconds, res.ColdFirstQueryMs, res.ColdCodesLoaded, units.Bytes(res.DiskBytes))
	return ix.Close()
}

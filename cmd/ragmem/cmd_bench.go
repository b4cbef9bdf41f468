package main

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/blevesearch/bleve/v2"
	index_api "github.com/blevesearch/bleve_index_api"
	chromem "github.com/philippgille/chromem-go"
	"github.com/spf13/cobra"

	"github.com/ragmem/ragmem/chunk"
	"github.com/ragmem/ragmem/embed"
	"github.com/ragmem/ragmem/index"
	"github.com/ragmem/ragmem/index/local"
	"github.com/ragmem/ragmem/internal/benchdata"
	"github.com/ragmem/ragmem/search"
)

// benchOptions configure one bench run.
type benchOptions struct {
	corpora   []string // "scifact" or a synthetic size such as "10k"
	queries   int      // queries per corpus (synthetic); SciFact uses its 300 judged ones
	words     int      // words per synthetic document
	workDir   string   // where stores are built; removed afterwards unless keep
	keep      bool
	export    string          // directory to export chunks, vectors and queries for peers
	peers     bool            // also run chromem-go alone and bleve alone
	chromemTo int             // measure chromem-go's exhaustive query up to this many chunks
	batch     int             // documents per AddMany call
	writers   int             // AddMany calls in flight
	profile   string          // write a CPU profile of the indexing phase to this file prefix
	embedders []benchEmbedder // measured one after the other on each corpus; none: the lexical default
	preEmbed  bool            // embed every chunk before indexing, so that indexing is timed without the embedder
	fusion    search.Options  // the hybrid queries' fusion (--fusion); zero: the engine's default
	log       io.Writer
}

// defaultBenchEmbedders are measured side by side when neither --embedders
// nor --embedder (nor its environment variable or config key) says otherwise:
// the offline lexical default, whose sparse vectors the int8 scan exploits,
// and the dense randproj test embedder, whose vectors are like a neural
// model's.
var defaultBenchEmbedders = []string{"lexical", "randproj"}

// latency summarises query times in milliseconds.
type latency struct {
	P50 float64 `json:"p50Ms"`
	P95 float64 `json:"p95Ms"`
	P99 float64 `json:"p99Ms"`
	N   int     `json:"n"`
}

func summarise(ds []time.Duration) latency {
	if len(ds) == 0 {
		return latency{}
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	at := func(p float64) float64 {
		i := int(math.Ceil(p*float64(len(s)))) - 1
		return float64(s[max(0, min(i, len(s)-1))].Microseconds()) / 1000
	}
	return latency{P50: at(0.50), P95: at(0.95), P99: at(0.99), N: len(s)}
}

// peerResult is one peer's figures on the same data.
type peerResult struct {
	Name         string  `json:"name"`
	IndexSeconds float64 `json:"indexSeconds"`
	PerSecond    float64 `json:"perSecond"` // chunks indexed per second
	Query        latency `json:"query"`
	NDCG10       float64 `json:"ndcg10,omitempty"`
	K            int     `json:"k"`
}

// benchResult is what bench measures on one corpus with one embedder.
type benchResult struct {
	Corpus       string `json:"corpus"`
	Documents    int    `json:"documents"`
	Chunks       int    `json:"chunks"`
	EmbedderName string `json:"embedderName"` // as given in --embedders
	Embedder     string `json:"embedder"`     // its identity
	Dimension    int    `json:"dimension"`
	// PreEmbedded is set when every chunk was embedded before indexing
	// (EmbedSeconds, at EmbedChunksPerSec): IndexSeconds then excludes the
	// embedder's own time. EmbedMisses counts chunks indexing had to embed
	// anyway (0 unless the chunking changed).
	PreEmbedded       bool    `json:"preEmbedded"`
	EmbedSeconds      float64 `json:"embedSeconds,omitempty"`
	EmbedChunksPerSec float64 `json:"embedChunksPerSecond,omitempty"`
	EmbedMisses       int64   `json:"embedMisses,omitempty"`
	IndexSeconds      float64 `json:"indexSeconds"`
	ChunksPerSec      float64 `json:"chunksPerSecond"`
	// IndexCPUSeconds is the process CPU time (user + system) of indexing:
	// on a loaded machine, chunks per CPU second times the cores is what an
	// idle machine would approach.
	IndexCPUSeconds float64 `json:"indexCpuSeconds"`
	Writers         int     `json:"writers"`
	SettleSeconds   float64 `json:"settleSeconds"` // until background work (bleve merges) stopped using CPU
	// CalibrateSeconds is the fusion calibration's time after indexing (the
	// background work rag.Engine does once a store has settled): the
	// queries then run with the weight users get.
	CalibrateSeconds float64 `json:"calibrateSeconds"`

	Hybrid latency `json:"hybrid"`
	// HybridMethod is the fusion the hybrid queries ran, as their results
	// explain it (for example "relative(alpha=0.50, calibrated, feedback=3)").
	HybridMethod string  `json:"hybridMethod,omitempty"`
	Vector       latency `json:"vector"`
	FullText     latency `json:"fulltext"`
	// VectorPool is the vector index alone answering a hybrid candidate
	// pool (top 100) for a query vector, approximate and exact.
	VectorPool      latency `json:"vectorIndexTop100"`
	VectorPoolExact latency `json:"vectorIndexTop100Exact"`
	// Chromem is chromem-go's exhaustive QueryEmbedding (top 100, doc type
	// filter) over the same vectors in the same process.
	Chromem       *latency `json:"chromemTop100,omitempty"`
	HybridSpeedup float64  `json:"hybridP50SpeedupOverChromem,omitempty"`
	Recall10      float64  `json:"recallAt10"`

	NDCG10 map[string]float64 `json:"ndcg10"`

	ColdOpenSeconds  float64 `json:"coldOpenSeconds"`
	ColdFirstQueryMs float64 `json:"coldFirstQueryMs"`
	// ColdCodesLoaded is set when the cold open loaded the vector index's
	// persisted codes (nothing was rebuilt).
	ColdCodesLoaded     bool         `json:"coldVectorCodesLoaded"`
	RSSAfterIndexBytes  int64        `json:"rssAfterIndexBytes"`
	HeapAfterIndexBytes int64        `json:"heapAfterIndexBytes"`
	RSSAfterOpenBytes   int64        `json:"rssAfterOpenBytes"`
	HeapAfterOpenBytes  int64        `json:"heapAfterOpenBytes"`
	DiskBytes           int64        `json:"diskBytes"`
	DiskBleveBytes      int64        `json:"diskBleveBytes"`
	GOMAXPROCS          int          `json:"gomaxprocs"`
	Peers               []peerResult `json:"peers,omitempty"`
	Load1               float64      `json:"loadAverage1m"`
}

func newBenchCmd(g *globals) *cobra.Command {
	o := benchOptions{}
	var asJSON bool
	var corpora, embedders, fusion string
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Measure indexing, query latency, recall, cold open, memory and disk on generated or SciFact corpora",
		Long: `bench builds fresh stores in a temporary directory (never the data directory), one per
corpus and embedder, and measures: indexing throughput, hybrid/vector/full-text query latency
(p50/p95/p99, top 10 as the CLI searches), the vector index alone for a hybrid candidate pool
(top 100, approximate and exact) next to chromem-go's exhaustive query on the same vectors,
recall@10 of the approximate vector search against the exact one, nDCG@10, cold open time and
the first query after it, resident memory and disk size.

Embedders: --embedders lists embedder specs measured side by side (default: the one --embedder,
$RAGMEM_EMBEDDER or the config file names, else "lexical,randproj": the offline lexical default
and the dense randproj test embedder). "loopback:SPEC" serves SPEC's vectors from an in-process
OpenAI-compatible server on 127.0.0.1 and measures ragmem through its openai embedder (the full
client path: HTTP, JSON, batching). By default every chunk is embedded before indexing starts
(--pre-embed), so that the indexing figure excludes the embedder's own time, which is reported
on its own line; --pre-embed=false times both together.

Corpora: "scifact" (the BEIR SciFact collection, found in shared/eval/scifact above the working
directory or in $RAGMEM_SCIFACT_DIR) and synthetic sizes such as 10k, 100k or 1m (one chunk of
about 110 words per document, known-item queries). --peers adds chromem-go alone (vector) and
bleve alone (BM25) on the same chunks; --export writes chunks, vectors and queries for the Node
peers of bench/run.sh.`,
		Example: "  ragmem bench --corpora scifact,10k\n  ragmem bench --corpora 100k --embedders randproj,loopback:randproj\n  ragmem bench --corpora 100k --peers --json > bench.json",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			o.corpora = strings.Split(corpora, ",")
			if fusion != "" {
				fo, err := search.ParseFusionSpec(fusion)
				if err != nil {
					return err
				}
				o.fusion = fo
			}
			o.log = g.stderr
			c, err := g.resolveEmbedder(nil)
			if err != nil {
				return err
			}
			var specs []string
			for _, s := range strings.Split(embedders, ",") {
				if s = strings.TrimSpace(s); s != "" {
					specs = append(specs, s)
				}
			}
			if len(specs) == 0 && c.from != srcDefault {
				emb, err := g.buildEmbedder(c)
				if err != nil {
					return err
				}
				o.embedders = append(o.embedders, benchEmbedder{name: c.spec.String(), emb: emb, close: func() {}})
			} else if len(specs) == 0 {
				specs = defaultBenchEmbedders
			}
			for _, s := range specs {
				be, err := newBenchEmbedder(s, &c.build)
				if err != nil {
					return fmt.Errorf("bench: embedder %q: %w", s, err)
				}
				defer be.close()
				o.embedders = append(o.embedders, be)
			}
			res, err := runBench(cmd.Context(), o)
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(g.stdout, res)
			}
			printBench(g.stdout, res)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&corpora, "corpora", "scifact,10k", "comma-separated corpora: scifact and/or synthetic sizes (10k, 100k, 1m)")
	f.IntVar(&o.queries, "queries", 300, "queries per synthetic corpus")
	f.IntVar(&o.words, "words", 110, "words per synthetic document (110 make one chunk of about 350 tokens)")
	f.StringVar(&o.workDir, "work-dir", "", "directory for the stores (default a temporary directory)")
	f.BoolVar(&o.keep, "keep", false, "keep the stores after the run")
	f.StringVar(&o.export, "export", "", "export chunks, vectors and queries of each corpus to this directory (for bench/run.sh)")
	f.BoolVar(&o.peers, "peers", false, "also measure chromem-go alone and bleve alone on the same chunks")
	f.IntVar(&o.chromemTo, "chromem-max", 200000, "measure chromem-go's exhaustive query on corpora of at most this many chunks")
	f.IntVar(&o.batch, "batch", 1000, "documents per indexing call")
	f.IntVar(&o.writers, "writers", 2, "indexing calls in flight (chunking and embedding of one overlap the write of another)")
	f.StringVar(&o.profile, "cpuprofile", "", "write CPU profiles of indexing and querying to FILE-CORPUS-index.pprof and FILE-CORPUS-query.pprof")
	f.StringVar(&embedders, "embedders", "", `comma-separated embedder specs to measure side by side ("loopback:SPEC" serves SPEC over a loopback OpenAI-compatible server); default --embedder if given, else lexical,randproj`)
	f.BoolVar(&o.preEmbed, "pre-embed", true, "embed every chunk before indexing, so that indexing is timed without the embedder (whose throughput is reported apart)")
	f.StringVar(&fusion, "fusion", "", `hybrid fusion with its parameters, as for eval (for example "relative:feedback=0" to time fusion without the feedback pass); default the engine's`)
	f.BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

// parseSize reads 10k, 100k, 1m or a plain number.
func parseSize(s string) (int, error) {
	s = strings.ToLower(strings.TrimSpace(s))
	mult := 1
	switch {
	case strings.HasSuffix(s, "k"):
		mult, s = 1000, strings.TrimSuffix(s, "k")
	case strings.HasSuffix(s, "m"):
		mult, s = 1000000, strings.TrimSuffix(s, "m")
	}
	n, err := strconv.Atoi(s)
	if err != nil || n <= 0 || n > 10000000/mult {
		return 0, fmt.Errorf("bench: bad corpus %q (want scifact or a size such as 10k, 100k, 1m)", s)
	}
	return n * mult, nil
}

// corpus is a benchmark corpus: documents are produced in batches so that
// a million of them never sit in memory at once.
type corpus struct {
	name    string
	n       int
	batch   func(lo, hi int) []benchdata.Doc
	queries []benchdata.Query
}

func loadCorpus(name string, o benchOptions) (*corpus, error) {
	if name == "scifact" {
		dir := benchdata.SciFactDir()
		if dir == "" {
			return nil, errors.New("bench: SciFact not found (set RAGMEM_SCIFACT_DIR to the directory with corpus.jsonl)")
		}
		docs, qs, err := benchdata.LoadBEIR(dir)
		if err != nil {
			return nil, fmt.Errorf("bench: load SciFact: %w", err)
		}
		return &corpus{name: name, n: len(docs), batch: func(lo, hi int) []benchdata.Doc { return docs[lo:hi] }, queries: qs}, nil
	}
	n, err := parseSize(name)
	if err != nil {
		return nil, err
	}
	// Documents are generated from a seed per document, so any batch can
	// be made alone; queries are known items of evenly spaced documents.
	doc := func(i int) benchdata.Doc { return benchdata.NewSynthDoc(int64(i), i, o.words) }
	c := &corpus{name: name, n: n, batch: func(lo, hi int) []benchdata.Doc {
		out := make([]benchdata.Doc, hi-lo)
		for i := range out {
			out[i] = doc(lo + i)
		}
		return out
	}}
	qs := benchdata.NewSynth(int64(n))
	nq := min(o.queries, n)
	for i := 0; i < nq; i++ {
		d := doc(int(int64(i) * int64(n) / int64(nq)))
		c.queries = append(c.queries, qs.KnownItem(fmt.Sprintf("q%d", i), d))
	}
	return c, nil
}

func sourceURL(docID string) string { return "bench://doc/" + docID }

func docOf(sourceURL string) string { return strings.TrimPrefix(sourceURL, "bench://doc/") }

func runBench(ctx context.Context, o benchOptions) ([]benchResult, error) {
	if o.batch <= 0 {
		o.batch = 1000
	}
	work := o.workDir
	if work == "" {
		d, err := os.MkdirTemp("", "ragmem-bench-")
		if err != nil {
			return nil, err
		}
		work = d
	}
	if !o.keep {
		defer os.RemoveAll(work)
	}
	embedders := o.embedders
	if len(embedders) == 0 {
		embedders = []benchEmbedder{{name: "lexical", emb: embed.Default(), close: func() {}}}
	}
	var out []benchResult
	for _, name := range o.corpora {
		name = strings.TrimSpace(name)
		if name == "" {
			continue
		}
		c, err := loadCorpus(name, o)
		if err != nil {
			return nil, err
		}
		for _, be := range embedders {
			sub := name + "-" + safeName(be.name)
			exportDir := ""
			if o.export != "" {
				exportDir = filepath.Join(o.export, name)
				if len(embedders) > 1 {
					exportDir = filepath.Join(o.export, sub)
				}
			}
			r, err := benchCorpus(ctx, c, filepath.Join(work, sub), be, exportDir, o)
			if err != nil {
				return nil, fmt.Errorf("bench %s with %s: %w", name, be.name, err)
			}
			out = append(out, *r)
		}
	}
	return out, nil
}

// safeName makes an embedder spec usable in a file name.
func safeName(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '.' {
			return r
		}
		return '_'
	}, s)
}

func (o benchOptions) logf(format string, args ...any) {
	if o.log != nil {
		fmt.Fprintf(o.log, "bench: "+format+"\n", args...)
	}
}

// settle waits until the process has been idle for a second (less than a
// tenth of a core: bleve's background segment merges done), at most two
// minutes, so that query latencies are those of a store at rest rather than
// of one still merging what a bulk load wrote. It returns the time waited.
func settle() float64 {
	start := time.Now()
	for time.Since(start) < 2*time.Minute {
		c0 := cpuSeconds()
		time.Sleep(time.Second)
		if cpuSeconds()-c0 < 0.1 {
			break
		}
	}
	return time.Since(start).Seconds()
}

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func benchCorpus(ctx context.Context, c *corpus, dir string, be benchEmbedder, exportDir string, o benchOptions) (*benchResult, error) {
	_ = os.RemoveAll(dir)
	res := &benchResult{Corpus: c.name, Documents: c.n, GOMAXPROCS: runtime.GOMAXPROCS(0), NDCG10: map[string]float64{}, EmbedderName: be.name}
	res.Load1 = loadAverage()
	emb := be.emb
	res.Embedder = emb.Identity()
	if o.preEmbed {
		o.logf("%s/%s: embedding every chunk before indexing", c.name, be.name)
		memo, took, err := preEmbed(ctx, c, emb, dir+"-vectors", o)
		if err != nil {
			return nil, err
		}
		defer func() {
			memo.close()
			os.RemoveAll(dir + "-vectors")
		}()
		res.PreEmbedded = true
		res.EmbedSeconds = took.Seconds()
		res.EmbedChunksPerSec = float64(len(memo.rows)) / took.Seconds()
		o.logf("%s/%s: embedded %d chunks in %.1fs (%.0f chunks/s)", c.name, be.name, len(memo.rows), took.Seconds(), res.EmbedChunksPerSec)
		emb = memo
	}
	// No query cache: every mode's latency includes embedding its query.
	noCache := embed.NewQueryCache(&embed.QueryCacheOptions{MaxEntries: -1})
	ix, err := index.Open(ctx, dir, &index.Options{Embedder: emb, QueryCache: noCache, Logger: quietLogger()})
	if err != nil {
		return nil, err
	}
	o.logf("%s: indexing %d documents", c.name, c.n)
	stopProfile := o.startProfile(c.name, "index")
	start := time.Now()
	cpu0 := cpuSeconds()
	if err := indexCorpus(ctx, ix, c, o, start); err != nil {
		ix.Close()
		return nil, err
	}
	res.IndexCPUSeconds = cpuSeconds() - cpu0
	res.IndexSeconds = time.Since(start).Seconds()
	if memo, ok := emb.(*memoEmbedder); ok {
		res.EmbedMisses = memo.misses.Load() // queries later miss by design
	}
	stopProfile()
	st, err := ix.Stats(ctx)
	if err != nil {
		ix.Close()
		return nil, err
	}
	res.Chunks = st.ChunkCount
	res.Dimension = st.Dimension
	res.ChunksPerSec = float64(res.Chunks) / res.IndexSeconds
	res.Writers = max(1, o.writers)
	lb, _ := ix.Backend().(*local.Backend)
	o.logf("%s: %d chunks in %.1fs (%.0f chunks/s)", c.name, res.Chunks, res.IndexSeconds, res.ChunksPerSec)
	res.RSSAfterIndexBytes, res.HeapAfterIndexBytes = memUsage()
	res.SettleSeconds = settle()
	if res.SettleSeconds >= 1 {
		o.logf("%s: background work (bleve's segment merges) settled %.0fs after indexing", c.name, res.SettleSeconds)
	}
	calStart := time.Now()
	if _, err := search.Calibrate(ctx, ix, nil); err != nil && !errors.Is(err, search.ErrTooSmall) {
		ix.Close()
		return nil, err
	}
	res.CalibrateSeconds = time.Since(calStart).Seconds()
	o.logf("%s: fusion calibrated in %.1fs", c.name, res.CalibrateSeconds)

	// Queries in each mode, as the CLI runs them (top 5, no threshold so
	// that every query returns results to rank).
	stopProfile = o.startProfile(c.name, "query")
	texts := make([]string, len(c.queries))
	for i, q := range c.queries {
		texts[i] = q.Text
	}
	for _, mode := range []search.Mode{search.Hybrid, search.Vector, search.FullText} {
		var ds []time.Duration
		var ndcg float64
		for i, q := range c.queries {
			t0 := time.Now()
			so := search.Options{Mode: mode, TopK: 10, SimilarityThreshold: -1}
			if mode == search.Hybrid {
				so = o.fusion
				so.Mode, so.TopK, so.SimilarityThreshold = mode, 10, -1
			}
			rs, err := search.Search(ctx, ix, q.Text, &so)
			d := time.Since(t0)
			if err != nil {
				ix.Close()
				return nil, err
			}
			if i >= 5 || len(c.queries) <= 5 { // the first few warm caches
				ds = append(ds, d)
			}
			ranked := make([]string, len(rs))
			for j, r := range rs {
				ranked[j] = docOf(r.Record.SourceURL)
			}
			if mode == search.Hybrid && res.HybridMethod == "" && len(rs) > 0 {
				res.HybridMethod = rs[0].Explanation.Method
			}
			ndcg += benchdata.NDCG10(ranked, q.Relevant)
		}
		l := summarise(ds)
		switch mode {
		case search.Hybrid:
			res.Hybrid = l
		case search.Vector:
			res.Vector = l
		case search.FullText:
			res.FullText = l
		}
		res.NDCG10[string(mode)] = ndcg / float64(max(1, len(c.queries)))
		o.logf("%s: %s p50 %.2f ms, nDCG@10 %.4f", c.name, mode, l.P50, res.NDCG10[string(mode)])
	}

	// The vector index alone for a hybrid candidate pool, approximate and
	// exact, and its recall.
	qvecs := make([][]float32, len(texts))
	for i, t := range texts {
		if qvecs[i], err = ix.EmbedQuery(ctx, t); err != nil {
			ix.Close()
			return nil, err
		}
	}
	f := index.Filter{DocTypes: []string{index.DocKnowledge}}
	pool := search.MinCandidatePool
	var approx, exact []time.Duration
	for _, q := range qvecs {
		t0 := time.Now()
		if _, err := ix.VectorByEmbedding(ctx, q, pool, f); err != nil {
			ix.Close()
			return nil, err
		}
		approx = append(approx, time.Since(t0))
	}
	var truth [][]string // the exact top 10 of each query, for the peers' recall
	if lb != nil {
		for _, q := range qvecs[:min(len(qvecs), 100)] {
			t0 := time.Now()
			lb.VectorSearchExact(q, pool)
			exact = append(exact, time.Since(t0))
		}
		res.Recall10, _ = lb.VectorRecall(qvecs, 10)
		if exportDir != "" {
			for _, q := range qvecs {
				top, _ := lb.VectorSearchExact(q, 10)
				ids := make([]string, len(top))
				for i, r := range top {
					ids[i] = r.ID
				}
				truth = append(truth, ids)
			}
		}
	}
	res.VectorPool, res.VectorPoolExact = summarise(approx), summarise(exact)
	stopProfile()
	o.logf("%s: vector index top-%d p50 %.2f ms (exact scan %.2f ms), recall@10 %.4f", c.name, pool, res.VectorPool.P50, res.VectorPoolExact.P50, res.Recall10)

	var records []index.Record
	if exportDir != "" || o.peers || res.Chunks <= o.chromemTo {
		if records, err = ix.Records(ctx, index.Filter{}); err != nil {
			ix.Close()
			return nil, err
		}
	}
	if res.Chunks <= o.chromemTo {
		l, err := benchChromem(ctx, records, qvecs)
		if err != nil {
			ix.Close()
			return nil, err
		}
		res.Chromem = &l
		if res.Hybrid.P50 > 0 {
			res.HybridSpeedup = l.P50 / res.Hybrid.P50
		}
		o.logf("%s: chromem-go exhaustive top-%d p50 %.2f ms (hybrid %.1fx faster)", c.name, pool, l.P50, res.HybridSpeedup)
	}
	if exportDir != "" {
		if err := exportCorpus(exportDir, records, c.queries, qvecs, truth); err != nil {
			ix.Close()
			return nil, err
		}
	}
	if o.peers {
		res.Peers = append(res.Peers, chromemAlone(ctx, records, c.queries, qvecs))
		bl, err := bleveAlone(ctx, filepath.Join(dir+"-bleve"), records, c.queries)
		if err != nil {
			ix.Close()
			return nil, err
		}
		res.Peers = append(res.Peers, bl)
		_ = os.RemoveAll(dir + "-bleve")
	}
	records = nil
	if err := ix.Close(); err != nil {
		return nil, err
	}
	res.DiskBytes = dirSize(dir)
	res.DiskBleveBytes = dirSize(filepath.Join(dir, "bleve"))

	// Cold open: a new Index on the closed store.
	runtime.GC()
	debug.FreeOSMemory()
	start = time.Now()
	ix, err = index.Open(ctx, dir, &index.Options{Embedder: emb, QueryCache: noCache, Logger: quietLogger()})
	if err != nil {
		return nil, err
	}
	res.ColdOpenSeconds = time.Since(start).Seconds()
	t0 := time.Now()
	if _, err := search.Search(ctx, ix, texts[0], nil); err != nil {
		ix.Close()
		return nil, err
	}
	res.ColdFirstQueryMs = float64(time.Since(t0).Microseconds()) / 1000
	if lb, ok := ix.Backend().(*local.Backend); ok {
		res.ColdCodesLoaded = !lb.Recovery().VectorIndexRebuilt
	}
	res.RSSAfterOpenBytes, res.HeapAfterOpenBytes = memUsage()
	o.logf("%s: cold open %.2fs, first query %.1f ms (vector codes loaded: %v); disk %s", c.name, res.ColdOpenSeconds, res.ColdFirstQueryMs, res.ColdCodesLoaded, humanBytes(res.DiskBytes))
	return res, ix.Close()
}

// startProfile starts a CPU profile when --cpuprofile is set and returns
// the function that stops it.
func (o benchOptions) startProfile(corpus, phase string) func() {
	if o.profile == "" {
		return func() {}
	}
	f, err := os.Create(fmt.Sprintf("%s-%s-%s.pprof", o.profile, corpus, phase))
	if err != nil {
		o.logf("cpu profile: %v", err)
		return func() {}
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		o.logf("cpu profile: %v", err)
		return func() {}
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}
}

// indexCorpus indexes the corpus in batches with o.writers calls in flight.
func indexCorpus(ctx context.Context, ix *index.Index, c *corpus, o benchOptions, start time.Time) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	writers := max(1, o.writers)
	sem := make(chan struct{}, writers)
	errc := make(chan error, 1)
	var wg sync.WaitGroup
	for lo := 0; lo < c.n; lo += o.batch {
		hi := min(lo+o.batch, c.n)
		select {
		case sem <- struct{}{}:
		case err := <-errc:
			wg.Wait()
			return err
		}
		wg.Add(1)
		go func(lo, hi int) {
			defer wg.Done()
			defer func() { <-sem }()
			ds := c.batch(lo, hi)
			docs := make([]index.Document, len(ds))
			for i, d := range ds {
				docs[i] = index.Document{SourceURL: sourceURL(d.ID), Title: d.Title, Content: d.Text, Format: chunk.Text}
			}
			if _, err := ix.AddMany(ctx, docs); err != nil {
				select {
				case errc <- err:
				default:
				}
				cancel()
			}
		}(lo, hi)
		if hi%(o.batch*100) == 0 {
			o.logf("%s: %d documents, %.0f documents/s", c.name, hi, float64(hi)/time.Since(start).Seconds())
		}
	}
	wg.Wait()
	select {
	case err := <-errc:
		return err
	default:
		return nil
	}
}

// memUsage returns the resident set size (Linux; 0 elsewhere) and the Go heap
// in use, after a collection.
func memUsage() (rss, heap int64) {
	runtime.GC()
	debug.FreeOSMemory()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	heap = int64(ms.HeapInuse)
	if b, err := os.ReadFile("/proc/self/status"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(line, "VmRSS:") {
				f := strings.Fields(line)
				if len(f) >= 2 {
					kb, _ := strconv.ParseInt(f[1], 10, 64)
					rss = kb << 10
				}
			}
		}
	}
	return rss, heap
}

func loadAverage() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 0
	}
	v, _ := strconv.ParseFloat(f[0], 64)
	return v
}

func dirSize(dir string) int64 {
	var n int64
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if info, err := d.Info(); err == nil {
				n += info.Size()
			}
		}
		return nil
	})
	return n
}

// newChromem loads records into a chromem-go collection as the local
// backend used to: vectors given, doc type and source as metadata.
func newChromem(ctx context.Context, records []index.Record) (*chromem.Collection, error) {
	db := chromem.NewDB()
	coll, err := db.CreateCollection("bench", nil, func(context.Context, string) ([]float32, error) {
		return nil, errors.New("bench: no embedding function")
	})
	if err != nil {
		return nil, err
	}
	for i := range records {
		r := &records[i]
		if err := coll.AddDocument(ctx, chromem.Document{ID: r.ID, Embedding: r.Vector, Content: r.Content,
			Metadata: map[string]string{"docType": r.DocType, "source": r.SourceURL}}); err != nil {
			return nil, err
		}
	}
	return coll, nil
}

// benchChromem measures chromem-go's exhaustive QueryEmbedding for a hybrid
// candidate pool (top 100) filtered to knowledge, the query the local
// backend sent it before the vector index.
func benchChromem(ctx context.Context, records []index.Record, qvecs [][]float32) (latency, error) {
	coll, err := newChromem(ctx, records)
	if err != nil {
		return latency{}, err
	}
	n := min(len(qvecs), 50)
	var ds []time.Duration
	for _, q := range qvecs[:n] {
		t0 := time.Now()
		if _, err := coll.QueryEmbedding(ctx, q, min(search.MinCandidatePool, coll.Count()), map[string]string{"docType": index.DocKnowledge}, nil); err != nil {
			return latency{}, err
		}
		ds = append(ds, time.Since(t0))
	}
	return summarise(ds), nil
}

// chromemAlone is chromem-go used directly: load the vectors, query top 10
// for each query vector, rank documents by their best chunk.
func chromemAlone(ctx context.Context, records []index.Record, qs []benchdata.Query, qvecs [][]float32) peerResult {
	p := peerResult{Name: "chromem-go (vector)", K: 10}
	start := time.Now()
	coll, err := newChromem(ctx, records)
	if err != nil {
		return p
	}
	p.IndexSeconds = time.Since(start).Seconds()
	p.PerSecond = float64(len(records)) / p.IndexSeconds
	var ds []time.Duration
	var ndcg float64
	for i, q := range qvecs {
		t0 := time.Now()
		rs, err := coll.QueryEmbedding(ctx, q, min(10, coll.Count()), nil, nil)
		ds = append(ds, time.Since(t0))
		if err != nil {
			continue
		}
		ranked := make([]string, len(rs))
		for j, r := range rs {
			ranked[j] = docOf(r.Metadata["source"])
		}
		ndcg += benchdata.NDCG10(ranked, qs[i].Relevant)
	}
	p.Query = summarise(ds)
	p.NDCG10 = ndcg / float64(max(1, len(qs)))
	return p
}

// bleveAlone is bleve used the way its documentation shows: the default
// index mapping (standard analyzer, stored fields and term vectors) with
// BM25 scoring, documents indexed in batches of 100, match queries.
func bleveAlone(ctx context.Context, dir string, records []index.Record, qs []benchdata.Query) (peerResult, error) {
	p := peerResult{Name: "bleve (BM25)", K: 10}
	_ = os.RemoveAll(dir)
	m := bleve.NewIndexMapping()
	m.ScoringModel = index_api.BM25Scoring
	bi, err := bleve.New(dir, m)
	if err != nil {
		return p, err
	}
	defer bi.Close()
	start := time.Now()
	b := bi.NewBatch()
	for i := range records {
		r := &records[i]
		if err := b.Index(r.ID, map[string]any{"title": r.Title, "text": r.Content, "source": r.SourceURL}); err != nil {
			return p, err
		}
		if b.Size() >= 100 || i == len(records)-1 {
			if err := bi.Batch(b); err != nil {
				return p, err
			}
			b = bi.NewBatch()
		}
	}
	p.IndexSeconds = time.Since(start).Seconds()
	p.PerSecond = float64(len(records)) / p.IndexSeconds
	var ds []time.Duration
	var ndcg float64
	for _, q := range qs {
		req := bleve.NewSearchRequestOptions(bleve.NewMatchQuery(q.Text), 10, 0, false)
		req.Fields = []string{"source"}
		t0 := time.Now()
		sr, err := bi.SearchInContext(ctx, req)
		ds = append(ds, time.Since(t0))
		if err != nil {
			return p, err
		}
		ranked := make([]string, 0, len(sr.Hits))
		for _, h := range sr.Hits {
			if s, ok := h.Fields["source"].(string); ok {
				ranked = append(ranked, docOf(s))
			}
		}
		ndcg += benchdata.NDCG10(ranked, q.Relevant)
	}
	p.Query = summarise(ds)
	p.NDCG10 = ndcg / float64(max(1, len(qs)))
	return p, nil
}

// exportCorpus writes what the Node peers need: chunks.jsonl (id, doc,
// title, text), chunk_vectors.f32 (little-endian float32, one row per
// chunk in file order), queries.jsonl (id, text, relevant, and exact10: the
// ids of the 10 chunks whose vectors are nearest to the query's, by ragmem's
// exact scan, for the peers' recall) and query_vectors.f32, and meta.json
// (counts and dimension).
func exportCorpus(dir string, records []index.Record, qs []benchdata.Query, qvecs [][]float32, truth [][]string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	write := func(name string, fn func(w *bufio.Writer) error) error {
		f, err := os.Create(filepath.Join(dir, name))
		if err != nil {
			return err
		}
		w := bufio.NewWriterSize(f, 1<<20)
		if err := fn(w); err != nil {
			f.Close()
			return err
		}
		if err := w.Flush(); err != nil {
			f.Close()
			return err
		}
		return f.Close()
	}
	dim := 0
	if len(records) > 0 {
		dim = len(records[0].Vector)
	}
	vecs := func(vs func(i int) []float32, n int) func(w *bufio.Writer) error {
		return func(w *bufio.Writer) error {
			buf := make([]byte, 4*dim)
			for i := 0; i < n; i++ {
				for j, f := range vs(i) {
					binary.LittleEndian.PutUint32(buf[4*j:], math.Float32bits(f))
				}
				if _, err := w.Write(buf); err != nil {
					return err
				}
			}
			return nil
		}
	}
	err := write("chunks.jsonl", func(w *bufio.Writer) error {
		enc := json.NewEncoder(w)
		for i := range records {
			r := &records[i]
			if err := enc.Encode(map[string]string{"id": r.ID, "doc": docOf(r.SourceURL), "title": r.Title, "text": r.Content}); err != nil {
				return err
			}
		}
		return nil
	})
	if err == nil {
		err = write("chunk_vectors.f32", vecs(func(i int) []float32 { return records[i].Vector }, len(records)))
	}
	if err == nil {
		err = write("queries.jsonl", func(w *bufio.Writer) error {
			enc := json.NewEncoder(w)
			for i, q := range qs {
				row := map[string]any{"id": q.ID, "text": q.Text, "relevant": q.Relevant}
				if i < len(truth) {
					row["exact10"] = truth[i]
				}
				if err := enc.Encode(row); err != nil {
					return err
				}
			}
			return nil
		})
	}
	if err == nil {
		err = write("query_vectors.f32", vecs(func(i int) []float32 { return qvecs[i] }, len(qvecs)))
	}
	if err == nil {
		err = write("meta.json", func(w *bufio.Writer) error {
			return json.NewEncoder(w).Encode(map[string]int{"chunks": len(records), "queries": len(qs), "dimension": dim, "k": 10})
		})
	}
	return err
}

func printBench(w io.Writer, rs []benchResult) {
	ms := func(l latency) string { return fmt.Sprintf("%.2f / %.2f / %.2f", l.P50, l.P95, l.P99) }
	for _, r := range rs {
		fmt.Fprintf(w, "corpus %s: %d documents, %d chunks, embedder %s (%s), %d dimensions (GOMAXPROCS %d, load %.1f)\n", r.Corpus, r.Documents, r.Chunks, r.EmbedderName, r.Embedder, r.Dimension, r.GOMAXPROCS, r.Load1)
		if r.PreEmbedded {
			fmt.Fprintf(w, "  embedding (beforehand)   %.0f chunks/s (%.1f s; not part of indexing; %d chunks embedded again while indexing)\n", r.EmbedChunksPerSec, r.EmbedSeconds, r.EmbedMisses)
		}
		what := "chunk, embed, journal, both indexes"
		if r.PreEmbedded {
			what = "chunk, journal, both indexes; embedder excluded"
		}
		fmt.Fprintf(w, "  indexing                 %.0f chunks/s (%.1f s, %s, %d writers; %.0f chunks per CPU second; settled %.0f s later)\n",
			r.ChunksPerSec, r.IndexSeconds, what, r.Writers, float64(r.Chunks)/max(r.IndexCPUSeconds, 1e-9), r.SettleSeconds)
		fmt.Fprintf(w, "  calibration              %.1f s (%.1f%% of indexing)\n", r.CalibrateSeconds, 100*r.CalibrateSeconds/max(r.IndexSeconds, 1e-9))
		fmt.Fprintf(w, "  hybrid    p50/p95/p99 ms %s   nDCG@10 %.4f   %s\n", ms(r.Hybrid), r.NDCG10["hybrid"], r.HybridMethod)
		fmt.Fprintf(w, "  vector    p50/p95/p99 ms %s   nDCG@10 %.4f\n", ms(r.Vector), r.NDCG10["vector"])
		fmt.Fprintf(w, "  fulltext  p50/p95/p99 ms %s   nDCG@10 %.4f\n", ms(r.FullText), r.NDCG10["fulltext"])
		fmt.Fprintf(w, "  vector index top 100     %s (exact scan %s), recall@10 %.4f\n", ms(r.VectorPool), ms(r.VectorPoolExact), r.Recall10)
		if r.Chromem != nil {
			fmt.Fprintf(w, "  chromem-go top 100       %s; hybrid p50 is %.1fx faster\n", ms(*r.Chromem), r.HybridSpeedup)
		}
		fmt.Fprintf(w, "  cold open                %.2f s (first query %.1f ms; vector codes loaded, not rebuilt: %v)\n", r.ColdOpenSeconds, r.ColdFirstQueryMs, r.ColdCodesLoaded)
		fmt.Fprintf(w, "  memory                   RSS %s, heap %s after indexing; RSS %s, heap %s after cold open\n",
			humanBytes(r.RSSAfterIndexBytes), humanBytes(r.HeapAfterIndexBytes), humanBytes(r.RSSAfterOpenBytes), humanBytes(r.HeapAfterOpenBytes))
		fmt.Fprintf(w, "  disk                     %s (bleve %s)\n", humanBytes(r.DiskBytes), humanBytes(r.DiskBleveBytes))
		for _, p := range r.Peers {
			fmt.Fprintf(w, "  peer %-20s index %.1f s (%.0f chunks/s), query p50/p95/p99 ms %s, nDCG@10 %.4f\n", p.Name, p.IndexSeconds, p.PerSecond, ms(p.Query), p.NDCG10)
		}
	}
	printSideBySide(w, rs)
}

// printSideBySide prints, for each corpus measured with more than one
// embedder, the headline figures in one column per embedder.
func printSideBySide(w io.Writer, rs []benchResult) {
	byCorpus := map[string][]benchResult{}
	var order []string
	for _, r := range rs {
		if len(byCorpus[r.Corpus]) == 0 {
			order = append(order, r.Corpus)
		}
		byCorpus[r.Corpus] = append(byCorpus[r.Corpus], r)
	}
	for _, c := range order {
		cols := byCorpus[c]
		if len(cols) < 2 {
			continue
		}
		fmt.Fprintf(w, "\nside by side, corpus %s\n", c)
		row := func(label string, cell func(r benchResult) string) {
			fmt.Fprintf(w, "  %-34s", label)
			for _, r := range cols {
				fmt.Fprintf(w, " %22s", cell(r))
			}
			fmt.Fprintln(w)
		}
		row("embedder", func(r benchResult) string { return r.EmbedderName })
		row("dimensions", func(r benchResult) string { return fmt.Sprint(r.Dimension) })
		row("indexing, chunks/s", func(r benchResult) string { return fmt.Sprintf("%.0f", r.ChunksPerSec) })
		row("embedding alone, chunks/s", func(r benchResult) string {
			if !r.PreEmbedded {
				return "in indexing"
			}
			return fmt.Sprintf("%.0f", r.EmbedChunksPerSec)
		})
		row("hybrid p50 ms", func(r benchResult) string { return fmt.Sprintf("%.2f", r.Hybrid.P50) })
		row("vector p50 ms", func(r benchResult) string { return fmt.Sprintf("%.2f", r.Vector.P50) })
		row("vector index top 100 p50 ms", func(r benchResult) string { return fmt.Sprintf("%.2f", r.VectorPool.P50) })
		row("exact scan top 100 p50 ms", func(r benchResult) string { return fmt.Sprintf("%.2f", r.VectorPoolExact.P50) })
		row("recall@10 vs exact", func(r benchResult) string { return fmt.Sprintf("%.4f", r.Recall10) })
		row("hybrid vs chromem-go top 100", func(r benchResult) string {
			if r.Chromem == nil {
				return "-"
			}
			return fmt.Sprintf("%.1fx", r.HybridSpeedup)
		})
		row("nDCG@10 hybrid", func(r benchResult) string { return fmt.Sprintf("%.4f", r.NDCG10["hybrid"]) })
		row("cold open s", func(r benchResult) string { return fmt.Sprintf("%.2f", r.ColdOpenSeconds) })
		row("first query after open ms", func(r benchResult) string { return fmt.Sprintf("%.1f", r.ColdFirstQueryMs) })
		row("RSS after cold open", func(r benchResult) string { return humanBytes(r.RSSAfterOpenBytes) })
		row("disk", func(r benchResult) string { return humanBytes(r.DiskBytes) })
	}
}

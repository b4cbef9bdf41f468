// Package bench is `ragmem bench`: it builds fresh stores from generated or
// SciFact corpora and measures indexing, query latency in each mode, the
// vector index alone, recall, nDCG@10, a cold open, memory and disk, next
// to chromem-go and bleve on the same chunks. The command turns its flags
// into Options and prints what Run returns (Print or JSON).
package bench

import (
	"context"
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

	"github.com/ragmem/ragmem/chunk"
	"github.com/ragmem/ragmem/index"
	"github.com/ragmem/ragmem/internal/benchdata"
	"github.com/ragmem/ragmem/internal/embed"
	"github.com/ragmem/ragmem/internal/index/engine"
	"github.com/ragmem/ragmem/search"
)

// Options configure one bench run.
type Options struct {
	Corpora    []string // "scifact" or a synthetic size such as "10k"
	Queries    int      // queries per corpus (synthetic); SciFact uses its 300 judged ones
	Words      int      // words per synthetic document
	WorkDir    string   // where stores are built; removed afterwards unless keep
	Keep       bool
	Export     string         // directory to export chunks, vectors and queries for peers
	Peers      bool           // also run chromem-go alone and bleve alone
	ChromemMax int            // measure chromem-go's exhaustive query up to this many chunks
	Batch      int            // documents per AddMany call
	Writers    int            // AddMany calls in flight
	CPUProfile string         // write a CPU profile of the indexing phase to this file prefix
	Embedders  []Embedder     // measured one after the other on each corpus; none: the lexical default
	PreEmbed   bool           // embed every chunk before indexing, so that indexing is timed without the embedder
	Fusion     search.Options // the hybrid queries' fusion (--fusion); zero: the engine's default
	Log        io.Writer
}

// DefaultEmbedders are measured side by side when neither --embedders
// nor --embedder (nor its environment variable or config key) says otherwise:
// the offline lexical default, whose sparse vectors the int8 scan exploits,
// and the dense randproj test embedder, whose vectors are like a neural
// model's.
var DefaultEmbedders = []string{"lexical", "randproj"}

// Latency summarises query times in milliseconds.
type Latency struct {
	P50 float64 `json:"p50Ms"`
	P95 float64 `json:"p95Ms"`
	P99 float64 `json:"p99Ms"`
	N   int     `json:"n"`
}

func summarise(ds []time.Duration) Latency {
	if len(ds) == 0 {
		return Latency{}
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	at := func(p float64) float64 {
		i := int(math.Ceil(p*float64(len(s)))) - 1
		return float64(s[max(0, min(i, len(s)-1))].Microseconds()) / 1000
	}
	return Latency{P50: at(0.50), P95: at(0.95), P99: at(0.99), N: len(s)}
}

// PeerResult is one peer's figures on the same data.
type PeerResult struct {
	Name         string  `json:"name"`
	IndexSeconds float64 `json:"indexSeconds"`
	PerSecond    float64 `json:"perSecond"` // chunks indexed per second
	Query        Latency `json:"query"`
	NDCG10       float64 `json:"ndcg10,omitempty"`
	K            int     `json:"k"`
}

// Result is what bench measures on one corpus with one embedder.
type Result struct {
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

	Hybrid Latency `json:"hybrid"`
	// HybridMethod is the fusion the hybrid queries ran, as their results
	// explain it (for example "relative(alpha=0.50, calibrated, feedback=3)").
	HybridMethod string  `json:"hybridMethod,omitempty"`
	Vector       Latency `json:"vector"`
	FullText     Latency `json:"fulltext"`
	// VectorPool is the vector index alone answering a hybrid candidate
	// pool (top 100) for a query vector, approximate and exact.
	VectorPool      Latency `json:"vectorIndexTop100"`
	VectorPoolExact Latency `json:"vectorIndexTop100Exact"`
	// Chromem is chromem-go's exhaustive QueryEmbedding (top 100, doc type
	// filter) over the same vectors in the same process.
	Chromem       *Latency `json:"chromemTop100,omitempty"`
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
	Peers               []PeerResult `json:"peers,omitempty"`
	Load1               float64      `json:"loadAverage1m"`
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

func loadCorpus(name string, o Options) (*corpus, error) {
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
	doc := func(i int) benchdata.Doc { return benchdata.NewSynthDoc(int64(i), i, o.Words) }
	c := &corpus{name: name, n: n, batch: func(lo, hi int) []benchdata.Doc {
		out := make([]benchdata.Doc, hi-lo)
		for i := range out {
			out[i] = doc(lo + i)
		}
		return out
	}}
	qs := benchdata.NewSynth(int64(n))
	nq := min(o.Queries, n)
	for i := 0; i < nq; i++ {
		d := doc(int(int64(i) * int64(n) / int64(nq)))
		c.queries = append(c.queries, qs.KnownItem(fmt.Sprintf("q%d", i), d))
	}
	return c, nil
}

func sourceURL(docID string) string { return "bench://doc/" + docID }

func docOf(sourceURL string) string { return strings.TrimPrefix(sourceURL, "bench://doc/") }

// Run measures each corpus of o with each embedder of o (the lexical
// default when none), one fresh store each under o.WorkDir (a temporary
// directory when empty, removed afterwards unless o.Keep).
func Run(ctx context.Context, o Options) ([]Result, error) {
	if o.Batch <= 0 {
		o.Batch = 1000
	}
	work := o.WorkDir
	if work == "" {
		d, err := os.MkdirTemp("", "ragmem-bench-")
		if err != nil {
			return nil, err
		}
		work = d
	}
	if !o.Keep {
		defer os.RemoveAll(work)
	}
	embedders := o.Embedders
	if len(embedders) == 0 {
		embedders = []Embedder{{Name: "lexical", Embedder: embed.Default(), Close: func() {}}}
	}
	var out []Result
	for _, name := range o.Corpora {
		name = strings.TrimSpace(name)
		if name == "" {
			continue
		}
		c, err := loadCorpus(name, o)
		if err != nil {
			return nil, err
		}
		for _, be := range embedders {
			sub := name + "-" + safeName(be.Name)
			exportDir := ""
			if o.Export != "" {
				exportDir = filepath.Join(o.Export, name)
				if len(embedders) > 1 {
					exportDir = filepath.Join(o.Export, sub)
				}
			}
			r, err := benchCorpus(ctx, c, filepath.Join(work, sub), be, exportDir, o)
			if err != nil {
				return nil, fmt.Errorf("bench %s with %s: %w", name, be.Name, err)
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

func (o Options) logf(format string, args ...any) {
	if o.Log != nil {
		fmt.Fprintf(o.Log, "bench: "+format+"\n", args...)
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

// startProfile starts a CPU profile when --cpuprofile is set and returns
// the function that stops it.
func (o Options) startProfile(corpus, phase string) func() {
	if o.CPUProfile == "" {
		return func() {}
	}
	f, err := os.Create(fmt.Sprintf("%s-%s-%s.pprof", o.CPUProfile, corpus, phase))
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
func indexCorpus(ctx context.Context, ix *engine.Index, c *corpus, o Options, start time.Time) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	writers := max(1, o.Writers)
	sem := make(chan struct{}, writers)
	errc := make(chan error, 1)
	var wg sync.WaitGroup
	for lo := 0; lo < c.n; lo += o.Batch {
		hi := min(lo+o.Batch, c.n)
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
		if hi%(o.Batch*100) == 0 {
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

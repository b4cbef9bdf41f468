// Package loadtest drives a ragmem server with concurrent clients that mix
// page indexing, search and context requests, and reports throughput,
// latency percentiles and errors per operation.
//
// It only ever talks to loopback addresses, and every run is bounded both in
// time (Config.Duration) and in requests (Config.MaxRequests). The corpus is
// synthetic and deterministic for a seed: pages of Zipf-distributed
// pseudo-words under headings, so that BM25 and vector search do real work.
//
// Seed fills a store up to a number of chunks through the API; Run then
// measures. Both talk to the server as any program does, through the
// contract's HTTP client (rag.Dial). cmd/ragmem-load is the command-line
// front end.
package loadtest

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/ragmem/ragmem/index"
	"github.com/ragmem/ragmem/rag"
)

// ErrNotLoopback is returned for a target that is not a loopback address.
var ErrNotLoopback = errors.New("loadtest: target must be a loopback address (127.0.0.0/8, ::1 or localhost)")

// Operations.
const (
	OpIndex   = "index"   // POST /v1/pages
	OpSearch  = "search"  // POST /v1/search
	OpContext = "context" // POST /v1/context
)

// Config configures Run and Seed. Zero fields take the defaults given.
type Config struct {
	BaseURL     string        // required: http://127.0.0.1:PORT
	Token       string        // bearer token
	Namespace   string        // X-Ragmem-Namespace; default none
	Clients     int           // concurrent clients; default 32
	Duration    time.Duration // how long to run; default 60 s
	MaxRequests int           // stop after this many requests in all; default 1,000,000
	// Mix is the relative weight of index, search and context requests.
	// Default 1:6:3.
	Mix [3]int
	// Seed makes the corpus and the request sequence repeatable. Default 1.
	Seed uint64
	// Client is the HTTP client. Default one with a connection per client.
	Client *http.Client

	mem *rag.Client // the server's memory over Client
}

func (c *Config) withDefaults() (Config, error) {
	r := *c
	if err := CheckLoopback(r.BaseURL); err != nil {
		return r, err
	}
	r.BaseURL = strings.TrimRight(r.BaseURL, "/")
	if r.Clients <= 0 {
		r.Clients = 32
	}
	if r.Duration <= 0 {
		r.Duration = 60 * time.Second
	}
	if r.MaxRequests <= 0 {
		r.MaxRequests = 1_000_000
	}
	if r.Mix == [3]int{} {
		r.Mix = [3]int{1, 6, 3}
	}
	if r.Mix[0] < 0 || r.Mix[1] < 0 || r.Mix[2] < 0 || r.Mix[0]+r.Mix[1]+r.Mix[2] == 0 {
		return r, fmt.Errorf("loadtest: bad mix %v", r.Mix)
	}
	if r.Seed == 0 {
		r.Seed = 1
	}
	if r.Client == nil {
		r.Client = newClient(r.Clients)
	}
	m, err := rag.Dial(r.BaseURL, r.Token, &rag.ClientOptions{HTTPClient: r.Client, Timeout: requestTimeout, WriteTimeout: requestTimeout, Namespace: r.Namespace})
	if err != nil {
		return r, err
	}
	r.mem = m
	return r, nil
}

// requestTimeout bounds each request of a run.
const requestTimeout = 60 * time.Second

func newClient(conns int) *http.Client {
	tr := &http.Transport{
		Proxy:               nil, // never through a proxy: loopback only
		MaxIdleConns:        conns * 2,
		MaxIdleConnsPerHost: conns * 2,
		IdleConnTimeout:     30 * time.Second,
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second}).DialContext,
	}
	return &http.Client{Transport: tr, Timeout: requestTimeout}
}

// CheckLoopback returns ErrNotLoopback unless base is an http(s) URL whose
// host is a loopback IP address or localhost.
func CheckLoopback(base string) error {
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("%w: %q is not an http URL", ErrNotLoopback, base)
	}
	h := u.Hostname()
	if h == "localhost" {
		return nil
	}
	if ip := net.ParseIP(h); ip != nil && ip.IsLoopback() {
		return nil
	}
	return fmt.Errorf("%w: %q", ErrNotLoopback, base)
}

// OpStats are the figures of one operation.
type OpStats struct {
	Op         string        `json:"op"`
	Count      int           `json:"count"`
	Errors     int           `json:"errors"`
	Throughput float64       `json:"throughputPerSec"`
	P50        time.Duration `json:"p50"`
	P99        time.Duration `json:"p99"`
	Max        time.Duration `json:"max"`
}

// Report is the outcome of a run.
type Report struct {
	Clients      int           `json:"clients"`
	Duration     time.Duration `json:"duration"`
	Requests     int           `json:"requests"`
	Errors       int           `json:"errors"`
	Throughput   float64       `json:"throughputPerSec"`
	Ops          []OpStats     `json:"ops"`
	ErrorSamples []string      `json:"errorSamples,omitempty"`
	// Indexing is what the server's background indexer did with the pages
	// posted during the run, read from /v1/stats after the queue drained.
	ChunksBefore int     `json:"chunksBefore"`
	ChunksAfter  int     `json:"chunksAfter"`
	DrainSeconds float64 `json:"drainSeconds"` // time for the queue to empty after the run
	JobsFailed   int64   `json:"jobsFailed"`   // background jobs failed or dropped during the run
}

// String renders the report as a table.
func (r *Report) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d clients, %.1f s, %d requests, %.1f req/s, %d errors\n", r.Clients, r.Duration.Seconds(), r.Requests, r.Throughput, r.Errors)
	fmt.Fprintf(&b, "%-8s %8s %8s %10s %10s %10s %10s\n", "op", "count", "errors", "req/s", "p50", "p99", "max")
	for _, o := range r.Ops {
		fmt.Fprintf(&b, "%-8s %8d %8d %10.1f %10s %10s %10s\n", o.Op, o.Count, o.Errors, o.Throughput, ms(o.P50), ms(o.P99), ms(o.Max))
	}
	fmt.Fprintf(&b, "store: %d -> %d chunks; queue drained %.1f s after the run; background jobs failed: %d\n", r.ChunksBefore, r.ChunksAfter, r.DrainSeconds, r.JobsFailed)
	for _, e := range r.ErrorSamples {
		fmt.Fprintf(&b, "error: %s\n", e)
	}
	return b.String()
}

func ms(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d.Microseconds())/1000) }

// recorder collects latencies per operation. It is safe for concurrent use.
type recorder struct {
	mu      sync.Mutex
	lat     map[string][]time.Duration
	errs    map[string]int
	samples []string
}

func (r *recorder) add(op string, d time.Duration, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lat[op] = append(r.lat[op], d)
	if err != nil {
		r.errs[op]++
		if len(r.samples) < 10 {
			r.samples = append(r.samples, op+": "+err.Error())
		}
	}
}

func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(math.Ceil(p*float64(len(sorted)))) - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}

// Run drives the server for cfg.Duration or cfg.MaxRequests requests,
// whichever comes first (requests in flight at the end are let finish and
// counted), then waits (up to two minutes) for the server's indexing queue
// to drain.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	c, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	before, err := c.mem.Stats(ctx)
	if err != nil {
		return nil, err
	}
	corpus := NewCorpus(c.Seed)
	rec := &recorder{lat: map[string][]time.Duration{}, errs: map[string]int{}}
	runCtx, cancel := context.WithTimeout(ctx, c.Duration)
	defer cancel()
	var issued sync.Mutex
	n := 0
	take := func() bool {
		issued.Lock()
		defer issued.Unlock()
		if n >= c.MaxRequests {
			return false
		}
		n++
		return true
	}
	total := c.Mix[0] + c.Mix[1] + c.Mix[2]
	start := time.Now()
	var wg sync.WaitGroup
	for i := 0; i < c.Clients; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(c.Seed, uint64(i)+1))
			for seq := 0; runCtx.Err() == nil && take(); seq++ {
				k := rng.IntN(total)
				if seq == 0 && c.Mix[i%3] > 0 {
					// Each client starts with a different operation, so
					// that every operation in the mix runs at least once.
					k = c.Mix[0] + c.Mix[1] + c.Mix[2] - 1
					switch i % 3 {
					case 0:
						k = 0
					case 1:
						k = c.Mix[0]
					}
				}
				var op string
				var send func() error
				switch {
				case k < c.Mix[0]:
					op = OpIndex
					req := pageRequest(corpus.Page(rng, fmt.Sprintf("https://load.example/run/%d/%d/%d", c.Seed, i, seq), 3))
					send = func() error { _, err := c.mem.IndexPage(ctx, req); return err }
				case k < c.Mix[0]+c.Mix[1]:
					op = OpSearch
					req := rag.SearchRequest{Query: corpus.Query(rng), TopK: 5}
					send = func() error { _, err := c.mem.Search(ctx, req); return err }
				default:
					op = OpContext
					req := rag.ContextRequest{Query: corpus.Query(rng), Model: "gpt-4o"}
					send = func() error { _, err := c.mem.BuildContext(ctx, req); return err }
				}
				// A request started before the end of the run is let finish
				// (within the client's timeout) and counted.
				t0 := time.Now()
				err := send()
				rec.add(op, time.Since(t0), err)
			}
		}(i)
	}
	wg.Wait()
	elapsed := time.Since(start)

	rep := &Report{Clients: c.Clients, Duration: elapsed, ChunksBefore: before.ChunkCount}
	for _, op := range []string{OpIndex, OpSearch, OpContext} {
		lat := rec.lat[op]
		sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
		o := OpStats{Op: op, Count: len(lat), Errors: rec.errs[op], Throughput: float64(len(lat)) / elapsed.Seconds(),
			P50: percentile(lat, 0.50), P99: percentile(lat, 0.99)}
		if len(lat) > 0 {
			o.Max = lat[len(lat)-1]
		}
		rep.Ops = append(rep.Ops, o)
		rep.Requests += o.Count
		rep.Errors += o.Errors
	}
	rep.Throughput = float64(rep.Requests) / elapsed.Seconds()
	rep.ErrorSamples = rec.samples

	drainStart := time.Now()
	drainCtx, cancelDrain := context.WithTimeout(ctx, 2*time.Minute)
	defer cancelDrain()
	after, err := waitDrained(drainCtx, &c)
	if err != nil {
		return rep, err
	}
	rep.DrainSeconds = time.Since(drainStart).Seconds()
	rep.ChunksAfter = after.ChunkCount
	rep.JobsFailed = (after.Queue.Failed + after.Queue.Dropped) - (before.Queue.Failed + before.Queue.Dropped)
	if rep.JobsFailed > 0 {
		rep.Errors += int(rep.JobsFailed)
	}
	return rep, nil
}

// pageRequest is the request that indexes p.
func pageRequest(p Page) rag.PageRequest {
	return rag.PageRequest{URL: p.URL, Title: p.Title, Text: p.Text, Format: "markdown"}
}

// waitDrained polls the server's stats until the indexing queue is empty.
func waitDrained(ctx context.Context, c *Config) (index.Stats, error) {
	for {
		s, err := c.mem.Stats(ctx)
		if err != nil {
			return s, err
		}
		q := s.Queue
		if q.Depth == 0 && q.Done+q.Failed >= q.Enqueued {
			return s, nil
		}
		select {
		case <-ctx.Done():
			return s, fmt.Errorf("loadtest: indexing queue not drained: %w", ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// Seed posts synthetic pages through the API until the store holds at least
// chunks chunks, then waits for the indexing queue to drain. It posts pages
// of pageChunks chunks each (default 5) with up to `parallel` requests in
// flight (default 4), and backs off when the server's queue is full.
func Seed(ctx context.Context, cfg Config, chunks, pageChunks, parallel int) (int, error) {
	c, err := cfg.withDefaults()
	if err != nil {
		return 0, err
	}
	if pageChunks <= 0 {
		pageChunks = 5
	}
	if parallel <= 0 {
		parallel = 4
	}
	s, err := c.mem.Stats(ctx)
	if err != nil {
		return 0, err
	}
	have := s.ChunkCount
	if have >= chunks {
		return have, nil
	}
	corpus := NewCorpus(c.Seed)
	// Each page yields about pageChunks chunks; post enough, then top up.
	for round := 0; have < chunks && round < 20; round++ {
		need := (chunks-have)/pageChunks + 1
		if err := postPages(ctx, &c, corpus, have, need, pageChunks, parallel); err != nil {
			return have, err
		}
		s, err := waitDrained(ctx, &c)
		if err != nil {
			return have, err
		}
		if s.Queue.Failed+s.Queue.Dropped > 0 {
			return s.ChunkCount, fmt.Errorf("loadtest: %d seed pages failed to index", s.Queue.Failed+s.Queue.Dropped)
		}
		have = s.ChunkCount
	}
	if have < chunks {
		return have, fmt.Errorf("loadtest: store has %d chunks, wanted %d", have, chunks)
	}
	return have, nil
}

func postPages(ctx context.Context, c *Config, corpus *Corpus, offset, n, pageChunks, parallel int) error {
	jobs := make(chan int)
	errc := make(chan error, parallel)
	var wg sync.WaitGroup
	for w := 0; w < parallel; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(c.Seed^0x5eed, uint64(offset+w)))
			for i := range jobs {
				p := corpus.Page(rng, fmt.Sprintf("https://load.example/seed/%d/%d", c.Seed, offset+i), pageChunks)
				for attempt := 0; ; attempt++ {
					_, err := c.mem.IndexPage(ctx, pageRequest(p))
					var re *rag.Error
					if errors.As(err, &re) && (re.Status == http.StatusServiceUnavailable || re.Status == http.StatusTooManyRequests) && attempt < 600 {
						time.Sleep(100 * time.Millisecond) // queue full: let the indexer catch up
						continue
					}
					if err != nil {
						select {
						case errc <- err:
						default:
						}
						return
					}
					break
				}
			}
		}(w)
	}
	var err error
feed:
	for i := 0; i < n; i++ {
		select {
		case jobs <- i:
		case err = <-errc:
			break feed
		case <-ctx.Done():
			err = ctx.Err()
			break feed
		}
	}
	close(jobs)
	wg.Wait()
	if err == nil {
		select {
		case err = <-errc:
		default:
		}
	}
	return err
}

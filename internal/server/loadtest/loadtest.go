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
// measures. cmd/ragmem-load is the command-line front end.
package loadtest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"sync"
	"time"
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
	return r, nil
}

func newClient(conns int) *http.Client {
	tr := &http.Transport{
		Proxy:               nil, // never through a proxy: loopback only
		MaxIdleConns:        conns * 2,
		MaxIdleConnsPerHost: conns * 2,
		IdleConnTimeout:     30 * time.Second,
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second}).DialContext,
	}
	return &http.Client{Transport: tr, Timeout: 60 * time.Second}
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
	before, err := stats(ctx, &c)
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
				var body any
				switch {
				case k < c.Mix[0]:
					op = OpIndex
					p := corpus.Page(rng, fmt.Sprintf("https://load.example/run/%d/%d/%d", c.Seed, i, seq), 3)
					body = map[string]any{"url": p.URL, "title": p.Title, "text": p.Text, "format": "markdown"}
				case k < c.Mix[0]+c.Mix[1]:
					op = OpSearch
					body = map[string]any{"query": corpus.Query(rng), "topK": 5}
				default:
					op = OpContext
					body = map[string]any{"query": corpus.Query(rng), "model": "gpt-4o"}
				}
				// A request started before the end of the run is let finish
				// (within the client's timeout) and counted.
				t0 := time.Now()
				err := post(ctx, &c, opPath(op), body, nil)
				rec.add(op, time.Since(t0), err)
			}
		}(i)
	}
	wg.Wait()
	elapsed := time.Since(start)

	rep := &Report{Clients: c.Clients, Duration: elapsed, ChunksBefore: before.Store.ChunkCount}
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
	rep.ChunksAfter = after.Store.ChunkCount
	rep.JobsFailed = (after.Store.Queue.Failed + after.Store.Queue.Dropped) - (before.Store.Queue.Failed + before.Store.Queue.Dropped)
	if rep.JobsFailed > 0 {
		rep.Errors += int(rep.JobsFailed)
	}
	return rep, nil
}

func opPath(op string) string {
	switch op {
	case OpIndex:
		return "/v1/pages"
	case OpSearch:
		return "/v1/search"
	}
	return "/v1/context"
}

// statsJSON is the part of /v1/stats the load test reads.
type statsJSON struct {
	Store struct {
		ChunkCount    int `json:"chunkCount"`
		DocumentCount int `json:"documentCount"`
		Queue         struct {
			Depth    int   `json:"depth"`
			Enqueued int64 `json:"enqueued"`
			Done     int64 `json:"done"`
			Failed   int64 `json:"failed"`
			Dropped  int64 `json:"dropped"`
		} `json:"queue"`
	} `json:"store"`
}

func stats(ctx context.Context, c *Config) (statsJSON, error) {
	var s statsJSON
	err := call(ctx, c, "GET", "/v1/stats", nil, &s)
	return s, err
}

// waitDrained polls /v1/stats until the indexing queue is empty.
func waitDrained(ctx context.Context, c *Config) (statsJSON, error) {
	for {
		s, err := stats(ctx, c)
		if err != nil {
			return s, err
		}
		q := s.Store.Queue
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

// statusError is a non-2xx answer.
type statusError struct {
	status int
	body   string
}

func (e *statusError) Error() string { return fmt.Sprintf("HTTP %d: %s", e.status, e.body) }

func post(ctx context.Context, c *Config, path string, body, out any) error {
	return call(ctx, c, "POST", path, body, out)
}

func call(ctx context.Context, c *Config, method, path string, body, out any) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.BaseURL+path, rd)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+c.Token)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.Namespace != "" {
		req.Header.Set("X-Ragmem-Namespace", c.Namespace)
	}
	res, err := c.Client.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(io.LimitReader(res.Body, 16<<20))
	if err != nil {
		return err
	}
	if res.StatusCode/100 != 2 {
		return &statusError{status: res.StatusCode, body: strings.TrimSpace(string(b[:min(len(b), 300)]))}
	}
	if out != nil {
		return json.Unmarshal(b, out)
	}
	return nil
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
	s, err := stats(ctx, &c)
	if err != nil {
		return 0, err
	}
	have := s.Store.ChunkCount
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
		if s.Store.Queue.Failed+s.Store.Queue.Dropped > 0 {
			return s.Store.ChunkCount, fmt.Errorf("loadtest: %d seed pages failed to index", s.Store.Queue.Failed+s.Store.Queue.Dropped)
		}
		have = s.Store.ChunkCount
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
				body := map[string]any{"url": p.URL, "title": p.Title, "text": p.Text, "format": "markdown"}
				for attempt := 0; ; attempt++ {
					err := post(ctx, c, "/v1/pages", body, nil)
					var se *statusError
					if errors.As(err, &se) && (se.status == http.StatusServiceUnavailable || se.status == http.StatusTooManyRequests) && attempt < 600 {
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

package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ragmem/ragmem/internal/server"
	"github.com/ragmem/ragmem/rag"
)

// testServer is a server on a loopback port with its main token.
type testServer struct {
	t     *testing.T
	dir   string
	token string
	srv   *server.Server
	url   string
	hs    *httptest.Server
}

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func newTestServer(t *testing.T, opts *server.Options) *testServer {
	t.Helper()
	dir := t.TempDir()
	tok, created, err := server.EnsureToken(dir)
	if err != nil || !created {
		t.Fatalf("EnsureToken: %q %v %v", tok, created, err)
	}
	if opts == nil {
		opts = &server.Options{}
	}
	if opts.Logger == nil {
		opts.Logger = quietLogger()
	}
	srv, err := server.New(context.Background(), dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	ts := &testServer{t: t, dir: dir, token: tok, srv: srv, url: hs.URL, hs: hs}
	t.Cleanup(func() {
		hs.Close()
		if err := srv.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return ts
}

// runServer runs a server on dir with opts through Server.Run on a
// loopback listener, as `ragmem serve` does, for the tests of Run's own
// behaviour (timeouts, graceful shutdown); stop cancels Run's context and
// returns what Run returned, failing the test if it does not within a
// minute.
func runServer(t *testing.T, dir string, opts *server.Options) (ts *testServer, addr string, stop func() error) {
	t.Helper()
	tok, _, err := server.EnsureToken(dir)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := server.New(context.Background(), dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx, ln, nil) }()
	stop = func() error {
		cancel() // as SIGTERM does
		select {
		case err := <-done:
			return err
		case <-time.After(60 * time.Second):
			t.Fatal("Run did not return")
			return nil
		}
	}
	return &testServer{t: t, dir: dir, token: tok, url: "http://" + ln.Addr().String()}, ln.Addr().String(), stop
}

// response is a decoded answer.
type response struct {
	status int
	header http.Header
	body   []byte
}

func (r response) json(t *testing.T, v any) {
	t.Helper()
	if err := json.Unmarshal(r.body, v); err != nil {
		t.Fatalf("decode %s: %v", r.body, err)
	}
}

// errCode returns the code of a JSON error body ("" if none).
func (r response) errCode() string {
	var e server.ErrorBody
	if json.Unmarshal(r.body, &e) != nil {
		return ""
	}
	return e.Error.Code
}

// req sends a request; body may be nil, a string or a value to encode.
// Headers are name, value pairs; "Authorization" defaults to the main token
// unless given (use "" to send none).
func (ts *testServer) req(method, path string, body any, headers ...string) response {
	ts.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	case []byte:
		rd = bytes.NewReader(b)
	default:
		j, err := json.Marshal(b)
		if err != nil {
			ts.t.Fatal(err)
		}
		rd = bytes.NewReader(j)
	}
	r, err := http.NewRequest(method, ts.url+path, rd)
	if err != nil {
		ts.t.Fatal(err)
	}
	if body != nil {
		r.Header.Set("Content-Type", "application/json")
	}
	auth := "Bearer " + ts.token
	for i := 0; i+1 < len(headers); i += 2 {
		if http.CanonicalHeaderKey(headers[i]) == "Authorization" {
			auth = headers[i+1]
			continue
		}
		if headers[i] == "Host" {
			r.Host = headers[i+1]
			continue
		}
		r.Header.Set(headers[i], headers[i+1])
	}
	if auth != "" {
		r.Header.Set("Authorization", auth)
	}
	res, err := http.DefaultClient.Do(r)
	if err != nil {
		ts.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		ts.t.Fatal(err)
	}
	return response{status: res.StatusCode, header: res.Header, body: b}
}

// must sends a request and fails the test unless the status is want.
func (ts *testServer) must(want int, method, path string, body any, headers ...string) response {
	ts.t.Helper()
	r := ts.req(method, path, body, headers...)
	if r.status != want {
		ts.t.Fatalf("%s %s: status %d, want %d: %s", method, path, r.status, want, r.body)
	}
	return r
}

// indexPage posts a page and waits for its job; it returns the job.
func (ts *testServer) indexPage(page map[string]any, headers ...string) rag.JobJSON {
	ts.t.Helper()
	r := ts.must(http.StatusAccepted, "POST", "/v1/pages", page, headers...)
	var acc rag.PageAccepted
	r.json(ts.t, &acc)
	if acc.Status != "queued" || acc.JobID == "" || r.header.Get("Location") != "/v1/jobs/"+acc.JobID {
		ts.t.Fatalf("accepted: %+v (Location %q)", acc, r.header.Get("Location"))
	}
	return ts.waitJob(acc.JobID, headers...)
}

func (ts *testServer) waitJob(id string, headers ...string) rag.JobJSON {
	ts.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	wait := 10 * time.Millisecond
	for {
		// Poll like a well-behaved client: back off, and honour 429's
		// Retry-After, so a slow job on a loaded machine does not trip
		// the server's per-client rate limit.
		r := ts.req("GET", "/v1/jobs/"+id, nil, headers...)
		switch r.status {
		case http.StatusOK:
			var j rag.JobJSON
			r.json(ts.t, &j)
			if j.State == "done" || j.State == "failed" || j.State == "dead" || j.State == "cancelled" {
				return j
			}
			if time.Now().After(deadline) {
				ts.t.Fatalf("job %s still %s", id, j.State)
			}
		case http.StatusTooManyRequests:
			if secs, err := strconv.Atoi(r.header.Get("Retry-After")); err == nil && secs > 0 {
				wait = time.Duration(secs) * time.Second
			}
		default:
			ts.t.Fatalf("GET /v1/jobs/%s: status %d: %s", id, r.status, r.body)
		}
		time.Sleep(wait)
		wait = min(2*wait, 200*time.Millisecond)
	}
}

func (ts *testServer) search(query string, headers ...string) rag.SearchJSON {
	ts.t.Helper()
	var s rag.SearchJSON
	ts.must(http.StatusOK, "POST", "/v1/search", map[string]any{"query": query, "topK": 10}, headers...).json(ts.t, &s)
	return s
}

func hasURL(s rag.SearchJSON, url string) bool {
	for _, r := range s.Results {
		if r.URL == url {
			return true
		}
	}
	return false
}

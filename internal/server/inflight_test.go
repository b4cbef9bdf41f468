package server

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestBodiesInFlightAreBounded: request bodies reserve their bytes
// server-wide; while others hold all of --max-body-inflight, a request with
// a body gets 503 with Retry-After and the usual error envelope, a request
// without one is served, and every reserved byte is given back.
func TestBodiesInFlightAreBounded(t *testing.T) {
	dir := t.TempDir()
	tok, _, err := EnsureToken(dir)
	if err != nil {
		t.Fatal(err)
	}
	const size = 256 << 10
	srv, err := New(context.Background(), dir, &Options{Logger: slog.New(slog.DiscardHandler), MaxBodyBytes: size, MaxBodyInflight: 2 * size, RateLimit: -1})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	defer func() { hs.Close(); srv.Close() }()
	send := func(body io.Reader, n int64) (*http.Response, []byte, error) {
		req, _ := http.NewRequest("POST", hs.URL+"/v1/pages", body)
		req.ContentLength = n
		req.Header.Set("Authorization", "Bearer "+tok)
		req.Header.Set("Content-Type", "application/json")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			return nil, nil, err
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res, b, nil
	}
	// Two requests declare full-size bodies and send nothing yet: they
	// hold the whole allowance while the server waits for their bodies.
	var holders sync.WaitGroup
	var pipes []*io.PipeWriter
	abandon := func() {
		for _, pw := range pipes {
			pw.CloseWithError(errors.New("client gave up"))
		}
	}
	defer holders.Wait()
	defer abandon() // first, should the test fail: the server waits for these bodies
	for range 2 {
		pr, pw := io.Pipe()
		pipes = append(pipes, pw)
		holders.Add(1)
		go func() {
			defer holders.Done()
			if res, _, err := send(pr, size); err == nil && res.StatusCode != http.StatusBadRequest {
				t.Errorf("an abandoned body: %d, want 400", res.StatusCode)
			}
		}()
	}
	for deadline := time.Now().Add(30 * time.Second); srv.inflight.Load() != 2*size; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the holders never reserved their bodies: %d bytes", srv.inflight.Load())
		}
	}
	page := `{"url":"https://b.example/","text":"` + strings.Repeat("x", 1000) + `"}`
	var wg sync.WaitGroup
	var mu sync.Mutex
	refused := 0
	for range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, b, err := send(strings.NewReader(page), int64(len(page)))
			if err != nil {
				t.Error(err)
				return
			}
			var e ErrorBody
			if res.StatusCode != http.StatusServiceUnavailable || res.Header.Get("Retry-After") == "" ||
				json.Unmarshal(b, &e) != nil || e.Error.Code != CodeUnavailable || e.Error.RequestID == "" || !strings.Contains(e.Error.Message, "--max-body-inflight") {
				t.Errorf("while the allowance is held: %d %q %s", res.StatusCode, res.Header.Get("Retry-After"), b)
				return
			}
			mu.Lock()
			refused++
			mu.Unlock()
		}()
	}
	wg.Wait()
	if refused != 6 {
		t.Fatalf("%d of 6 requests refused", refused)
	}
	// Without a body nothing is reserved.
	req, _ := http.NewRequest("GET", hs.URL+"/v1/stats", nil)
	req.Header.Set("Authorization", "Bearer "+tok)
	if res, err := http.DefaultClient.Do(req); err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("GET while the allowance is held: %v %v", res, err)
	} else {
		res.Body.Close()
	}
	abandon()
	holders.Wait()
	for deadline := time.Now().Add(30 * time.Second); srv.inflight.Load() != 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d bytes still reserved after every request was answered", srv.inflight.Load())
		}
	}
	if res, b, err := send(strings.NewReader(page), int64(len(page))); err != nil || res.StatusCode != http.StatusAccepted {
		t.Fatalf("after the bodies were released: %v %s", err, b)
	}
	for deadline := time.Now().Add(30 * time.Second); srv.inflight.Load() != 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d bytes reserved after the last answer", srv.inflight.Load())
		}
	}
}

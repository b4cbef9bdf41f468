package loadtest_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/ragmem/ragmem/chunk"
	"github.com/ragmem/ragmem/internal/server"
	"github.com/ragmem/ragmem/internal/server/loadtest"
)

func TestCheckLoopback(t *testing.T) {
	for u, ok := range map[string]bool{
		"http://127.0.0.1:7437": true, "http://127.9.9.9": true, "http://[::1]:80": true, "http://localhost:1": true,
		"https://127.0.0.1": true, "http://10.0.0.1": false, "http://192.168.0.2:7437": false, "http://example.com": false,
		"http://0.0.0.0:7437": false, "ftp://127.0.0.1": false, "127.0.0.1:7437": false, "": false,
	} {
		err := loadtest.CheckLoopback(u)
		if (err == nil) != ok || (err != nil && !errors.Is(err, loadtest.ErrNotLoopback)) {
			t.Errorf("%q: %v", u, err)
		}
	}
	if _, err := loadtest.Run(context.Background(), loadtest.Config{BaseURL: "http://192.0.2.1"}); !errors.Is(err, loadtest.ErrNotLoopback) {
		t.Errorf("Run against a non-loopback address: %v", err)
	}
}

func TestCorpusPagesAreOneChunkPerSection(t *testing.T) {
	c := loadtest.NewCorpus(7)
	rng := rand.New(rand.NewPCG(7, 7))
	for i := 0; i < 20; i++ {
		p := c.Page(rng, "https://x/", 5)
		if n := len(chunk.Split(p.Text, chunk.Markdown, nil)); n != 5 {
			t.Fatalf("page %d: %d chunks, want 5", i, n)
		}
	}
	if a, b := loadtest.NewCorpus(7).Query(rand.New(rand.NewPCG(1, 1))), loadtest.NewCorpus(7).Query(rand.New(rand.NewPCG(1, 1))); a != b || len(strings.Fields(a)) < 2 {
		t.Errorf("queries not repeatable: %q %q", a, b)
	}
}

// TestLoadShort is the CI version of the load test: a few clients for a few
// seconds against a small store, and not one error. RAGMEM_LOADTEST=full
// runs the full configuration (32 clients, 60 s, 10k chunks) instead; the
// figures in docs/server.md come from cmd/ragmem-load.
func TestLoadShort(t *testing.T) {
	clients, dur, chunks := 6, 3*time.Second, 400
	if os.Getenv("RAGMEM_LOADTEST") == "full" {
		clients, dur, chunks = 32, 60*time.Second, 10_000
	}
	dir := t.TempDir()
	tok, _, err := server.EnsureToken(dir)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := server.New(context.Background(), dir, &server.Options{RateLimit: -1, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	defer func() {
		hs.Close()
		if err := srv.Close(); err != nil {
			t.Error(err)
		}
	}()
	cfg := loadtest.Config{BaseURL: hs.URL, Token: tok, Clients: clients, Duration: dur, MaxRequests: 20_000, Seed: 3}
	have, err := loadtest.Seed(context.Background(), cfg, chunks, 5, 4)
	if err != nil || have < chunks {
		t.Fatalf("seed: %d chunks, %v", have, err)
	}
	rep, err := loadtest.Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("\n%s", rep)
	if rep.Errors != 0 {
		t.Errorf("%d errors: %v", rep.Errors, rep.ErrorSamples)
	}
	for _, o := range rep.Ops {
		if o.Count == 0 || o.P50 <= 0 || o.P99 < o.P50 || o.Max < o.P99 {
			t.Errorf("op %+v", o)
		}
	}
	if rep.ChunksAfter <= rep.ChunksBefore {
		t.Errorf("indexing during the run added nothing: %d -> %d", rep.ChunksBefore, rep.ChunksAfter)
	}
}

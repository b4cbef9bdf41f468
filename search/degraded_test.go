package search

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/ragmem/ragmem/index"
	"github.com/ragmem/ragmem/index/driver"
	"github.com/ragmem/ragmem/internal/embed"
	"github.com/ragmem/ragmem/internal/index/engine"
)

// errOutage is what the index returns when the embedder is down.
var errOutage = fmt.Errorf("%w: embed query: %w", engine.ErrEmbedding,
	&embed.UnavailableError{Cause: fmt.Errorf("%w: 503", embed.ErrRetriesExhausted)})

// TestSearchDegradesToBM25: with the embedder unavailable, hybrid and vector
// searches answer from BM25, run once, and the report says which mode was
// used and why; the caller's cancellation and other failures are errors.
func TestSearchDegradesToBM25(t *testing.T) {
	text := []driver.Hit{hit("a", 9), hit("b", 8), hit("c", 1), hit("d", 0.5)}
	for _, mode := range []Mode{Hybrid, Vector} {
		f := &fakeRetriever{text: text, verr: errOutage}
		res, rep, err := SearchReport(context.Background(), f, "herons", &Options{Mode: mode, TopK: 2})
		if err != nil {
			t.Fatalf("%s: %v", mode, err)
		}
		if rep.Mode != FullText || !strings.HasPrefix(rep.Degraded, DegradedEmbedder+": ") || !strings.Contains(rep.Degraded, "keeps answering with errors") {
			t.Fatalf("%s: report %+v", mode, rep)
		}
		if !eq(ids(res), []string{"a", "b"}) || res[0].Explanation.Method != "bm25" {
			t.Fatalf("%s: results %v %+v", mode, ids(res), res[0].Explanation)
		}
		if f.textN != 1 {
			t.Fatalf("%s: BM25 ran %d times", mode, f.textN)
		}
		// Search gives the same results.
		f2 := &fakeRetriever{text: text, verr: errOutage}
		if res2, err := Search(context.Background(), f2, "herons", &Options{Mode: mode, TopK: 2}); err != nil || !eq(ids(res2), ids(res)) {
			t.Fatalf("%s: Search: %v %v", mode, ids(res2), err)
		}
	}
	// Healthy: the mode asked for, nothing degraded.
	f := &fakeRetriever{text: text, vec: []driver.Hit{hit("a", 0.9)}}
	if _, rep, err := SearchReport(context.Background(), f, "herons", nil); err != nil || rep.Mode != Hybrid || rep.Degraded != "" {
		t.Fatalf("healthy: %+v %v", rep, err)
	}
	// Not an outage: the caller gave up; another vector failure; BM25 failing too.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, _, err := SearchReport(ctx, &fakeRetriever{text: text, verr: errOutage}, "q", nil); err == nil {
		t.Fatal("a cancelled search degraded instead of failing")
	}
	other := errors.New("vector index damaged")
	if _, _, err := SearchReport(context.Background(), &fakeRetriever{text: text, verr: other}, "q", nil); !errors.Is(err, other) {
		t.Fatalf("another failure: %v", err)
	}
	if _, _, err := SearchReport(context.Background(), &fakeRetriever{terr: other, verr: errOutage}, "q", nil); err == nil {
		t.Fatal("BM25 failing too must fail the search")
	}
	// The reasons, in words, never the error text.
	for err, want := range map[error]string{
		fmt.Errorf("%w: %w", engine.ErrEmbedding, embed.ErrDimensionMismatch):       "another dimension",
		fmt.Errorf("%w: %w", engine.ErrEmbedding, context.DeadlineExceeded):         "in time",
		fmt.Errorf("%w: dial tcp 10.0.0.7:443: %w", engine.ErrEmbedding, &netErr{}): "cannot be reached",
	} {
		_, rep, _ := SearchReport(context.Background(), &fakeRetriever{text: text, verr: err}, "q", nil)
		if !strings.Contains(rep.Degraded, want) || strings.Contains(rep.Degraded, "10.0.0.7") {
			t.Errorf("%v: %q", err, rep.Degraded)
		}
	}
}

type netErr struct{}

func (*netErr) Error() string   { return "connection refused" }
func (*netErr) Timeout() bool   { return false }
func (*netErr) Temporary() bool { return false }

// TestDegradedHybridKeepsItsCandidates: a hybrid search whose embedder is
// down answers as a full-text search with the same options, also when
// diversification drops candidates beyond the first fetch (3 × TopK): its
// BM25 candidates are all kept, not cut to the fetch.
func TestDegradedHybridKeepsItsCandidates(t *testing.T) {
	var text []driver.Hit
	for i := 0; i < 15; i++ { // one source's chunks: at most 3 are shown
		text = append(text, driver.Hit{Record: index.Record{ID: fmt.Sprintf("a%02d", i), SourceURL: "https://x/a",
			Content: fmt.Sprintf("heron %d wades in water number %d", i, i*7)}, Score: float64(100 - i)})
	}
	text = append(text, driver.Hit{Record: index.Record{ID: "b", SourceURL: "https://x/b", Content: "a stork on a roof"}, Score: 1})
	opts := &Options{TopK: 4, SimilarityThreshold: -1}
	want, err := Search(context.Background(), &fakeRetriever{text: text}, "herons", &Options{Mode: FullText, TopK: 4, SimilarityThreshold: -1})
	if err != nil || !eq(ids(want), []string{"a00", "a01", "a02", "b"}) {
		t.Fatalf("full text: %v %v", ids(want), err)
	}
	res, rep, err := SearchReport(context.Background(), &fakeRetriever{text: text, verr: errOutage}, "herons", opts)
	if err != nil || rep.Mode != FullText || !eq(ids(res), ids(want)) {
		t.Fatalf("degraded hybrid: %v %+v %v, want %v", ids(res), rep, err, ids(want))
	}
}

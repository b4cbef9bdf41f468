package search

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/ragmem/ragmem/index"
)

// fakeReranker is a search.Reranker in memory, to test the stage alone
// (internal/rerank and rag test it over HTTP): it scores with score, or
// fails with err, and counts its calls.
type fakeReranker struct {
	score func(i int) float64
	n     int // scores to return; -1: one per document
	err   error
	calls int
}

func (f *fakeReranker) Rerank(_ context.Context, _ string, docs []string) ([]float64, error) {
	f.calls++
	if f.err != nil {
		return nil, f.err
	}
	n := f.n
	if n < 0 {
		n = len(docs)
	}
	out := make([]float64, n)
	for i := range out {
		out[i] = f.score(i)
	}
	return out, nil
}

func fused(n int) []Result {
	out := make([]Result, n)
	for i := range out {
		s := 1 - float64(i)/10
		out[i] = Result{Record: index.Record{ID: fmt.Sprint("r", i), Content: fmt.Sprint("text ", i)}, Score: s, Explanation: Explanation{Fused: s}}
	}
	return out
}

func TestRerankStage(t *testing.T) {
	f := &fakeReranker{score: func(i int) float64 { return float64(i) }, n: -1} // reverses
	x := newReranking(&Options{Reranker: f, RerankTop: 3})
	in := fused(5)
	out := x.apply(context.Background(), "q", in)
	var got []string
	for _, r := range out {
		got = append(got, r.Record.ID)
	}
	if strings.Join(got, " ") != "r2 r1 r0 r3 r4" {
		t.Fatalf("order %v", got)
	}
	for i, r := range out {
		if r.Score != in[i].Score {
			t.Errorf("place %d score %v, want the place's fused score %v", i, r.Score, in[i].Score)
		}
	}
	if out[0].Explanation.RerankRank != 1 || out[0].Explanation.RerankScore != 2 || out[0].Explanation.Fused != in[2].Score || out[3].Explanation.RerankRank != 0 {
		t.Errorf("explanations %+v %+v", out[0].Explanation, out[3].Explanation)
	}
	// Ranking again (search's loop with a larger pool): the same top N is
	// not sent again.
	x.apply(context.Background(), "q", fused(8))
	var rep Report
	x.report(&rep)
	if f.calls != 1 || rep.Reranked != 3 || rep.RerankSkipped != "" {
		t.Errorf("calls %d, report %+v", f.calls, rep)
	}
}

func TestRerankStageFailures(t *testing.T) {
	cases := map[string]struct {
		f    *fakeReranker
		want string
	}{
		"too few scores": {&fakeReranker{score: func(int) float64 { return 1 }, n: 2}, "it returns invalid answers"},
		"NaN":            {&fakeReranker{score: func(int) float64 { return math.NaN() }, n: -1}, "it returns invalid answers"},
		"deadline":       {&fakeReranker{err: fmt.Errorf("post: %w", context.DeadlineExceeded)}, "it does not answer in time"},
		"own reason":     {&fakeReranker{err: reasoned{}}, "it is asleep"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			x := newReranking(&Options{Reranker: c.f})
			in := fused(4)
			for range 2 {
				out := x.apply(context.Background(), "q", in)
				for i := range out {
					if out[i].Record.ID != in[i].Record.ID || out[i].Explanation.RerankRank != 0 {
						t.Fatalf("place %d: %+v", i, out[i])
					}
				}
			}
			var rep Report
			x.report(&rep)
			if c.f.calls != 1 || rep.Reranked != 0 || !strings.HasPrefix(rep.RerankSkipped, "reranker unavailable: "+c.want) || !errors.Is(rep.RerankErr, ErrRerankSkipped) {
				t.Errorf("calls %d, report %+v", c.f.calls, rep)
			}
		})
	}
}

type reasoned struct{}

func (reasoned) Error() string  { return "asleep at http://secret@host/" }
func (reasoned) Reason() string { return "it is asleep" }

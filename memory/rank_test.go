package memory

import (
	"slices"
	"testing"
	"time"
)

// rankMatches orders by score + weight × relevance, then score, then the
// newer memory, then the slug, and keeps the first limit.
func TestRankMatches(t *testing.T) {
	old, recent := testClock.Add(-10*day), testClock.Add(-time.Hour)
	m := func(slug string, total int, rel float64, at time.Time) Match {
		return Match{Memory: Memory{Slug: slug, Frontmatter: Frontmatter{DiscoveredAt: at}}, Score: Score{Total: total}, Relevance: rel}
	}
	in := func() []Match {
		return []Match{
			m("a-low", 30, 0.9, old),     // rank 39
			m("b-tie-old", 35, 0.2, old), // rank 37
			m("c-tie-new", 35, 0.2, recent),
			m("d-best", 40, 0.5, old), // rank 45
			m("e-same", 35, 0.2, recent),
		}
	}
	slugsOf := func(ms []Match) []string {
		var out []string
		for _, x := range ms {
			out = append(out, x.Memory.Slug)
		}
		return out
	}
	got := rankMatches(in(), 10, 10)
	want := []string{"d-best", "a-low", "c-tie-new", "e-same", "b-tie-old"}
	if s := slugsOf(got); !slices.Equal(s, want) {
		t.Fatalf("weight 10: %v, want %v", s, want)
	}
	if got[0].Rank != 45 || got[1].Rank != 39 || got[4].Rank != 37 {
		t.Errorf("ranks %v %v %v", got[0].Rank, got[1].Rank, got[4].Rank)
	}
	// Without relevance, the score decides.
	got = rankMatches(in(), 0, 2)
	if s := slugsOf(got); !slices.Equal(s, []string{"d-best", "c-tie-new"}) {
		t.Fatalf("weight 0, limit 2: %v", s)
	}
}

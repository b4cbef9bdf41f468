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
		return Match{Memory: Memory{Slug: slug, Frontmatter: Frontmatter{DiscoveredAt: at}, Strength: 1}, Score: Score{Total: total}, Relevance: rel}
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
	w := weights{relevance: 10, feedback: 10, decay: 10}
	got := rankMatches(in(), w, 10)
	want := []string{"d-best", "a-low", "c-tie-new", "e-same", "b-tie-old"}
	if s := slugsOf(got); !slices.Equal(s, want) {
		t.Fatalf("weight 10: %v, want %v", s, want)
	}
	if got[0].Rank != 45 || got[1].Rank != 39 || got[4].Rank != 37 {
		t.Errorf("ranks %v %v %v", got[0].Rank, got[1].Rank, got[4].Rank)
	}
	// Without relevance, the score decides.
	got = rankMatches(in(), weights{feedback: 10, decay: 10}, 2)
	if s := slugsOf(got); !slices.Equal(s, []string{"d-best", "c-tie-new"}) {
		t.Fatalf("weight 0, limit 2: %v", s)
	}
}

// Feedback and decay are terms of the rank with their weights: a memory
// injected 20 times and never cited loses 10 × (1/22 − 0.5) = −4.545; one
// cited every time gains; a memory at strength 0.25 loses 10 × 0.75.
func TestRankFeedbackAndDecay(t *testing.T) {
	m := func(slug string, inj, cited int, strength float64) Match {
		return Match{Memory: Memory{Slug: slug, Feedback: Feedback{Injected: inj, Cited: cited}, Strength: strength}, Score: Score{Total: 40}}
	}
	got := rankMatches([]Match{m("never-cited", 20, 0, 1), m("new", 0, 0, 1), m("cited", 20, 20, 1), m("decayed", 0, 0, 0.25)},
		weights{relevance: 10, feedback: 10, decay: 10}, 10)
	want := map[string]float64{"cited": 44.545, "new": 40, "never-cited": 35.455, "decayed": 32.5}
	order := []string{"cited", "new", "never-cited", "decayed"}
	for i, g := range got {
		if g.Memory.Slug != order[i] || g.Rank != want[g.Memory.Slug] {
			t.Errorf("%d: %s rank %v (feedback %v, decay %v), want %s %v", i, g.Memory.Slug, g.Rank, g.Feedback, g.Decay, order[i], want[order[i]])
		}
	}
}

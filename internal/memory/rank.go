package memory

import (
	"math"
	"sort"
)

// The one place memories are ranked. Match finds the candidates (patterns
// that fire, weak matches) and gives each its score (score.go) and
// its retrieval relevance; rankMatches orders them. Signals that change
// which memory an agent sees first (recency decay, feedback on injected
// memories, supersession of an older memory by a newer one) belong here,
// each with a documented weight, so that every surface ranks alike.

// weights are the weights of the ranking terms (Options).
type weights struct {
	relevance, feedback, decay float64
}

func (s *Store) weights() weights {
	return weights{relevance: s.o.RelevanceWeight, feedback: s.o.FeedbackWeight, decay: s.o.DecayWeight}
}

// feedbackTerm is w × (cite rate − 0.5): 0 for a memory never injected,
// down to −w/2 for one injected many times and never cited, up to +w/2 for
// one cited every time.
func feedbackTerm(m *Memory, w float64) float64 { return round3(w * (m.Feedback.CiteRate() - 0.5)) }

// decayTerm is −w × (1 − strength): 0 for a fresh memory, −w for one that
// has fully decayed.
func decayTerm(m *Memory, w float64) float64 { return round3(-w * (1 - m.Strength)) }

// rankMatches sets each match's Rank to Score.Total + relevance weight ×
// Relevance + the feedback term + the decay term, orders the matches by
// rank (ties: the higher score, then the newer memory, then the slug) and
// keeps the first limit.
func rankMatches(ms []Match, w weights, limit int) []Match {
	for i := range ms {
		ms[i].Feedback = feedbackTerm(&ms[i].Memory, w.feedback)
		ms[i].Decay = decayTerm(&ms[i].Memory, w.decay)
		ms[i].Rank = round3(float64(ms[i].Score.Total) + w.relevance*ms[i].Relevance + ms[i].Feedback + ms[i].Decay)
	}
	sort.SliceStable(ms, func(i, j int) bool {
		a, b := ms[i], ms[j]
		if a.Rank != b.Rank {
			return a.Rank > b.Rank
		}
		if a.Score.Total != b.Score.Total {
			return a.Score.Total > b.Score.Total
		}
		if !a.Memory.DiscoveredAt.Equal(b.Memory.DiscoveredAt) {
			return a.Memory.DiscoveredAt.After(b.Memory.DiscoveredAt)
		}
		return a.Memory.Slug < b.Memory.Slug
	})
	if len(ms) > limit {
		ms = ms[:limit]
	}
	return ms
}

func round3(x float64) float64 { return math.Round(x*1000) / 1000 }

package memory

import (
	"math"
	"sort"
)

// The one place memories are ranked. Match finds the candidates (patterns
// that fire, weak matches) and gives each the seed's score (score.go) and
// its retrieval relevance; rankMatches orders them. Signals that change
// which memory an agent sees first (recency decay, feedback on injected
// memories, supersession of an older memory by a newer one) belong here,
// each with a documented weight, so that every surface ranks alike.

// rankMatches sets each match's Rank to Score.Total + weight × Relevance,
// orders the matches by rank (ties: the higher score, then the newer
// memory, then the slug) and keeps the first limit.
func rankMatches(ms []Match, weight float64, limit int) []Match {
	for i := range ms {
		ms[i].Rank = round3(float64(ms[i].Score.Total) + weight*ms[i].Relevance)
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

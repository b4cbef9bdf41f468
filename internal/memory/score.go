package memory

import (
	"strings"
	"time"

	"github.com/ragmem/ragmem/internal/clean"
	"github.com/ragmem/ragmem/internal/memory/internal/pattern"
)

// DefaultAgentTags are the specialty tags of the four usual agents
// (docs/memory.md, "Scoring and ranking"). A memory sharing tags with the agent's specialty scores
// higher for it.
var DefaultAgentTags = map[string][]string{
	"planner":   {"planning", "structure", "analysis"},
	"developer": {"implementation", "code", "patterns"},
	"tester":    {"testing", "validation", "quality"},
	"reviewer":  {"review", "quality", "standards"},
}

// Score is a memory's relevance score (0–100, docs/memory.md "Scoring and
// ranking"), with its parts.
type Score struct {
	// Importance: low 5, medium 15, high 25, critical 30.
	Importance int `json:"importance"`
	// Recency: 10 when discovered less than 24 hours ago, 5 when less than
	// 72 hours ago, else 0.
	Recency int `json:"recency"`
	// Keyword: 5 for each content word of the task (stop words left out)
	// found in the memory's title, whenToUse patterns or tags, as a
	// substring or by its stem; at most 20.
	Keyword int `json:"keyword"`
	// AgentTags: 10 for the first tag shared with the agent's specialty, 5
	// for each further one; at most 15.
	AgentTags int `json:"agentTags"`
	// Discoverer: 10 when the agent discovered the memory (any entry).
	Discoverer int `json:"discoverer"`
	// Total is the sum, capped at 100.
	Total int `json:"total"`
}

// scoreContext is what a memory is scored against.
type scoreContext struct {
	Task      string
	Agent     string
	AgentTags []string // the agent's specialty tags
}

// scoreFor scores m for sc at time now (the table in docs/memory.md,
// "Scoring and ranking"). The keyword and agent-tag rules are those the
// worked examples check (docs/memory.md, "Worked examples"): they count
// task words found in whenToUse as well as in the title (Example 3: "auth" memory, 10 points for "implement" and
// "feature"), and give 10 points for one shared specialty tag (Examples 1
// and 3).
func scoreFor(m *Memory, sc scoreContext, now time.Time) Score {
	return scoreMemory(m, pattern.Analyze(sc.Task), sc, normTags(sc.AgentTags), now)
}

func scoreMemory(m *Memory, task []pattern.Term, sc scoreContext, agentTags map[string]bool, now time.Time) Score {
	var s Score
	s.Importance = m.Importance.Points()
	if !m.DiscoveredAt.IsZero() {
		age := now.Sub(m.DiscoveredAt)
		switch {
		case age < 24*time.Hour:
			s.Recency = 10
		case age < 72*time.Hour:
			s.Recency = 5
		}
	}
	text := m.kwText
	if text == "" {
		text = m.keywordText()
	}
	matched := 0
	for _, t := range task {
		if len(t.Word) < 2 {
			continue
		}
		if strings.Contains(text, t.Word) || (len([]rune(t.Stem)) >= 4 && strings.Contains(text, t.Stem)) {
			matched++
		}
	}
	s.Keyword = min(20, 5*matched)
	shared := 0
	tags := m.tagSet
	if tags == nil {
		tags = normTags(m.Tags)
	}
	for tag := range tags {
		if agentTags[tag] {
			shared++
		}
	}
	if shared > 0 {
		s.AgentTags = min(15, 5+5*shared)
	}
	if sc.Agent != "" {
		for _, d := range m.Discoverers {
			if strings.EqualFold(strings.TrimSpace(d), strings.TrimSpace(sc.Agent)) {
				s.Discoverer = 10
				break
			}
		}
	}
	s.Total = min(100, max(0, s.Importance+s.Recency+s.Keyword+s.AgentTags+s.Discoverer))
	return s
}

// normTags normalises tags for comparison: the stems of their words
// ("patterns" and "pattern" are the same tag).
func normTags(tags []string) map[string]bool {
	out := map[string]bool{}
	for _, t := range tags {
		var parts []string
		for _, a := range pattern.Analyze(t) {
			parts = append(parts, a.Stem)
		}
		if len(parts) == 0 {
			if l := strings.ToLower(clean.Line(t)); l != "" {
				out[l] = true
			}
			continue
		}
		out[strings.Join(parts, "-")] = true
	}
	return out
}

// agentTagsFor returns the specialty tags of an agent: its entry in the map
// (by lower-cased name) plus extra.
func agentTagsFor(m map[string][]string, agent string, extra []string) []string {
	out := append([]string(nil), m[strings.ToLower(strings.TrimSpace(agent))]...)
	return append(out, extra...)
}

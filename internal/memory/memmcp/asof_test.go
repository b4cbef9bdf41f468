package memmcp

import (
	"strings"
	"testing"
	"time"

	"github.com/ragmem/ragmem/internal/memory"
)

// asOf on find_memories and recall_memories: what held at that time.
func TestAsOfTools(t *testing.T) {
	cs, st := connect(t, false)
	for _, m := range []struct {
		title, body string
		at          time.Time
	}{
		{"Rebuild at 02:00", "The search service rebuilds its index every night at 02:00.", time.Date(2025, 5, 4, 0, 0, 0, 0, time.UTC)},
		{"Rebuild at 04:30", "The search service rebuilds its index every night at 04:30.", time.Date(2025, 9, 1, 0, 0, 0, 0, time.UTC)},
	} {
		if _, err := st.Add(bg, memory.NewMemory{Frontmatter: memory.Frontmatter{Title: m.title, WhenToUse: []string{"search|index"},
			OccurredAt: m.at, DiscoveredAt: m.at.Add(time.Hour)}, Content: m.body, Separate: true}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := st.Supersede(bg, "rebuild-at-04-30", "rebuild-at-02-00", "cron checked"); err != nil {
		t.Fatal(err)
	}
	slugs := func(out map[string]any) string {
		var s []string
		for _, m := range out["memories"].([]any) {
			s = append(s, m.(map[string]any)["slug"].(string))
		}
		return strings.Join(s, ",")
	}
	for _, c := range []struct{ asOf, want string }{{"", "rebuild-at-04-30"}, {"2025-06-01", "rebuild-at-02-00"}, {"in July 2025", "rebuild-at-02-00"}, {"2025-01-01", ""}, {"2025-09-01T00:00:00Z", "rebuild-at-04-30"}} {
		args := map[string]any{"query": "search index rebuild"}
		if c.asOf != "" {
			args["asOf"] = c.asOf
		}
		out, text, isErr := call(t, cs, ToolFindMemories, args)
		if isErr || slugs(out) != c.want {
			t.Errorf("find as of %q: %v %s, want %s", c.asOf, out, text, c.want)
		}
	}
	out, text, isErr := call(t, cs, ToolRecallMemories, map[string]any{"task": "change the search index schedule", "asOf": "2025-06-01"})
	if isErr || slugs(out) != "rebuild-at-02-00" || !strings.Contains(text, "02:00") {
		t.Fatalf("recall as of June 2025: %v\n%s", out, text)
	}
	if _, text, isErr := call(t, cs, ToolFindMemories, map[string]any{"query": "x", "asOf": "the day after never"}); !isErr {
		t.Errorf("bad asOf accepted: %s", text)
	}
}

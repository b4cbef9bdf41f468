package layers_test

import (
	"context"
	"fmt"
	"os"

	"github.com/ragmem/ragmem/internal/memory/layers"
)

// An agent loop keeps what happened (episodic), facts (semantic) and rules
// (procedural) across its runs; working memory lasts as long as the
// process. Without an index, searches match words; with one (Options.Index,
// such as rag.Engine.Store()), episodic memory is searched with hybrid
// search.
func ExampleManager() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "layers")
	defer os.RemoveAll(dir)

	m, err := layers.Open(ctx, dir, nil)
	if err != nil {
		panic(err)
	}
	defer m.Close()
	m.Append(ctx, layers.Episodic, layers.Entry{Content: "The deploy failed: the database migration timed out after 30 s."})
	m.Append(ctx, layers.Episodic, layers.Entry{Content: "Upgraded the HTTP client; all tests pass."})
	m.Learn(ctx, layers.Knowledge{Key: "migration timeout", Value: "30 s, set in deploy.yaml"})
	m.AddRule(ctx, layers.Rule{Condition: "deploy|release", Action: "Run the migrations on a copy of production first."})

	eps, _ := m.Search(ctx, layers.Episodic, "why did the migration fail", 3)
	for _, e := range eps {
		fmt.Println("episode:", e.Content)
	}
	if k, ok := m.Recall("migration timeout"); ok {
		fmt.Println("fact:", k.Value)
	}
	rules, _ := m.MatchRules(ctx, "Deploy version 2.3", 5, 0)
	for _, r := range rules {
		fmt.Println("rule:", r.Action)
	}
	// Output:
	// episode: The deploy failed: the database migration timed out after 30 s.
	// fact: 30 s, set in deploy.yaml
	// rule: Run the migrations on a copy of production first.
}

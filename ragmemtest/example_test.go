package ragmemtest_test

// This file is the example test of docs/testing.md ("Property tests for your own
// configuration"), compiled and run with the package's tests. Keep the two in
// step.

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/leanovate/gopter/gen"
	"github.com/leanovate/gopter/prop"

	"github.com/ragmem/ragmem/index"
	"github.com/ragmem/ragmem/rag"
	"github.com/ragmem/ragmem/ragmemtest"
)

// myConfig stands for the configuration a project gives its engine.
var myConfig = rag.Config{TopK: 8, KnowledgeBudget: 1200}

func TestMyKnowledgeContext(t *testing.T) {
	ctx := context.Background()
	eng := ragmemtest.NewEngine(t, &ragmemtest.EngineOptions{Config: myConfig})
	docs := ragmemtest.Sample[[]index.Document](ragmemtest.GenCorpus(30, 30), 1)
	if _, err := eng.IndexDocuments(ctx, docs); err != nil {
		t.Fatal(err)
	}
	ragmemtest.Run(t, "context messages are isolated, attributed and within budget", prop.ForAll(
		func(query string, window int) string {
			c, err := eng.ContextFor(ctx, query, rag.ContextOptions{Model: "gpt-4o", ModelContextLimit: window})
			if err != nil {
				return err.Error()
			}
			if err := ragmemtest.CheckMessage(c.Block, c.Message); err != nil { // P2, P3, P9
				return err.Error()
			}
			res, err := eng.Retrieve(ctx, query, nil)
			if err != nil {
				return err.Error()
			}
			if err := ragmemtest.CheckResults(res, myConfig.TopK); err != nil { // P1
				return err.Error()
			}
			if c.Block.KnowledgeTokens > c.Budgets.KnowledgeBudget && len(c.Block.Sources) > 0 { // P4, P7
				return "knowledge over budget"
			}
			return ""
		},
		ragmemtest.GenQuery(), gen.IntRange(4000, 128000),
	))
}

// TestReadmeShowsThisExample keeps the copy of the example test in
// docs/testing.md identical to the one compiled here.
func TestReadmeShowsThisExample(t *testing.T) {
	body := func(path, end string) string {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		s := string(b)
		i := strings.Index(s, "var myConfig")
		if i < 0 {
			t.Fatalf("%s has no example", path)
		}
		j := strings.Index(s[i:], end)
		if j < 0 {
			t.Fatalf("%s: the example does not end with %q", path, end)
		}
		return s[i : i+j]
	}
	readme, here := body("../docs/testing.md", "\n```"), body("example_test.go", "\n\n// TestReadmeShowsThisExample")
	if readme != here {
		t.Errorf("the example in docs/testing.md differs from ragmemtest/example_test.go:\n%s\n---\n%s", readme, here)
	}
}

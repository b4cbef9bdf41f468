package budget_test

import (
	"fmt"

	"github.com/ragmem/ragmem/budget"
)

func Example() {
	// A 128k-token model, a 1500-token system prompt, a 200-token question
	// and 4000 tokens reserved for the answer.
	b := budget.CalculateTokenBudgets(128000, 1500, 200, 4000, budget.Config{})
	fmt.Printf("available %d, preferences %d, knowledge %d, remaining %d\n",
		b.TotalAvailable, b.PreferenceBudget, b.KnowledgeBudget, b.Remaining)

	// A small window leaves little room: 30% of what the profile leaves.
	small := budget.CalculateTokenBudgets(4096, 1200, 300, 1000, budget.Config{})
	fmt.Printf("small window: knowledge %d\n", small.KnowledgeBudget)

	// Fill a tiny 30-token budget from three retrieved chunks.
	enc := budget.CounterForModel("gpt-4o")
	items := []budget.Item{
		{Text: "Vector databases store embeddings. They answer nearest-neighbour queries. Most use HNSW graphs.", Score: 0.62, Overhead: 5},
		{Text: "RAG combines retrieval with generation.", Score: 0.91, Overhead: 5},
		{Text: "BM25 ranks documents by term frequency and document length.", Score: 0.55, Overhead: 5},
	}
	for _, s := range budget.Select(items, 30, enc) {
		fmt.Printf("item %d, %d tokens, truncated %v: %s\n", s.Item, s.Tokens, s.Truncated, s.Text)
	}
	// Output:
	// available 122300, preferences 500, knowledge 2000, remaining 119800
	// small window: knowledge 328
	// item 1, 12 tokens, truncated false: RAG combines retrieval with generation.
	// item 0, 17 tokens, truncated true: Vector databases store embeddings. They answer nearest-neighbour queries.
}

func ExampleTruncateAtSentence() {
	enc := budget.CounterForModel("gpt-4")
	text := "Dr. Smith measured 3.5 units. The result was surprising! Nobody expected it."
	for _, max := range []int{100, 15, 11, 2} {
		s, truncated := budget.TruncateAtSentence(text, max, enc)
		fmt.Printf("%3d %-5v %q\n", max, truncated, s)
	}
	// Output:
	// 100 false "Dr. Smith measured 3.5 units. The result was surprising! Nobody expected it."
	//  15 true  "Dr. Smith measured 3.5 units. The result was surprising!"
	//  11 true  "Dr. Smith measured 3.5 units."
	//   2 true  ""
}

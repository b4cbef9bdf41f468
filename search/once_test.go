package search

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/ragmem/ragmem/index"
	"github.com/ragmem/ragmem/internal/embed"
	"github.com/ragmem/ragmem/internal/index/engine"
)

// countingTopics counts the embedder calls for one text.
type countingTopics struct {
	topicEmbedder
	text  string
	calls *atomic.Int64
}

func (c countingTopics) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	for _, t := range texts {
		if t == c.text {
			c.calls.Add(1)
		}
	}
	return c.topicEmbedder.Embed(ctx, texts)
}

// TestQueryEmbeddedOncePerSearch: a hybrid search with feedback embeds its
// query once, even with the query cache off: feedback refines the vector
// the vector side searched with instead of asking for it again.
func TestQueryEmbeddedOncePerSearch(t *testing.T) {
	ctx := context.Background()
	var calls atomic.Int64
	emb := countingTopics{topicEmbedder: topicEmbedder{
		"apple orchard": fbQuery, "docA": fbA, "docB": fbBC, "docC": fbBC, "filler": fbFiller,
	}, text: "apple orchard", calls: &calls}
	ix, err := engine.Open(ctx, t.TempDir(), &engine.Options{Embedder: emb, Logger: quietLog(),
		QueryCache: embed.NewQueryCache(&embed.QueryCacheOptions{MaxEntries: -1})})
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	if _, err := ix.AddMany(ctx, []index.Document{
		{SourceURL: "https://t.test/a", Content: "docA: an apple tree in the orchard."},
		{SourceURL: "https://t.test/b", Content: "docB: apple harvest at the orchard."},
		{SourceURL: "https://t.test/c", Content: "docC: orchard apple varieties."},
		{SourceURL: "https://t.test/f", Content: "filler text about trains."},
	}); err != nil {
		t.Fatal(err)
	}
	calls.Store(0)
	res, err := Search(ctx, ix, "apple orchard", &Options{Mode: Hybrid, Feedback: 2, SimilarityThreshold: -1})
	if err != nil {
		t.Fatal(err)
	}
	fed := false
	for _, r := range res {
		fed = fed || r.Explanation.FeedbackSimilarity != 0
	}
	if !fed {
		t.Fatalf("feedback did not run: %+v", res)
	}
	if n := calls.Load(); n != 1 {
		t.Errorf("the query was embedded %d times in one search", n)
	}
}

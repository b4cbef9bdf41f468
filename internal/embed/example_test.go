package embed_test

import (
	"context"
	"fmt"

	"github.com/ragmem/ragmem/internal/embed"
)

func dot(a, b []float32) float32 {
	var s float32
	for i := range a {
		s += a[i] * b[i]
	}
	return s
}

func ExampleLexical() {
	l := embed.NewLexical(nil)
	vecs, err := l.Embed(context.Background(), []string{
		"Hybrid search fuses BM25 and vector retrieval.",
		"hybrid retrieval: vectors fused with bm25 search",
		"Preheat the oven and butter the baking tin.",
	})
	if err != nil {
		panic(err)
	}
	fmt.Println("dimension:", l.Dimension())
	fmt.Println("identity:", l.Identity())
	fmt.Println("similar closer than unrelated:", dot(vecs[0], vecs[1]) > dot(vecs[0], vecs[2]))
	// Output:
	// dimension: 768
	// identity: lexical-v1/d768/w1/c3-5x0.35/b0/stem/stop
	// similar closer than unrelated: true
}

func ExampleParse() {
	for _, spec := range []string{"lexical", "lexical:dim=256,char=0.5", "openai:nomic-embed-text,dim=768,base=http://localhost:11434/v1"} {
		e, err := embed.Parse(spec)
		if err != nil {
			panic(err)
		}
		fmt.Println(e.Identity())
	}
	// Output:
	// lexical-v1/d768/w1/c3-5x0.35/b0/stem/stop
	// lexical-v1/d256/w1/c3-5x0.5/b0/stem/stop
	// openai/nomic-embed-text/d768
}

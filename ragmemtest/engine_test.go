package ragmemtest

import (
	"context"
	"testing"

	"github.com/ragmem/ragmem/index"
)

func TestNewEngineIsEmptyAndWorks(t *testing.T) {
	e := NewEngine(t, nil)
	if st, err := e.Stats(context.Background()); err != nil || st.ChunkCount != 0 {
		t.Fatalf("a new engine: %+v %v", st, err)
	}
	if _, err := e.IndexDocument(context.Background(), index.Document{SourceURL: "https://a.example/", Content: "Kelp forests grow fast."}); err != nil {
		t.Fatal(err)
	}
	res, err := e.Retrieve(context.Background(), "kelp", nil)
	if err != nil || len(res) != 1 {
		t.Fatalf("search: %v %v", res, err)
	}
	// Two engines are independent stores.
	if st, _ := NewEngine(t, nil).Stats(context.Background()); st.ChunkCount != 0 {
		t.Fatalf("a second engine holds %d chunks", st.ChunkCount)
	}
}

func BenchmarkOpenEngine(b *testing.B) {
	for i := 0; i < b.N; i++ {
		e, err := OpenEngine(context.Background(), nil)
		if err != nil {
			b.Fatal(err)
		}
		if err := e.Close(); err != nil {
			b.Fatal(err)
		}
	}
}

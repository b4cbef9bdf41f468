package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/ragmem/ragmem/index"
	"github.com/ragmem/ragmem/rag"
)

// chatServer answers every chat completion with a streamed "Hello from the
// model." and records the messages it received.
func chatServer(t *testing.T) (*httptest.Server, func() []map[string]string) {
	var mu sync.Mutex
	var last []map[string]string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct{ Messages []map[string]string }
		json.NewDecoder(r.Body).Decode(&req)
		mu.Lock()
		last = req.Messages
		mu.Unlock()
		w.Header().Set("Content-Type", "text/event-stream")
		for _, piece := range []string{"Hello ", "from the ", "model."} {
			fmt.Fprintf(w, "data: {\"id\":\"1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"content\":%q},\"finish_reason\":null}]}\n\n", piece)
		}
		fmt.Fprint(w, "data: {\"id\":\"1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n")
	}))
	t.Cleanup(srv.Close)
	return srv, func() []map[string]string {
		mu.Lock()
		defer mu.Unlock()
		return last
	}
}

func TestExampleAgent(t *testing.T) {
	srv, last := chatServer(t)
	dir := t.TempDir()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	eng, err := rag.Open(context.Background(), dir, &rag.Options{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := eng.IndexDocument(context.Background(), index.Document{SourceURL: "https://notes.example/kelp", Title: "Kelp", Content: "Kelp forests grow up to half a metre a day."}); err != nil {
		t.Fatal(err)
	}

	// While the store is held open elsewhere, the agent answers without it.
	var out, errb strings.Builder
	args := []string{"-base-url", srv.URL + "/v1", "-api-key", "k", "-model", "gpt-4o-mini", "-dir", dir, "How fast does kelp grow?"}
	if err := run(context.Background(), args, &out, &errb); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "Hello from the model.") || !strings.Contains(errb.String(), "locked") || len(last()) != 2 {
		t.Errorf("locked store: stdout %q stderr %q messages %d", out.String(), errb.String(), len(last()))
	}
	eng.Close()

	out.Reset()
	errb.Reset()
	if err := run(context.Background(), args, &out, &errb); err != nil {
		t.Fatal(err)
	}
	ms := last()
	if len(ms) != 3 || ms[1]["role"] != "assistant" || !strings.Contains(ms[1]["content"], "half a metre") || strings.Contains(ms[0]["content"], "half a metre") {
		t.Errorf("messages %v", ms)
	}
	if !strings.Contains(out.String(), "Hello from the model.") {
		t.Errorf("stdout %q", out.String())
	}
	if err := run(context.Background(), []string{"-dir", dir}, &out, &errb); err == nil {
		t.Error("no goal: no error")
	}
}

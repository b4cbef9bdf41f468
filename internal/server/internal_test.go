package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/ragmem/ragmem/index"
	"github.com/ragmem/ragmem/rag"
)

// TestRoutesAreDocumented checks the other direction of TestOpenAPI: every
// route the server registers is in openapi.json with its method.
func TestRoutesAreDocumented(t *testing.T) {
	var spec struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(openapiJSON, &spec); err != nil {
		t.Fatal(err)
	}
	s := &Server{mux: http.NewServeMux(), protected: map[string]bool{}}
	s.apiRoutes()
	s.mustHandle("GET /healthz", http.NotFound, false)
	s.mustHandle("GET /readyz", http.NotFound, false)
	s.mustHandle("GET /metrics", http.NotFound, false)
	if len(s.protected) < 10 {
		t.Fatalf("only %d routes", len(s.protected))
	}
	for pattern := range s.protected {
		method, path, _ := strings.Cut(pattern, " ")
		ops, ok := spec.Paths[path]
		if !ok {
			t.Errorf("%s is not documented", pattern)
			continue
		}
		if _, ok := ops[strings.ToLower(method)]; !ok {
			t.Errorf("%s: method not documented", pattern)
		}
	}
}

// TestOptionDefaults checks New's defaulting (withDefaults): a zero field
// gets its default, a negative quota or body bound means none, a body
// bound below the body limit is raised to it, and what is set stays.
func TestOptionDefaults(t *testing.T) {
	for _, c := range []struct {
		name string
		in   *Options
		want func(o Options) bool
	}{
		{"nil options are the defaults", nil, func(o Options) bool {
			return o.QuotaChunks == DefaultQuotaChunks && o.QuotaBytes == DefaultQuotaBytes &&
				o.MaxBodyBytes == DefaultMaxBodyBytes && o.MaxBodyInflight == DefaultMaxBodyInflight &&
				o.RateLimit == DefaultRateLimit && o.RateBurst == DefaultRateBurst &&
				o.RequestTimeout == DefaultRequestTimeout && o.LocalRequestTimeout == DefaultLocalRequestTimeout &&
				o.ExtractConcurrency >= 2 && o.Open != nil && o.Logger != nil && o.Now != nil
		}},
		{"negative quotas and inflight bound mean none", &Options{QuotaChunks: -1, QuotaBytes: -5, MaxBodyInflight: -1}, func(o Options) bool {
			return o.QuotaChunks == 0 && o.QuotaBytes == 0 && o.MaxBodyInflight == 0
		}},
		{"inflight bound is raised to the body limit", &Options{MaxBodyBytes: 1 << 20, MaxBodyInflight: 1 << 10}, func(o Options) bool {
			return o.MaxBodyInflight == 1<<20
		}},
		{"set values stay", &Options{QuotaChunks: 7, RateBurst: 3, MaxNamespaces: 2, IdleTimeout: time.Second, RateLimit: -1}, func(o Options) bool {
			return o.QuotaChunks == 7 && o.RateBurst == 3 && o.MaxNamespaces == 2 && o.IdleTimeout == time.Second && o.RateLimit == -1
		}},
	} {
		if got := withDefaults(c.in); !c.want(got) {
			t.Errorf("%s: got %+v", c.name, got)
		}
	}
}

// TestPublicAnswerHidesTheServersFiles checks publicAnswer, the one place
// that says what each answer hides from a remote client: for every answer
// type that can hold one, a memory's file URL or an error naming a file of
// the server reaches a remote client without the server's path, and the
// user's own process on a local listener sees it whole.
func TestPublicAnswerHidesTheServersFiles(t *testing.T) {
	dir := t.TempDir()
	file := "file://" + dir + "/notes.md"
	failure := "open " + dir + "/queue.log: permission denied"
	chunk := rag.ChunkJSON{URL: file, DocType: index.DocMemory}
	source := rag.SourceJSON{URL: file, DocType: index.DocMemory}
	job := rag.JobJSON{ID: "j1", Error: failure}
	answers := map[string]func() any{
		"PageAccepted":      func() any { j := job; return &rag.PageAccepted{Job: &j} },
		"JobJSON":           func() any { j := job; return &j },
		"JobsJSON":          func() any { return &rag.JobsJSON{Jobs: []rag.JobJSON{job}} },
		"PageJSON":          func() any { return &rag.PageJSON{Chunks: []rag.ChunkJSON{chunk}} },
		"SearchJSON":        func() any { return &rag.SearchJSON{Results: []rag.ResultJSON{{ChunkJSON: chunk}}} },
		"SourcesJSON":       func() any { return &rag.SourcesJSON{Sources: []rag.SourceJSON{source}} },
		"DeleteSourcesJSON": func() any { return &rag.DeleteSourcesJSON{KeptSources: []rag.SourceJSON{source}} },
		"DocumentsJSON":     func() any { return &rag.DocumentsJSON{Results: []rag.DocumentResult{{Error: failure}}} },
	}
	remote := httptest.NewRequest(http.MethodGet, "/v1/x", nil)
	local := remote.WithContext(context.WithValue(remote.Context(), localKey{}, true))
	for name, answer := range answers {
		for _, c := range []struct {
			r         *http.Request
			showsPath bool
		}{{remote, false}, {local, true}} {
			a := answer()
			publicAnswer(c.r, a)
			out, err := json.Marshal(a)
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.Contains(string(out), dir); got != c.showsPath {
				t.Errorf("%s (local %v): the answer names the server's directory: %v, want %v: %s", name, c.showsPath, got, c.showsPath, out)
			}
		}
	}
}

// TestFailMapsEngineErrors checks fail on the engine's own errors, as a
// handler mounted with Handle passes them (Server.Fail): each gets its
// status and code, and the client reads the message from the sentinel on,
// never what wraps it.
func TestFailMapsEngineErrors(t *testing.T) {
	s := &Server{log: slog.New(slog.DiscardHandler)}
	for _, c := range []struct {
		err    error
		status int
		code   string
	}{
		{fmt.Errorf("adding page 7: %w: 10 chunks", rag.ErrQuotaExceeded), http.StatusInsufficientStorage, CodeQuotaExceeded},
		{fmt.Errorf("adding page 7: %w: 5000 of 4096", rag.ErrTooManyChunks), http.StatusUnprocessableEntity, CodeTooManyChunks},
		{fmt.Errorf("adding page 7: %w: ragmem://x", rag.ErrReserved), http.StatusForbidden, CodeReserved},
		{fmt.Errorf("adding page 7: %w: no host", rag.ErrBadURL), http.StatusBadRequest, CodeBadRequest},
		{fmt.Errorf("adding page 7: %w", rag.ErrEmptyDocument), http.StatusUnprocessableEntity, CodeNoContent},
		{fmt.Errorf("adding page 7: %w", errors.New("boom")), http.StatusInternalServerError, CodeInternal},
	} {
		w := httptest.NewRecorder()
		r := httptest.NewRequest(http.MethodGet, "/v1/x", nil)
		s.fail(w, r.WithContext(context.WithValue(r.Context(), stateKey{}, &reqState{id: "r1"})), c.err)
		var body ErrorBody
		if err := json.Unmarshal(w.Body.Bytes(), &body); err != nil {
			t.Fatal(err)
		}
		if w.Code != c.status || body.Error.Code != c.code || strings.Contains(body.Error.Message, "adding page") {
			t.Errorf("%v: %d %+v, want %d %s and no wrapping text", c.err, w.Code, body.Error, c.status, c.code)
		}
	}
}

package server_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"testing"

	"github.com/ragmem/ragmem/index"
	"github.com/ragmem/ragmem/internal/server"
	"github.com/ragmem/ragmem/rag"
)

func (ts *testServer) postDocs(docs []map[string]any, headers ...string) {
	ts.t.Helper()
	ts.must(http.StatusOK, "POST", "/v1/documents", map[string]any{"documents": docs}, headers...)
}

func (ts *testServer) sourceURLs(filter string, headers ...string) []string {
	ts.t.Helper()
	var out rag.SourcesJSON
	ts.must(http.StatusOK, "GET", "/v1/sources?limit=1000&filter="+url.QueryEscape(filter), nil, headers...).json(ts.t, &out)
	var us []string
	for _, s := range out.Sources {
		us = append(us, s.URL)
	}
	return us
}

// TestDeleteSourcesByFilter: POST /v1/sources:delete with dryRun lists what
// the same call without it removes, in the request's namespace only;
// memories that match are kept and counted, a filter that matches only
// them is 403 reserved, an empty filter needs all, and a bad one is 400.
func TestDeleteSourcesByFilter(t *testing.T) {
	ts := newTestServer(t, nil)
	alice, err := server.RotateToken(ts.dir, "alice")
	if err != nil {
		t.Fatal(err)
	}
	asAlice := []string{"Authorization", "Bearer " + alice}
	var docs []map[string]any
	for i := range 5 {
		docs = append(docs, map[string]any{"url": fmt.Sprintf("https://ex.example/%d", i), "content": fmt.Sprintf("page %d about herons", i),
			"attrs": map[string]string{"team": []string{"red", "blue"}[i%2]}})
	}
	ts.postDocs(docs)
	ts.postDocs(docs, asAlice...)
	eng, release, err := ts.srv.AcquireNamespace(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := eng.Store().Add(context.Background(), index.Document{SourceURL: "file:///m/a.md", Content: "a memory", DocType: index.DocMemory, Attrs: map[string]string{"team": "red"}}); err != nil {
		t.Fatal(err)
	}
	release()

	var dry, done rag.DeleteSourcesJSON
	ts.must(http.StatusOK, "POST", "/v1/sources:delete", map[string]any{"filter": `team = "red"`, "dryRun": true}).json(t, &dry)
	urls := func(d rag.DeleteSourcesJSON) []string {
		var us []string
		for _, s := range d.Sources {
			us = append(us, s.URL)
		}
		return us
	}
	want := []string{"https://ex.example/0", "https://ex.example/2", "https://ex.example/4"}
	if !dry.DryRun || !slices.Equal(urls(dry), want) || dry.Kept != 1 || dry.Removed != 3 {
		t.Fatalf("dry run: %+v", dry)
	}
	if got := ts.sourceURLs(""); len(got) != 5 {
		t.Fatalf("the dry run removed something: %v", got)
	}
	ts.must(http.StatusOK, "POST", "/v1/sources:delete", map[string]any{"filter": `team = "red"`}).json(t, &done)
	if done.DryRun || !slices.Equal(urls(done), urls(dry)) || done.Chunks != dry.Chunks {
		t.Fatalf("removed %+v, the dry run listed %+v", done, dry)
	}
	if got := ts.sourceURLs(""); !slices.Equal(got, []string{"https://ex.example/1", "https://ex.example/3"}) {
		t.Fatalf("left: %v", got)
	}
	if got := ts.sourceURLs("", asAlice...); len(got) != 5 {
		t.Fatalf("the removal reached alice's namespace: %v", got)
	}
	r := ts.must(http.StatusForbidden, "POST", "/v1/sources:delete", map[string]any{"filter": `type = "memory"`})
	if r.errCode() != server.CodeReserved {
		t.Fatalf("only memories: %s", r.body)
	}
	ts.must(http.StatusBadRequest, "POST", "/v1/sources:delete", map[string]any{"filter": ""})
	ts.must(http.StatusBadRequest, "POST", "/v1/sources:delete", map[string]any{"filter": `team EXISTS`, "dryRun": true})
	ts.must(http.StatusBadRequest, "POST", "/v1/sources:delete", map[string]any{"filter": `team = `})
	ts.must(http.StatusBadRequest, "POST", "/v1/sources:delete", map[string]any{"filter": `team = "red"`, "bogus": 1})
	ts.must(http.StatusOK, "POST", "/v1/sources:delete", map[string]any{"all": true}, asAlice...).json(t, &done)
	if done.Removed != 5 || len(ts.sourceURLs("", asAlice...)) != 0 || len(ts.sourceURLs("")) != 2 {
		t.Fatalf("all in alice's namespace: %+v", done)
	}
}

// TestPatchSourceAttrs: PATCH /v1/sources sets and removes attributes (a
// merge patch), which a filtered listing then sees; unknown sources are
// 404, memories and reserved keys 403, bad keys 400, and nothing changes
// in another namespace.
func TestPatchSourceAttrs(t *testing.T) {
	ts := newTestServer(t, nil)
	const u = "https://ex.example/heron"
	doc := []map[string]any{{"url": u, "content": "herons wade in shallow water", "attrs": map[string]string{"team": "red", "old": "x"}}}
	ts.postDocs(doc)
	ts.postDocs(doc, server.NamespaceHeader, "other")
	var out rag.SetAttrsJSON
	ts.must(http.StatusOK, "PATCH", "/v1/sources?url="+url.QueryEscape(u), map[string]any{"attrs": map[string]any{"team": "blue", "old": nil}}).json(t, &out)
	if out.Changed == 0 || out.URL != u {
		t.Fatalf("patch: %+v", out)
	}
	if got := ts.sourceURLs(`team = "blue" and not old = "x"`); !slices.Equal(got, []string{u}) {
		t.Fatalf("after the patch, team=blue lists %v", got)
	}
	if got := ts.sourceURLs(`team = "red"`, server.NamespaceHeader, "other"); !slices.Equal(got, []string{u}) {
		t.Fatalf("the patch reached another namespace: %v", got)
	}
	ts.must(http.StatusNotFound, "PATCH", "/v1/sources?url="+url.QueryEscape("https://ex.example/none"), map[string]any{"attrs": map[string]any{"a": "b"}})
	r := ts.must(http.StatusForbidden, "PATCH", "/v1/sources?url="+url.QueryEscape(u), map[string]any{"attrs": map[string]any{"memoryDir": "/x"}})
	if r.errCode() != server.CodeReserved {
		t.Fatalf("reserved key: %s", r.body)
	}
	r = ts.must(http.StatusForbidden, "PATCH", "/v1/sources?url="+url.QueryEscape("preference://user"), map[string]any{"attrs": map[string]any{"a": "b"}})
	if r.errCode() != server.CodeReserved {
		t.Fatalf("preferences: %s", r.body)
	}
	ts.must(http.StatusBadRequest, "PATCH", "/v1/sources?url="+url.QueryEscape(u), map[string]any{"attrs": map[string]any{"bad key": "b"}})
	ts.must(http.StatusBadRequest, "PATCH", "/v1/sources?url="+url.QueryEscape(u), map[string]any{"attrs": map[string]any{}})
	ts.must(http.StatusBadRequest, "PATCH", "/v1/sources", map[string]any{"attrs": map[string]any{"a": "b"}})
}

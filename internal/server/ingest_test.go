package server_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/ragmem/ragmem/rag"
)

// Pages posted under variants of one URL are one page; attributes set on
// write are filtered on in search and context; bad attributes and filters
// get a clear 400.
func TestPagesURLVariantsAttrsAndFilters(t *testing.T) {
	ts := newTestServer(t, nil)
	body := "<html><head><title>Otters - Zoo</title></head><body><main><h1>Otters</h1><p>" + strings.Repeat("Sea otters hold hands while they sleep. ", 10) + "</p></main></body></html>"
	attrs := map[string]string{"team": "mammals", "lang": "en"}
	if j := ts.indexPage(map[string]any{"url": "https://Zoo.example/otters?utm_source=feed#top", "html": body, "attrs": attrs}); j.State != "done" {
		t.Fatalf("job %+v", j)
	}
	for _, u := range []string{"https://zoo.example:443/otters", "HTTPS://ZOO.EXAMPLE/otters?fbclid=1"} {
		var acc rag.PageAccepted
		ts.must(http.StatusOK, "POST", "/v1/pages", map[string]any{"url": u, "html": body, "attrs": attrs}).json(t, &acc)
		if acc.Status != "unchanged" || acc.URL != "https://zoo.example/otters" {
			t.Fatalf("%s: %+v", u, acc)
		}
	}
	var srcs struct {
		Total   int `json:"total"`
		Sources []struct {
			URL string `json:"url"`
		} `json:"sources"`
	}
	ts.must(http.StatusOK, "GET", "/v1/sources", nil).json(t, &srcs)
	if srcs.Total != 1 || srcs.Sources[0].URL != "https://zoo.example/otters" {
		t.Fatalf("sources: %+v", srcs)
	}
	ts.indexPage(map[string]any{"url": "https://zoo.example/lions", "text": "Lions sleep most of the day, and otters do not.", "attrs": map[string]string{"team": "cats"}})
	var s rag.SearchJSON
	ts.must(http.StatusOK, "POST", "/v1/search", map[string]any{"query": "otters sleep", "filter": "team = mammals AND lang IN [en, de]"}).json(t, &s)
	if len(s.Results) == 0 || s.Results[0].URL != "https://zoo.example/otters" || hasURL(s, "https://zoo.example/lions") {
		t.Fatalf("filtered search: %+v", s.Results)
	}
	ts.must(http.StatusOK, "POST", "/v1/search", map[string]any{"query": "otters sleep", "filter": `source STARTS WITH "https://ZOO.example/l"`, "threshold": -1}).json(t, &s)
	if len(s.Results) != 1 || s.Results[0].URL != "https://zoo.example/lions" {
		t.Fatalf("source prefix: %+v", s.Results)
	}
	var c rag.ContextJSON
	ts.must(http.StatusOK, "POST", "/v1/context", map[string]any{"query": "who sleeps", "filter": "team = cats"}).json(t, &c)
	if len(c.Sources) != 1 || c.Sources[0].URL != "https://zoo.example/lions" {
		t.Fatalf("filtered context: %+v", c.Sources)
	}
	for _, bad := range []map[string]any{
		{"query": "x", "filter": "team = "},
		{"query": "x", "filter": "created = 2025-01-01"},
		{"query": "x", "maxPerSource": -1},
	} {
		r := ts.req("POST", "/v1/search", bad)
		if r.status != http.StatusBadRequest || !strings.Contains(string(r.body), "filter") && !strings.Contains(string(r.body), "maxPerSource") {
			t.Errorf("%v: %d %s", bad, r.status, r.body)
		}
	}
	if r := ts.req("POST", "/v1/context", map[string]any{"query": "x", "filter": "(a = 1"}); r.status != http.StatusBadRequest || !strings.Contains(string(r.body), "column") {
		t.Errorf("bad context filter: %d %s", r.status, r.body)
	}
	if r := ts.req("POST", "/v1/pages", map[string]any{"url": "https://zoo.example/x", "text": "t", "attrs": map[string]string{"bad key": "v"}}); r.status != http.StatusBadRequest || !strings.Contains(string(r.body), "attrs") {
		t.Errorf("bad attrs: %d %s", r.status, r.body)
	}
}

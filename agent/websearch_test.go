package agent

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// searxngBody is a SearXNG /search?format=json answer as instances send it
// (fields this package ignores included).
const searxngBody = `{
  "query": "reciprocal rank fusion",
  "number_of_results": 0,
  "results": [
    {"url": "https://example.org/rrf", "title": "Reciprocal Rank Fusion <b>explained</b>",
     "content": "RRF &amp; BM25: each list contributes 1/(k+rank).\n\tk is usually 60.",
     "publishedDate": "2024-03-01T00:00:00", "thumbnail": "", "engine": "duckduckgo", "template": "default.html",
     "parsed_url": ["https", "example.org", "/rrf", "", "", ""], "img_src": "", "priority": "",
     "engines": ["duckduckgo", "brave"], "positions": [1, 3], "score": 3.0, "category": "general"},
    {"url": "javascript:alert(1)", "title": "bad", "content": "x", "engine": "evil", "engines": ["evil"], "positions": [2], "score": 2.0, "category": "general"},
    {"url": "https://example.org/rrf", "title": "duplicate", "content": "dup", "engine": "google", "engines": ["google"], "positions": [4], "score": 1.0, "category": "general"},
    {"url": "https://search.example/hybrid", "title": "", "content": "Hybrid search combines BM25 with vectors.", "publishedDate": null,
     "engine": "google", "engines": ["google"], "positions": [5], "score": 0.5, "category": "general"},
    {"url": "https://third.example/", "title": "Third", "content": "Beyond the limit.", "engine": "google", "engines": ["google"], "positions": [6], "score": 0.1, "category": "general"}
  ],
  "answers": [], "corrections": [], "infoboxes": [], "suggestions": ["rrf k=60"],
  "unresponsive_engines": [["wikidata", "timeout"]]
}`

// braveBody is a Brave Search API web search answer.
const braveBody = `{
  "query": {"original": "reciprocal rank fusion", "show_strict_warning": false, "is_navigational": false,
            "spellcheck_off": true, "country": "us", "bad_results": false, "should_fallback": false,
            "postal_code": "", "city": "", "header_country": "", "more_results_available": true, "state": ""},
  "mixed": {"type": "mixed", "main": [{"type": "web", "index": 0, "all": false}], "top": [], "side": []},
  "type": "search",
  "web": {"type": "search", "family_friendly": true, "results": [
    {"title": "Reciprocal Rank Fusion", "url": "https://example.org/rrf", "is_source_local": false, "is_source_both": false,
     "description": "<strong>RRF</strong> combines rankings &quot;without&quot; score calibration.", "page_age": "2024-03-01T10:00:00",
     "profile": {"name": "Example", "url": "https://example.org", "long_name": "example.org", "img": "https://imgs.example/x.png"},
     "language": "en", "family_friendly": true, "type": "search_result", "subtype": "generic",
     "meta_url": {"scheme": "https", "netloc": "example.org", "hostname": "example.org", "favicon": "https://imgs.example/f.png", "path": "› rrf"},
     "age": "March 1, 2024"},
    {"title": "No URL", "url": "", "description": "dropped", "type": "search_result"}
  ]}
}`

func TestSearXNG(t *testing.T) {
	var got *http.Request
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = r
		if r.URL.Path != "/searx/search" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, searxngBody)
	}))
	defer srv.Close()
	safe := 1
	s, err := NewSearXNG(srv.URL+"/searx/", &SearXNGOptions{APIKey: "k1", Language: "en", SafeSearch: &safe, Categories: []string{"general", "it"}})
	if err != nil {
		t.Fatal(err)
	}
	res, err := s.SearchWeb(bg, "  reciprocal\trank fusion ", 2)
	if err != nil {
		t.Fatal(err)
	}
	q := got.URL.Query()
	if q.Get("q") != "reciprocal rank fusion" || q.Get("format") != "json" || q.Get("language") != "en" ||
		q.Get("safesearch") != "1" || q.Get("categories") != "general,it" || got.Header.Get("Authorization") != "Bearer k1" {
		t.Errorf("request %s %v", got.URL, got.Header)
	}
	want := []WebResult{
		{Title: "Reciprocal Rank Fusion explained", URL: "https://example.org/rrf", Snippet: "RRF & BM25: each list contributes 1/(k+rank). k is usually 60.",
			Published: time.Date(2024, 3, 1, 0, 0, 0, 0, time.UTC), Engine: "duckduckgo,brave"},
		{Title: "https://search.example/hybrid", URL: "https://search.example/hybrid", Snippet: "Hybrid search combines BM25 with vectors.", Engine: "google"},
	}
	if len(res) != len(want) {
		t.Fatalf("%d results: %+v", len(res), res)
	}
	for i := range want {
		if res[i] != want[i] {
			t.Errorf("result %d:\n got %+v\nwant %+v", i, res[i], want[i])
		}
	}
}

func TestSearXNGErrors(t *testing.T) {
	status, body := 0, ""
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(status)
		io.WriteString(w, body+" "+r.Header.Get("Authorization"))
	}))
	defer srv.Close()
	s, _ := NewSearXNG(srv.URL, &SearXNGOptions{APIKey: "sekret-key"})
	status, body = 403, "<html><body>Forbidden</body></html>"
	_, err := s.SearchWeb(bg, "q", 0)
	if !errors.Is(err, ErrWebSearch) || !strings.Contains(err.Error(), "settings.yml") || !strings.Contains(err.Error(), "403") {
		t.Errorf("403: %v", err)
	}
	status, body = 500, "boom"
	_, err = s.SearchWeb(bg, "q", 0)
	if !errors.Is(err, ErrWebSearch) || strings.Contains(err.Error(), "sekret-key") || !strings.Contains(err.Error(), "REDACTED") {
		t.Errorf("500: %v (the key must be redacted)", err)
	}
	status, body = 200, "not json"
	if _, err = s.SearchWeb(bg, "q", 0); !errors.Is(err, ErrWebBadPayload) {
		t.Errorf("bad body: %v", err)
	}
	if _, err = s.SearchWeb(bg, " \x00 ", 0); !errors.Is(err, ErrWebSearch) {
		t.Errorf("empty query: %v", err)
	}
	ctx, cancel := context.WithCancel(bg)
	cancel()
	if _, err = s.SearchWeb(ctx, "q", 0); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
	for _, bad := range []string{"", "ftp://x", "localhost:8888", "http://"} {
		if _, err := NewSearXNG(bad, nil); !errors.Is(err, ErrWebConfig) {
			t.Errorf("NewSearXNG(%q): %v", bad, err)
		}
	}
	three := 3
	if _, err := NewSearXNG("http://x", &SearXNGOptions{SafeSearch: &three}); !errors.Is(err, ErrWebConfig) {
		t.Errorf("safesearch 3: %v", err)
	}
}

func TestBrave(t *testing.T) {
	var got *http.Request
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = r
		if r.Header.Get("X-Subscription-Token") != "brave-key" {
			w.WriteHeader(http.StatusUnauthorized)
			io.WriteString(w, `{"type":"ErrorResponse","error":{"code":"SUBSCRIPTION_TOKEN_INVALID","status":401}}`)
			return
		}
		io.WriteString(w, braveBody)
	}))
	defer srv.Close()
	b, err := NewBrave("brave-key", &BraveOptions{BaseURL: srv.URL + "/res/v1/web/search", Country: "de", SearchLang: "en"})
	if err != nil {
		t.Fatal(err)
	}
	res, err := b.SearchWeb(bg, "reciprocal rank fusion", 50)
	if err != nil {
		t.Fatal(err)
	}
	q := got.URL.Query()
	if got.URL.Path != "/res/v1/web/search" || q.Get("q") != "reciprocal rank fusion" || q.Get("count") != "20" || q.Get("country") != "de" || q.Get("search_lang") != "en" {
		t.Errorf("request %s", got.URL)
	}
	want := WebResult{Title: "Reciprocal Rank Fusion", URL: "https://example.org/rrf", Snippet: `RRF combines rankings "without" score calibration.`,
		Published: time.Date(2024, 3, 1, 10, 0, 0, 0, time.UTC), Engine: "brave"}
	if len(res) != 1 || res[0] != want {
		t.Errorf("results %+v", res)
	}
	bad, _ := NewBrave("wrong", &BraveOptions{BaseURL: srv.URL})
	if _, err := bad.SearchWeb(bg, "q", 1); !errors.Is(err, ErrWebSearch) || !strings.Contains(err.Error(), "check the API key") || strings.Contains(err.Error(), "wrong") {
		t.Errorf("401: %v", err)
	}
	if _, err := NewBrave(" ", nil); !errors.Is(err, ErrWebConfig) {
		t.Errorf("no key: %v", err)
	}
}

func TestParseLimitsAndOddPayloads(t *testing.T) {
	long := `{"results":[{"url":"https://a.example","title":"` + strings.Repeat("t", 5000) + `","content":"` + strings.Repeat("word ", 2000) + `"}]}`
	res, err := parseSearXNG([]byte(long), 0)
	if err != nil || len(res) != 1 || len([]rune(res[0].Snippet)) > maxSnippetRunes+1 || len([]rune(res[0].Title)) > maxTitleRunes+1 {
		t.Errorf("caps: %v %d", err, len(res))
	}
	for _, body := range []string{`{}`, `{"results":null}`, `{"web":{}}`, `[]`} {
		if r, err := parseSearXNG([]byte(body), 3); len(r) != 0 && err == nil {
			t.Errorf("%s: %v", body, r)
		}
		if r, err := parseBrave([]byte(body), 3); len(r) != 0 && err == nil {
			t.Errorf("%s: %v", body, r)
		}
	}
	if _, err := parseSearXNG([]byte(`{"results":[{"url":5}]}`), 1); !errors.Is(err, ErrWebBadPayload) {
		t.Errorf("wrong types: %v", err)
	}
}

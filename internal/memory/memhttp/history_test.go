package memhttp

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// Memory over time over HTTP: a restatement is consolidated, a conflicting
// value flagged and then superseded, time ranges and expressions filter
// match and search, citations are recorded and the stats show them.
func TestHistoryEndpoints(t *testing.T) {
	st := newStore(t)
	srv := newServer(t, st, nil)
	u := srv.URL + "/v1/memories"
	const js = "application/json"
	code, body, _ := do(t, "POST", u, js, `{"title":"The gateway listens on port 8080","whenToUse":["gateway|port"],"content":"The gateway service listens on port 8080.","occurredAt":"2025-05-10","discoveredAt":"2025-05-11T00:00:00Z"}`)
	if code != http.StatusCreated {
		t.Fatal(code, body)
	}
	code, body, _ = do(t, "POST", u, js, `{"title":"Gateway port","whenToUse":["gateway|port"],"content":"Port 8080 is where the gateway service listens."}`)
	if code != http.StatusOK || body["consolidated"] == nil || body["memory"].(map[string]any)["slug"] != "the-gateway-listens-on-port-8080" {
		t.Fatalf("restatement: %d %v", code, body)
	}
	code, body, _ = do(t, "POST", u, js, `{"title":"Gateway moved","whenToUse":["gateway|port"],"content":"The gateway service listens on port 9090."}`)
	if code != http.StatusCreated || body["conflicts"] == nil {
		t.Fatalf("conflict: %d %v", code, body)
	}
	code, body, _ = do(t, "POST", u, js, `{"title":"Don't restart the gateway at noon","whenToUse":["gateway|restart"],"content":"Noon is peak traffic."}`)
	if code != http.StatusCreated || body["memory"].(map[string]any)["negative"] != true {
		t.Fatalf("negative: %d %v", code, body)
	}
	code, body, _ = do(t, "POST", u+"/supersede", js, `{"newer":"gateway-moved","older":"the-gateway-listens-on-port-8080","provenance":"checked the config"}`)
	if code != http.StatusOK {
		t.Fatal(code, body)
	}
	// Search: the current port; with a time expression, the old one.
	code, body, _ = do(t, "POST", u+"/search", js, `{"query":"gateway port"}`)
	if code != http.StatusOK || strings.Contains(resultSlugs(body), "the-gateway-listens-on-port-8080") || !strings.Contains(resultSlugs(body), "gateway-moved") {
		t.Fatalf("search: %d %v", code, body)
	}
	code, body, _ = do(t, "POST", u+"/search", js, `{"query":"gateway port","since":"2025-05-01","when":"in May 2025"}`)
	if code != http.StatusOK || resultSlugs(body) != "the-gateway-listens-on-port-8080" || !strings.Contains(str(body), `"supersededBy":"gateway-moved"`) {
		t.Fatalf("search in May: %d %v", code, body)
	}
	code, body, _ = do(t, "POST", u+"/match", js, `{"task":"change the gateway port","includeSuperseded":true,"context":true}`)
	if code != http.StatusOK || !strings.Contains(str(body), "Superseded on") || !strings.Contains(str(body), "[memory:gateway-moved]") {
		t.Fatalf("match: %d %v", code, body)
	}
	// Feedback and stats.
	code, body, _ = do(t, "POST", u+"/feedback", js, `{"answer":"Use 9090 [memory:gateway-moved].","injected":["gateway-moved"]}`)
	if code != http.StatusOK || str(body) != `{"cited":["gateway-moved"],"unknown":[]}` {
		t.Fatalf("feedback: %d %v", code, str(body))
	}
	code, body, _ = do(t, "GET", u+"/stats", "", "")
	if code != http.StatusOK || body["citations"].(float64) != 1 || body["superseded"].(float64) != 1 || body["negative"].(float64) != 1 {
		t.Fatalf("stats: %d %v", code, body)
	}
	code, body, _ = do(t, "GET", u+"?superseded=true", "", "")
	if ms := body["memories"].([]any); code != http.StatusOK || len(ms) != 1 {
		t.Fatalf("list superseded: %d %v", code, body)
	}
	// Bad input.
	for _, c := range []struct{ path, body string }{
		{"/search", `{"when":"whenever"}`},
		{"/search", `{"since":"yesterday-ish"}`},
		{"/search", `{"limit":1000}`},
		{"/match", `{"task":"x","until":"soon"}`},
		{"", `{"title":"T","whenToUse":["x"],"content":"c","occurredAt":"May"}`},
		{"/supersede", `{"newer":"the-gateway-listens-on-port-8080","older":"gateway-moved"}`},
		{"", `{"title":"T","whenToUse":["x"],"content":"c","supersedes":["../x"]}`},
	} {
		if code, body, _ := do(t, "POST", u+c.path, js, c.body); code != http.StatusBadRequest {
			t.Errorf("%s %s: %d %v", c.path, c.body, code, body)
		}
	}
	if code, _, _ := do(t, "POST", u+"/supersede", js, `{"newer":"gateway-moved","older":"nope"}`); code != http.StatusNotFound {
		t.Errorf("supersede unknown: %d", code)
	}
}

// str is a decoded body as compact JSON.
func str(v map[string]any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// resultSlugs lists the slugs of a search answer.
func resultSlugs(body map[string]any) string {
	var out []string
	rs, _ := body["results"].([]any)
	for _, r := range rs {
		out = append(out, r.(map[string]any)["memory"].(map[string]any)["slug"].(string))
	}
	return strings.Join(out, ",")
}

package memhttp

import (
	"net/http"
	"strings"
	"testing"
)

// asOf over HTTP: search and match answer with what held at that time,
// given as an RFC 3339 time, a date or a period; anything else is a 400.
func TestAsOf(t *testing.T) {
	st := newStore(t)
	srv := newServer(t, st, nil)
	u := srv.URL + "/v1/memories"
	const js = "application/json"
	for _, body := range []string{
		`{"title":"Gateway on 8080","whenToUse":["gateway|port"],"content":"The gateway listens on port 8080.","occurredAt":"2025-05-10","discoveredAt":"2025-05-11T00:00:00Z","separate":true}`,
		`{"title":"Gateway on 9090","whenToUse":["gateway|port"],"content":"The gateway listens on port 9090.","occurredAt":"2025-09-01","discoveredAt":"2025-09-02T00:00:00Z","separate":true}`,
	} {
		if code, b, _ := do(t, "POST", u, js, body); code != http.StatusCreated {
			t.Fatal(code, b)
		}
	}
	if code, b, _ := do(t, "POST", u+"/supersede", js, `{"newer":"gateway-on-9090","older":"gateway-on-8080"}`); code != http.StatusOK {
		t.Fatal(code, b)
	}
	for _, c := range []struct{ req, want string }{
		{`{"query":"gateway port"}`, "gateway-on-9090"},
		{`{"query":"gateway port","asOf":"2025-06-01"}`, "gateway-on-8080"},
		{`{"query":"gateway port","asOf":"2025-08-31T23:59:59Z"}`, "gateway-on-8080"},
		{`{"query":"gateway port","asOf":"2025-09-01T00:00:00Z"}`, "gateway-on-9090"},
		{`{"query":"gateway port","asOf":"in July 2025"}`, "gateway-on-8080"},
		{`{"query":"gateway port","asOf":"2025-01-01"}`, ""},
	} {
		code, body, _ := do(t, "POST", u+"/search", js, c.req)
		if code != http.StatusOK || resultSlugs(body) != c.want {
			t.Errorf("search %s: %d %s, want %q", c.req, code, str(body), c.want)
		}
	}
	code, body, _ := do(t, "POST", u+"/match", js, `{"task":"change the gateway port","asOf":"2025-06-01","context":true}`)
	// The old fact, with its text; the context says it was superseded since.
	ms, _ := body["matches"].([]any)
	if code != http.StatusOK || len(ms) != 1 || ms[0].(map[string]any)["memory"].(map[string]any)["slug"] != "gateway-on-8080" ||
		!strings.Contains(str(body), "The gateway listens on port 8080.") || strings.Contains(str(body), "port 9090") {
		t.Fatalf("match as of June: %d %s", code, str(body))
	}
	for _, bad := range []string{`{"query":"x","asOf":"someday"}`, `{"query":"x","asOf":"since May"}`} {
		code, body, _ := do(t, "POST", u+"/search", js, bad)
		if code != http.StatusBadRequest || !strings.Contains(str(body), "asOf") {
			t.Errorf("%s: %d %s", bad, code, str(body))
		}
	}
	if code, body, _ := do(t, "POST", u+"/match", js, `{"task":"x","asOf":"soon"}`); code != http.StatusBadRequest {
		t.Errorf("match with a bad asOf: %d %s", code, str(body))
	}
}

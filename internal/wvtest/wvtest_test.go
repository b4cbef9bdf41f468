package wvtest

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
)

// recTB records what a helper reports and runs its cleanups on demand.
type recTB struct {
	testing.TB
	errs     []string
	cleanups []func()
}

func (r *recTB) Helper()          {}
func (r *recTB) Cleanup(f func()) { r.cleanups = append(r.cleanups, f) }
func (r *recTB) Errorf(format string, args ...any) {
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}
func (r *recTB) Fatalf(format string, args ...any) { r.TB.Fatalf(format, args...) }
func (r *recTB) end() {
	for i := len(r.cleanups) - 1; i >= 0; i-- {
		r.cleanups[i]()
	}
}

// TestFrontRefusesGraphQL: the proxy forwards the REST API, answers 410 to
// GraphQL without forwarding it, and fails the test that sent it.
func TestFrontRefusesGraphQL(t *testing.T) {
	var seen []string
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen = append(seen, r.Method+" "+r.URL.RequestURI())
		fmt.Fprint(w, `{"version":"1.35.2"}`)
	}))
	defer up.Close()
	rt := &recTB{TB: t}
	front := Front(rt, up.URL, "127.0.0.1:5")
	u, err := url.Parse(front)
	if err != nil || u.Query().Get("grpc") != "127.0.0.1:5" {
		t.Fatalf("Front URL %q", front)
	}
	base := u.Scheme + "://" + u.Host
	get := func(method, path string) (int, string) {
		req, _ := http.NewRequest(method, base+path, strings.NewReader(`{"query":"{Get{X{y}}}"}`))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := get(http.MethodGet, "/v1/meta?x=1"); code != 200 || !strings.Contains(body, "1.35.2") {
		t.Fatalf("REST through the proxy: %d %s", code, body)
	}
	if len(rt.errs) != 0 {
		t.Fatalf("errors before any GraphQL: %v", rt.errs)
	}
	for _, p := range []string{"/v1/graphql", "/v1/graphql/batch", "/v1/GraphQL"} {
		if code, body := get(http.MethodPost, p); code != http.StatusGone || !strings.Contains(body, "out of reach") {
			t.Fatalf("%s: %d %s", p, code, body)
		}
	}
	if len(seen) != 1 || seen[0] != "GET /v1/meta?x=1" {
		t.Fatalf("the server saw %v", seen)
	}
	rt.end()
	if len(rt.errs) != 1 || !strings.Contains(rt.errs[0], "3 request(s) to the GraphQL API, the first POST /v1/graphql") {
		t.Fatalf("reported %v", rt.errs)
	}
}

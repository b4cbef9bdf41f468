package memhttp

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ragmem/ragmem/internal/memory"
)

// FuzzHandler: any request gets a JSON answer with a sensible status, and
// the handler never panics.
func FuzzHandler(f *testing.F) {
	f.Add("POST", "/v1/memories", "application/json", `{"title":"t","content":"c","whenToUse":["a"]}`)
	f.Add("POST", "/v1/memories/match", "application/json", `{"task":"t","maxMemories":-3,"minImportance":"huge"}`)
	f.Add("GET", "/v1/memories/..", "", "")
	f.Add("POST", "/v1/memories", "application/json", `{"title":"\u0000","content":"\xff","whenToUse":["(","|"]}`)
	f.Add("PUT", "/v1/memories/x/y", "text/plain", "x")
	f.Add("POST", "/v1/memories/search", "application/json", `{"query":"q","when":"between May and","limit":-1}`)
	f.Add("POST", "/v1/memories/supersede", "application/json", `{"newer":"a","older":"a"}`)
	f.Add("POST", "/v1/memories/feedback", "application/json", `{"answer":"[memory:../x] [memory:t]","cited":["\u0000"]}`)
	f.Add("GET", "/v1/memories/stats", "", "")
	f.Add("POST", "/v1/memories", "application/json", `{"title":"Never t","content":"c","whenToUse":["a"],"occurredAt":"2026-99-01","supersedes":["t"]}`)
	st, err := memory.Open(bg, filepath.Join(f.TempDir(), "m"), &memory.Options{Logger: quiet()})
	if err != nil {
		f.Fatal(err)
	}
	h := New(func(*http.Request) (*memory.Store, error) { return st, nil }, &Options{Logger: quiet(), MaxBodyBytes: 4096})
	f.Fuzz(func(t *testing.T, method, path, ctype, body string) {
		if !strings.HasPrefix(path, "/") || strings.ContainsAny(path, " \t\r\n?#%") || method == "" || strings.ContainsAny(method, " \t\r\n/") {
			return
		}
		req, err := http.NewRequest(method, "http://x"+path, strings.NewReader(body))
		if err != nil {
			return
		}
		if ctype != "" {
			req.Header.Set("Content-Type", ctype)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code < 200 || rec.Code >= 600 || rec.Code == 500 {
			t.Fatalf("%s %s: status %d: %s", method, path, rec.Code, rec.Body)
		}
		if method != "HEAD" && !json.Valid(rec.Body.Bytes()) {
			t.Fatalf("%s %s: body is not JSON: %q", method, path, rec.Body)
		}
	})
}

//go:build unix

package memhttp

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestAnswersNameNoServerPath: no answer of the memory API (list, add,
// show, match, errors) contains the server's memory directory, and a
// planted link is refused with 409, its target untouched.
func TestAnswersNameNoServerPath(t *testing.T) {
	st := newStore(t)
	srv := newServer(t, st, nil)
	dir, _ := filepath.Abs(st.Dir())
	raw := func(method, path, body string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(method, srv.URL+path, strings.NewReader(body))
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if strings.Contains(string(b), dir) || strings.Contains(string(b), filepath.Dir(dir)) {
			t.Fatalf("%s %s answered with a server path: %s", method, path, b)
		}
		return resp.StatusCode, string(b)
	}
	add := `{"title":"Flaky test fix","content":"Retry the network step.","whenToUse":["when a test is flaky"]}`
	if code, body := raw("POST", "/v1/memories", add); code != http.StatusCreated || !strings.Contains(body, `"path":"flaky-test-fix.md"`) {
		t.Fatalf("add: %d %s", code, body)
	}
	for _, p := range []string{"/v1/memories", "/v1/memories/flaky-test-fix", "/v1/memories/nothing-here"} {
		raw("GET", p, "")
	}
	raw("POST", "/v1/memories/match", `{"task":"the test is flaky again","context":true}`)
	raw("POST", "/v1/memories/refresh", "")

	secret := filepath.Join(t.TempDir(), "key")
	os.WriteFile(secret, []byte("secret"), 0o600)
	if err := os.Symlink(secret, filepath.Join(dir, "planted.md")); err != nil {
		t.Fatal(err)
	}
	code, body := raw("POST", "/v1/memories", `{"title":"Planted","content":"x","whenToUse":["when planted"]}`)
	if code != http.StatusConflict || !strings.Contains(body, `"code":"conflict"`) {
		t.Fatalf("planted link: %d %s", code, body)
	}
	raw("GET", "/v1/memories/planted", "")
	if b, _ := os.ReadFile(secret); string(b) != "secret" {
		t.Fatal("the link's target changed")
	}
}

package server_test

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/ragmem/ragmem/internal/server"
)

// noRedirect is a client that shows redirects instead of following them.
var noRedirect = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

func sessionCookie(t *testing.T, res *http.Response) *http.Cookie {
	t.Helper()
	for _, c := range res.Cookies() {
		if c.Name == server.SessionCookie {
			return c
		}
	}
	return nil
}

// uiGet sends a GET as the web UI does: the cookie and the UI header.
func uiGet(t *testing.T, ts *testServer, path string, c *http.Cookie, header bool) int {
	t.Helper()
	req, _ := http.NewRequest("GET", ts.url+path, nil)
	if c != nil {
		req.AddCookie(c)
	}
	if header {
		req.Header.Set(server.UIHeader, "1")
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	return res.StatusCode
}

// TestLoginLinkWorksOnce: the printed link holds a one-time code, never the
// token; opening it sets an HttpOnly, SameSite=Strict session cookie and
// redirects to the UI; the cookie works only with the UI header; the link
// does not work twice; rotating the token ends the session.
func TestLoginLinkWorksOnce(t *testing.T) {
	ts := newTestServer(t, nil)
	link, err := ts.srv.LoginURL(ts.url, 0)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(link, ts.token) || !strings.HasPrefix(link, ts.url+"/ui/login?code=") {
		t.Fatalf("link %q", link)
	}
	res, err := noRedirect.Get(link)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	c := sessionCookie(t, res)
	if res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != "/" || c == nil {
		t.Fatalf("login: %d %q %v", res.StatusCode, res.Header.Get("Location"), res.Cookies())
	}
	if !c.HttpOnly || c.SameSite != http.SameSiteStrictMode || c.Path != "/" || strings.Contains(c.Value, ts.token) {
		t.Fatalf("cookie %+v", c)
	}
	if code := uiGet(t, ts, "/v1/stats", c, true); code != http.StatusOK {
		t.Fatalf("with the session: %d", code)
	}
	if code := uiGet(t, ts, "/v1/stats", c, false); code != http.StatusUnauthorized {
		t.Fatalf("the cookie without the UI header (a cross-site form could send that): %d", code)
	}
	// Once only.
	res, err = noRedirect.Get(link)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != "/?login=expired" || sessionCookie(t, res) != nil {
		t.Fatalf("second use: %d %q", res.StatusCode, res.Header.Get("Location"))
	}
	// An expired link does not work either.
	late, err := ts.srv.LoginURL(ts.url, time.Nanosecond)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Millisecond)
	if res, _ := noRedirect.Get(late); sessionCookie(t, res) != nil {
		t.Fatal("an expired link logged in")
	}
	// Rotating the token ends the session.
	if _, err := server.RotateToken(ts.dir, ""); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1100 * time.Millisecond) // the token file is re-read at most once a second
	if code := uiGet(t, ts, "/v1/stats", c, true); code != http.StatusUnauthorized {
		t.Fatalf("after rotation: %d", code)
	}
}

// TestSessionFromPastedToken: the UI's form exchanges a pasted token for a
// session; a wrong token gets 401; signing out ends the session.
func TestSessionFromPastedToken(t *testing.T) {
	ts := newTestServer(t, nil)
	jar, _ := cookiejar.New(nil)
	client := &http.Client{Jar: jar}
	post := func(body string, ui bool) *http.Response {
		req, _ := http.NewRequest("POST", ts.url+"/ui/session", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		if ui {
			req.Header.Set(server.UIHeader, "1")
		}
		res, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res
	}
	if res := post(`{"token":"rgm_wrong"}`, true); res.StatusCode != http.StatusUnauthorized {
		t.Fatalf("wrong token: %d", res.StatusCode)
	}
	if res := post(`{"token":"`+ts.token+`"}`, false); res.StatusCode != http.StatusForbidden {
		t.Fatalf("without the UI header: %d", res.StatusCode)
	}
	if res := post(`{"token":"`+ts.token+`"}`, true); res.StatusCode != http.StatusOK {
		t.Fatalf("right token: %d", res.StatusCode)
	}
	req, _ := http.NewRequest("GET", ts.url+"/v1/stats", nil)
	req.Header.Set(server.UIHeader, "1")
	if res, err := client.Do(req); err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("stats with the session: %v %v", res, err)
	}
	req, _ = http.NewRequest("DELETE", ts.url+"/ui/session", nil)
	req.Header.Set(server.UIHeader, "1")
	if res, err := client.Do(req); err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("sign out: %v %v", res, err)
	}
	req, _ = http.NewRequest("GET", ts.url+"/v1/stats", nil)
	req.Header.Set(server.UIHeader, "1")
	if res, err := client.Do(req); err != nil || res.StatusCode != http.StatusUnauthorized {
		t.Fatalf("stats after signing out: %v %v", res, err)
	}
}

// TestFailedLoginsStayLimited: --rate-limit 0 lifts the limit of clients
// with a token, never the limit on guessing one.
func TestFailedLoginsStayLimited(t *testing.T) {
	ts := newTestServer(t, &server.Options{RateLimit: -1})
	codes := map[int]int{}
	for i := 0; i < 30; i++ {
		codes[ts.req("GET", "/v1/stats", nil, "Authorization", "Bearer rgm_guess").status]++
	}
	if codes[http.StatusTooManyRequests] == 0 || codes[http.StatusUnauthorized] > 12 {
		t.Fatalf("guessing tokens with the rate limit off: %v", codes)
	}
	for i := 0; i < 100; i++ {
		ts.must(http.StatusOK, "GET", "/v1/stats", nil) // the real token is not limited
	}
}

// TestStrictJSON: invalid UTF-8 is 400 (never replaced), a missing or wrong
// Content-Type 415.
func TestStrictJSON(t *testing.T) {
	ts := newTestServer(t, nil)
	send := func(body []byte, ct string) response {
		req, _ := http.NewRequest("POST", ts.url+"/v1/search", bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+ts.token)
		if ct != "" {
			req.Header.Set("Content-Type", ct)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		var b bytes.Buffer
		b.ReadFrom(res.Body)
		return response{status: res.StatusCode, body: b.Bytes()}
	}
	if r := send([]byte("{\"query\":\"caf\xe9\"}"), "application/json"); r.status != http.StatusBadRequest || r.errCode() != server.CodeInvalidJSON || !strings.Contains(string(r.body), "UTF-8") {
		t.Fatalf("invalid UTF-8: %d %s", r.status, r.body)
	}
	if r := send([]byte(`{"query":"herons"}`), ""); r.status != http.StatusUnsupportedMediaType {
		t.Fatalf("no Content-Type: %d %s", r.status, r.body)
	}
	if r := send([]byte(`{"query":"herons"}`), "text/plain"); r.status != http.StatusUnsupportedMediaType {
		t.Fatalf("text/plain: %d %s", r.status, r.body)
	}
}

// TestLooseTokenFileIsTightened: a token file someone made readable by
// others is set back to 0600 and the server says so.
func TestLooseTokenFileIsTightened(t *testing.T) {
	dir := t.TempDir()
	if _, _, err := server.EnsureToken(dir); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(server.TokenPath(dir), 0o644); err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	srv, err := server.New(context.Background(), dir, &server.Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	fi, _ := os.Stat(server.TokenPath(dir))
	if fi.Mode().Perm() != 0o600 || !strings.Contains(logs.String(), "private (mode 0644 to 0600)") || !strings.Contains(logs.String(), "ragmem token rotate") || !strings.Contains(logs.String(), "0644") {
		t.Fatalf("mode %v; log:\n%s", fi.Mode().Perm(), logs.String())
	}
}

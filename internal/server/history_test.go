package server_test

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
)

// TestTokenNeverInBrowser signs in to the web UI in headless Chromium both
// ways (the printed one-time link, and the token pasted in the form), uses
// it, signs out, and closes the browser. Then it reads every file the
// browser left in its profile (the history database, the session files,
// preferences, caches): none holds the token. As a control, a URL visited
// with a marker in it must be found there, so the search would have found
// a URL with the token.
func TestTokenNeverInBrowser(t *testing.T) {
	ts := newTestServer(t, nil)
	ts.indexPage(map[string]any{"url": "https://wildlife.example/kiwi", "html": `<article><h1>Kiwi</h1><p>The kiwi is a flightless bird of New Zealand that sniffs for worms with nostrils at the tip of its long bill.</p></article>`})
	profile := t.TempDir()
	ctx := newBrowserIn(t, profile)
	b := browser{t: t, ctx: ctx}
	var m [8]byte
	rand.Read(m[:])
	marker := "canary" + hex.EncodeToString(m[:])

	b.do("visit a marked URL (the control)",
		chromedp.Navigate(ts.url+"/?mark="+marker),
		chromedp.WaitVisible(chromedp.ID("token-input")), // not signed in yet
	)
	link := b.signIn(ts)
	b.search("flightless bird nostrils")
	if n := eval[int](b, `document.querySelectorAll('#results li.result').length`); n != 1 {
		t.Fatalf("search after signing in with the link: %d results", n)
	}
	// The link does not work twice.
	b.do("sign out, then the link again",
		chromedp.Click(chromedp.ID("change-token")),
		chromedp.WaitVisible(chromedp.ID("token-input")),
		chromedp.Navigate(link),
		chromedp.WaitVisible(chromedp.ID("token-input")),
		until(`document.getElementById('token-error').textContent.includes('expired or was used')`),
	)
	// The form: the token is posted, never put in a URL.
	b.do("sign in with the token",
		chromedp.SendKeys(chromedp.ID("token-input"), ts.token),
		chromedp.Click(chromedp.CSS(`#token-form button[type="submit"]`)),
		chromedp.WaitVisible(chromedp.ID("search-input")),
		until(`document.getElementById('status').textContent.includes('chunk')`),
	)
	b.search("kiwi worms")
	for _, expr := range []string{"location.href", "JSON.stringify(localStorage)", "JSON.stringify(sessionStorage)", "document.cookie"} {
		if v := eval[string](b, expr); strings.Contains(v, ts.token) {
			t.Fatalf("%s holds the token: %q", expr, v)
		}
	}
	hist, err := chromedp.Call(ctx, page.GetNavigationHistory, cdp.Empty{})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range hist.Entries {
		if strings.Contains(e.URL, ts.token) {
			t.Fatalf("session history entry with the token: %q", e.URL)
		}
	}
	// Close the browser cleanly, so that it writes its history out.
	if err := chromedp.Cancel(ctx); err != nil {
		t.Fatalf("close Chromium: %v", err)
	}
	time.Sleep(200 * time.Millisecond)
	var files, markerFound int
	err = filepath.WalkDir(profile, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return nil
		}
		files++
		if bytes.Contains(data, []byte(ts.token)) {
			t.Errorf("the browser kept the token in %s", strings.TrimPrefix(p, profile))
		}
		if bytes.Contains(data, []byte(marker)) {
			markerFound++
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if markerFound == 0 {
		t.Fatalf("the control URL was not found in any of the %d profile files: the browser's history was not written", files)
	}
	t.Logf("%d profile files read; the control URL is in %d of them, the token in none", files, markerFound)
}

package server_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/target"
	"github.com/chromedp/chromedp"

	"github.com/ragmem/ragmem/internal/server"
	"github.com/ragmem/ragmem/rag"
)

// extensionID is the id Chromium gives an unpacked extension: the first
// 128 bits of the SHA-256 of its absolute path, in hex written with a–p.
func extensionID(path string) string {
	sum := sha256.Sum256([]byte(path))
	b := []byte(hex.EncodeToString(sum[:16]))
	for i, c := range b {
		if c <= '9' {
			b[i] = 'a' + (c - '0')
		} else {
			b[i] = 'a' + 10 + (c - 'a')
		}
	}
	return string(b)
}

// waitJS evaluates cond in the tab every 100 ms until it is true. (Poll
// waits for animation frames, which a background tab does not get.)
func waitJS(t *testing.T, ctx context.Context, cond string, what string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool](cond))
		if err == nil && ok {
			return
		}
		if time.Now().After(deadline) {
			st, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body.textContent`))
			t.Fatalf("%s: not reached (%v); page text:\n%s", what, err, st)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestReferenceExtensionInChromium loads examples/extension into Chromium
// and uses it as a person would: save the settings (which tests the
// connection from the extension's origin through CORS), remember the page in
// the active tab, and search for it from the popup.
func TestReferenceExtensionInChromium(t *testing.T) {
	extDir, err := filepath.Abs(filepath.Join(moduleRoot(t), "examples", "extension"))
	if err != nil {
		t.Fatal(err)
	}
	if real, err := filepath.EvalSymlinks(extDir); err == nil {
		extDir = real
	}
	id := extensionID(extDir)
	origin := "chrome-extension://" + id
	ts := newTestServer(t, &server.Options{AllowOrigins: []string{origin}})

	article := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write([]byte(`<!doctype html><html><head><title>Narwhal tusks | Sea notes</title></head><body>
<nav>Home · About</nav><main><article><h1>Narwhal tusks</h1>
<p>The narwhal's tusk is a canine tooth that grows through the upper lip in a left-handed spiral and can reach three metres.
Millions of nerve endings make it a sensory organ that can detect changes in water temperature and salinity.</p>
</article></main><footer>© Sea notes</footer></body></html>`))
	}))
	defer article.Close()
	pageURL := article.URL + "/narwhal"

	ctx := newBrowser(t,
		chromedp.Flag("disable-extensions", false),
		chromedp.Flag("load-extension", extDir),
		chromedp.Flag("disable-extensions-except", extDir),
	)
	step := func(what string, steps ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		if err := chromedp.Do(sctx, steps...); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}

	// Settings: server, token; saving tests the connection.
	step("options page",
		chromedp.Navigate(origin+"/options.html"),
		chromedp.WaitVisible(chromedp.ID("server")),
		until(`document.body.dataset.ready === 'true'`),
		js(`document.getElementById('server').value = `+jsString(ts.url)),
		js(`document.getElementById('token').value = `+jsString(ts.token)),
		js(`document.getElementById('form').requestSubmit()`),
	)
	waitJS(t, ctx, `document.getElementById('result').textContent.startsWith('Connected')`, "options: connection test")
	if cmd, _ := chromedp.Run(ctx, chromedp.Text(chromedp.ID("command"))); cmd != "ragmem serve --allow-origin "+origin {
		t.Errorf("options show %q", cmd)
	}

	// The popup in this tab; the page to remember in a new, active tab of
	// the same window.
	step("popup", chromedp.Navigate(origin+"/popup.html"), until(`document.body.dataset.ready === 'true'`))
	pageCtx, cancelPage := chromedp.NewContext(ctx, chromedp.WithNewWindow(false))
	defer cancelPage()
	if err := chromedp.Do(pageCtx, chromedp.Navigate(pageURL), chromedp.WaitVisible(chromedp.CSS("article"))); err != nil {
		t.Fatalf("open the page: %v", err)
	}
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.getElementById('remember').click(), true`)); err != nil {
		t.Fatal(err)
	}
	waitJS(t, ctx, `document.getElementById('remember-status').textContent.startsWith('Remembered')`, "remember this page")

	var page rag.PageJSON
	ts.must(http.StatusOK, "GET", "/v1/pages?url="+pageURL, nil).json(t, &page)
	if page.Title != "Narwhal tusks" || !strings.Contains(page.Chunks[0].Content, "left-handed spiral") {
		t.Errorf("remembered page: %+v", page)
	}
	for _, c := range page.Chunks {
		if strings.Contains(c.Content, "Sea notes") || strings.Contains(c.Content, "About") {
			t.Errorf("page furniture was remembered: %q", c.Content)
		}
	}

	// Search from the popup.
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.getElementById('query').value = 'narwhal tusk nerve endings', document.getElementById('search-form').requestSubmit(), true`)); err != nil {
		t.Fatal(err)
	}
	waitJS(t, ctx, `[...document.querySelectorAll('#results .result a')].some(a => a.textContent === 'Narwhal tusks' && a.href === `+jsString(pageURL)+`)`, "popup search")

	// A screenshot of the popup, brought to the front.
	popupTarget := chromedp.FromContext(ctx).Target.TargetID
	if err := chromedp.Do(ctx, chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := chromedp.CallBrowser(ctx, target.ActivateTarget, target.ActivateTargetParams{TargetID: popupTarget})
		return err
	})); err != nil {
		t.Logf("activate popup tab: %v", err)
	}
	if shot, err := chromedp.Run(ctx, chromedp.FullScreenshot(100)); err == nil {
		p := filepath.Join(artifactDir(t), "extension-popup.png")
		if err := os.WriteFile(p, shot, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("screenshot: %s", p)
	} else {
		t.Errorf("screenshot: %v", err)
	}
}

// jsString quotes s as a JavaScript string literal.
func jsString(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `'`, `\'`, "\n", `\n`, "\r", `\r`, "<", `\x3c`)
	return "'" + r.Replace(s) + "'"
}

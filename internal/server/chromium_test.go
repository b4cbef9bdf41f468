package server_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// chromiumPath finds a Chromium to drive: $RAGMEM_CHROMIUM, else chromium
// (Debian's package, installed by .ci/run) or Chrome on the PATH.
func chromiumPath() string {
	if p := os.Getenv("RAGMEM_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// moduleRoot is the directory of go.mod above the working directory.
func moduleRoot(t *testing.T) string {
	t.Helper()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for root := wd; ; {
		if _, err := os.Stat(filepath.Join(root, "go.mod")); err == nil {
			return root
		}
		parent := filepath.Dir(root)
		if parent == root {
			t.Fatalf("no go.mod above %s", wd)
		}
		root = parent
	}
}

// artifactDir is $RAGMEM_ARTIFACTS, else artifacts/ at the module root
// (ignored by git).
func artifactDir(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("RAGMEM_ARTIFACTS")
	if dir == "" {
		dir = filepath.Join(moduleRoot(t), "artifacts")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// newBrowser starts headless Chromium with the flags this environment
// needs. In CI (CI set) a missing Chromium fails the test: a skipped
// browser test must never pass for a green run.
func newBrowser(t *testing.T, extra ...chromedp.ExecAllocatorOption) context.Context {
	t.Helper()
	return newBrowserIn(t, t.TempDir(), extra...)
}

// newBrowserIn is newBrowser with its profile in dataDir.
func newBrowserIn(t *testing.T, dataDir string, extra ...chromedp.ExecAllocatorOption) context.Context {
	t.Helper()
	path := chromiumPath()
	if path == "" {
		if os.Getenv("CI") != "" {
			t.Fatal("Chromium not found (set RAGMEM_CHROMIUM or install Debian's chromium, as .ci/run does)")
		}
		t.Skip("Chromium not found; install Debian's chromium (apt-get install chromium) to run the browser test")
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		chromedp.Flag("headless", true),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-sync", true),
		chromedp.NoFirstRun,
		chromedp.UserDataDir(dataDir),
		chromedp.WindowSize(1200, 900),
	)
	opts = append(opts, extra...)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelCtx := chromedp.NewContext(actx, chromedp.WithLogf(t.Logf))
	ctx, cancelTimeout := context.WithTimeout(ctx, 2*time.Minute)
	t.Cleanup(func() {
		cancelTimeout()
		cancelCtx()
		cancelAlloc()
	})
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("start Chromium %s: %v", path, err)
	}
	return ctx
}

// browser wraps a chromedp context with the few steps the test needs.
type browser struct {
	t   *testing.T
	ctx context.Context
}

func (b browser) do(what string, steps ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		var html string
		html, _ = chromedp.Run(b.ctx, chromedp.OuterHTML(chromedp.CSS("main")))
		b.t.Fatalf("%s: %v\npage:\n%s", what, err, html)
	}
}

func (b browser) text(sel string) string {
	b.t.Helper()
	s, err := chromedp.Run(b.ctx, chromedp.Text(chromedp.CSS(sel)))
	if err != nil {
		b.t.Fatalf("text of %s: %v", sel, err)
	}
	return s
}

func eval[T any](b browser, expr string) T {
	b.t.Helper()
	v, err := chromedp.Run(b.ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		b.t.Fatalf("%s: %v", expr, err)
	}
	return v
}

// until waits for a JavaScript condition.
func until(expr string) chromedp.Action[chromedp.Void] {
	return func(ctx context.Context, t *chromedp.Target) (chromedp.Void, error) {
		_, err := chromedp.Poll[bool](expr, chromedp.WithPollingTimeout(20*time.Second))(ctx, t)
		return chromedp.Void{}, err
	}
}

// screenshot saves the page as a PNG in the artifact directory.
func (b browser) screenshot(name string) {
	b.t.Helper()
	shot, err := chromedp.Run(b.ctx, chromedp.FullScreenshot(100))
	if err != nil {
		b.t.Fatalf("screenshot: %v", err)
	}
	p := filepath.Join(artifactDir(b.t), name)
	if err := os.WriteFile(p, shot, 0o644); err != nil {
		b.t.Fatal(err)
	}
	b.t.Logf("screenshot: %s (%d bytes)", p, len(shot))
}

// js runs a statement in the page.
func js(stmt string) chromedp.Action[chromedp.Void] {
	return func(ctx context.Context, t *chromedp.Target) (chromedp.Void, error) {
		_, err := chromedp.Evaluate[bool]("("+stmt+", true)")(ctx, t)
		return chromedp.Void{}, err
	}
}

// search types a query into the UI and waits for its answer.
func (b browser) search(q string) {
	b.t.Helper()
	b.do("search "+q,
		chromedp.Click(chromedp.CSS(`button[data-tab="search"]`)),
		js(`document.getElementById('search-summary').textContent = ''`),
		js(`document.getElementById('search-input').value = ''`),
		chromedp.SendKeys(chromedp.ID("search-input"), q),
		chromedp.Click(chromedp.ID("search-button")),
		until(`document.getElementById('search-summary').textContent !== ''`),
	)
}

// signIn opens the link the server prints (Server.LoginURL), which signs
// the browser in once, and waits until the UI's status line names its
// chunks. It returns the link, used up.
func (b browser) signIn(ts *testServer) string {
	b.t.Helper()
	link, err := ts.srv.LoginURL(ts.url, 0)
	if err != nil {
		b.t.Fatal(err)
	}
	b.do("sign in with the printed link",
		chromedp.Navigate(link),
		chromedp.WaitVisible(chromedp.ID("search-input")),
		until(`document.getElementById('status').textContent.includes('chunk')`),
	)
	return link
}

// TestWebUIInChromium drives the web UI end to end in headless Chromium:
// a page indexed through the API is searched in the UI, shown with its
// source, score and age, deleted in the UI and gone from the memory; a
// preference is added and edited; stored markup is shown as text. A
// screenshot is kept in the artifact directory.
func TestWebUIInChromium(t *testing.T) {
	ts := newTestServer(t, nil)
	const url = "https://wildlife.example/quokka"
	ts.indexPage(map[string]any{"url": url, "html": `<html><head><title>Quokkas</title></head><body><article>
		<h1>The quokka</h1><p>The quokka is a small marsupial from Rottnest Island that looks as if it were always smiling.
		Quokkas are mostly nocturnal and eat grasses, leaves and stems.</p></article></body></html>`})
	const hostile = "https://hostile.example/"
	ts.indexPage(map[string]any{"url": hostile, "title": `<img src=x onerror="document.title='pwned'"> Wombat`,
		"text": `Wombat facts. <script>document.title='pwned'</script> Wombats produce cube-shaped droppings.`})

	b := browser{t: t, ctx: newBrowser(t)}
	var mu sync.Mutex
	var jsErrors []string
	if err := chromedp.Listen(b.ctx, func(ev any) {
		if e, ok := ev.(*runtime.EventExceptionThrown); ok {
			mu.Lock()
			jsErrors = append(jsErrors, e.ExceptionDetails.Text)
			mu.Unlock()
		}
	}); err != nil {
		t.Fatal(err)
	}

	// The printed link logs the browser in once (TestTokenNeverInBrowser
	// checks what the browser keeps).
	b.signIn(ts)
	if st := b.text("#status"); !strings.Contains(st, "2 pages") {
		t.Errorf("status %q", st)
	}
	if u := eval[string](b, `location.href`); u != ts.url+"/" {
		t.Errorf("address bar after the login link: %q", u)
	}

	b.search("smiling marsupial quokka")
	first := `#results li.result:first-child`
	got, err := chromedp.Run(b.ctx, chromedp.AttributeValue(chromedp.CSS(first), "data-url"))
	if err != nil || got.Value != url {
		t.Fatalf("first result %q (%v); results: %s", got.Value, err, b.text("#results"))
	}
	if title, score, age := b.text(first+" .title"), b.text(first+" .score"), b.text(first+" .age"); title != "Quokkas" || score == "" || age != "just now" {
		t.Errorf("first result: title %q score %q age %q", title, score, age)
	}
	if ex := b.text(first + " .explain"); !strings.Contains(ex, "relative(alpha=") {
		t.Errorf("explanation %q", ex)
	}
	b.screenshot("webui-search.png")

	// Stored markup is shown as text and never runs.
	b.search("wombat droppings")
	hostileTitle := b.text(`#results li.result[data-url="` + hostile + `"] .title`)
	if dt := eval[string](b, `document.title`); dt == "pwned" || !strings.Contains(hostileTitle, "<img src=x") {
		t.Errorf("markup from the memory ran or vanished: title %q, shown %q", dt, hostileTitle)
	}

	// Delete the page in the UI: Delete, then Confirm delete.
	row := `#sources-body tr[data-url="` + url + `"]`
	b.do("delete in the UI",
		chromedp.Click(chromedp.CSS(`button[data-tab="sources"]`)),
		chromedp.WaitVisible(chromedp.CSS(row)),
	)
	b.screenshot("webui-sources.png")
	b.do("delete in the UI",
		chromedp.Click(chromedp.CSS(row+` button.delete`)),
		chromedp.WaitVisible(chromedp.CSS(row+` button.delete.confirm`)),
		chromedp.Click(chromedp.CSS(row+` button.delete`)),
		until(fmt.Sprintf(`!document.querySelector('%s')`, row)),
		until(`document.getElementById('status').textContent.includes('1 page ·')`),
	)
	if n := b.text("#sources-notice"); n != "Deleted "+url+" (1 chunk)." {
		t.Errorf("notice after delete: %q", n)
	}
	ts.must(http.StatusNotFound, "GET", "/v1/pages?url="+url, nil)
	if hasURL(ts.search("smiling marsupial quokka"), url) {
		t.Error("the page deleted in the UI is still found through the API")
	}
	b.search("smiling marsupial quokka")
	if n := eval[int](b, `document.querySelectorAll('#results li.result[data-url="`+url+`"]').length`); n != 0 {
		t.Errorf("the deleted page is still shown: %s", b.text("#results"))
	}

	// Preferences: add one, then edit it.
	b.do("preferences",
		chromedp.Click(chromedp.CSS(`button[data-tab="preferences"]`)),
		chromedp.WaitVisible(chromedp.ID("pref-content")),
		chromedp.SetValue(chromedp.ID("pref-type"), "style"),
		chromedp.SendKeys(chromedp.ID("pref-content"), "Prefers answers with tables"),
		chromedp.Click(chromedp.CSS(`#pref-form button[type="submit"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#prefs-list li[data-id] .pref-content`)),
		chromedp.Click(chromedp.CSS(`#prefs-list li[data-id] button:nth-of-type(1)`)),
		chromedp.WaitVisible(chromedp.CSS(`#prefs-list input.pref-edit`)),
		chromedp.SetValue(chromedp.CSS(`#prefs-list input.pref-edit`), "Prefers answers with short tables"),
		chromedp.Click(chromedp.CSS(`#prefs-list li[data-id] button:nth-of-type(1)`)),
		until(`[...document.querySelectorAll('#prefs-list .pref-content')].map(e => e.textContent).join('|') === 'Prefers answers with short tables'`),
	)
	b.screenshot("webui-preferences.png")
	var prefs struct {
		Preferences []struct{ Type, Content string }
	}
	ts.must(http.StatusOK, "GET", "/v1/preferences", nil).json(t, &prefs)
	if len(prefs.Preferences) != 1 || prefs.Preferences[0].Content != "Prefers answers with short tables" || prefs.Preferences[0].Type != "style" {
		t.Errorf("preferences after editing in the UI: %+v", prefs.Preferences)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(jsErrors) > 0 {
		t.Errorf("script errors: %v", jsErrors)
	}
}

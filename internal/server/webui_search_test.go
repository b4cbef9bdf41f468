package server_test

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestWebUIFailedSearchLeavesNothingStale: after a search fails (a filter
// the server refuses), the UI shows no results of the earlier query and
// says the search failed; the next good search clears the error from the
// status line and the summary.
func TestWebUIFailedSearchLeavesNothingStale(t *testing.T) {
	ts := newTestServer(t, nil)
	ts.indexPage(map[string]any{"url": "https://wildlife.example/quokka", "text": "The quokka is a small marsupial that looks as if it were always smiling."})
	b := browser{t: t, ctx: newBrowser(t)}
	b.signIn(ts)
	status := b.text("#status")
	b.search("smiling marsupial")
	if n := eval[int](b, `document.querySelectorAll('#results li.result').length`); n != 1 {
		t.Fatalf("%d results for the first search", n)
	}
	// A filter the server refuses: 400.
	b.do("set a bad filter", chromedp.SetValue(chromedp.ID("search-filter"), "team = "))
	b.search("smiling marsupial")
	if n := eval[int](b, `document.querySelectorAll('#results li.result').length`); n != 0 {
		t.Errorf("the failed search left %d results of the earlier one on screen", n)
	}
	if s := b.text("#search-summary"); !strings.Contains(s, "failed") || !eval[bool](b, `document.getElementById('search-summary').classList.contains('error')`) {
		t.Errorf("summary after the failed search: %q", s)
	}
	if !eval[bool](b, `document.getElementById('status').classList.contains('error')`) {
		t.Errorf("status after the failed search: %q", b.text("#status"))
	}
	b.screenshot("webui-search-failed.png")
	// The next search clears the error.
	b.do("clear the filter", js(`document.getElementById('search-filter').value = ''`))
	b.search("smiling marsupial")
	if eval[bool](b, `document.getElementById('status').classList.contains('error')`) || b.text("#status") != status {
		t.Errorf("status after a good search: %q, want %q", b.text("#status"), status)
	}
	if s := b.text("#search-summary"); strings.Contains(s, "failed") || eval[bool](b, `document.getElementById('search-summary').classList.contains('error')`) ||
		eval[int](b, `document.querySelectorAll('#results li.result').length`) != 1 {
		t.Errorf("after a good search: summary %q", s)
	}
}

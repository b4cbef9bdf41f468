package budget

import "testing"

// Boundaries of Select that a one-token change of the code would move (see
// docs/testing.md, mutation testing).

func TestSelectZeroBudgetSelectsNothing(t *testing.T) {
	free := []Item{{Text: "   ", Score: 1}}
	if got := Select(free, 0, words{}); got != nil {
		t.Errorf("budget 0: %+v, want nothing", got)
	}
	if got := Select(free, -1, words{}); got != nil {
		t.Errorf("budget -1: %+v, want nothing", got)
	}
	if got := Select(free, 1, words{}); len(got) != 1 || got[0].Tokens != 0 || got[0].Text != "" {
		t.Errorf("budget 1: %+v, want the free item", got)
	}
}

func TestSelectOverheadThatExactlyFits(t *testing.T) {
	items := []Item{{Text: "", Score: 1, Overhead: 5}, {Text: "x", Score: 0.5}}
	if got := Select(items, 5, words{}); len(got) != 1 || got[0].Item != 0 || got[0].Tokens != 5 {
		t.Errorf("overhead 5 in a budget of 5: %+v", got)
	}
	if got := Select(items, 4, words{}); len(got) != 0 {
		t.Errorf("overhead 5 in a budget of 4: %+v", got)
	}
	// Markup and text that fill the budget exactly are taken whole.
	items = []Item{{Text: "one two three.", Score: 1, Overhead: 2}}
	if got := Select(items, 5, words{}); len(got) != 1 || got[0].Truncated || got[0].Tokens != 5 {
		t.Errorf("3 words and 2 of markup in 5: %+v", got)
	}
}

package ragmemtest

import (
	"cmp"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"math"
	"math/big"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	openai "github.com/sashabaranov/go-openai"

	"github.com/ragmem/ragmem/budget"
	"github.com/ragmem/ragmem/chunk"
	"github.com/ragmem/ragmem/rag"
	"github.com/ragmem/ragmem/search"
)

// The checkers return nil when their property holds and an error that
// says what broke when it does not. They are written from docs/spec.md,
// not from the code they check: they parse with encoding/xml, count with
// whatever counter they are given (TokenOracle for an independent one) and
// recompute expected values with their own arithmetic.

// SanitizeText is the documented sanitisation of text placed in the
// knowledge block (docs/spec.md, P2): bytes of invalid UTF-8 and characters
// XML 1.0 does not allow are dropped; everything else comes back unchanged
// when the rendered XML is decoded.
func SanitizeText(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		i += n
		if r == utf8.RuneError && n == 1 {
			continue
		}
		if r == '\t' || r == '\n' || r == '\r' || r >= 0x20 && r <= 0xD7FF || r >= 0xE000 && r <= 0xFFFD || r >= 0x10000 && r <= 0x10FFFF {
			b.WriteRune(r)
		}
	}
	return b.String()
}

// SanitizeAttr is the documented sanitisation of an attribute value: that of
// SanitizeText, and tabs and line breaks become spaces so the value stays on
// one line.
func SanitizeAttr(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '\t' || r == '\n' || r == '\r' {
			return ' '
		}
		return r
	}, SanitizeText(s))
}

// element is a parsed XML element: its attributes, child elements and the
// character data directly inside it.
type element struct {
	name     string
	attrs    map[string]string
	order    []string
	children []*element
	text     string // character data outside child elements, concatenated
}

// parseStrict parses one XML document and rejects anything but elements and
// character data (comments, processing instructions, directives) and any
// content after the root element.
func parseStrict(s string) (*element, error) {
	dec := xml.NewDecoder(strings.NewReader(s))
	dec.Strict = true
	var stack []*element
	var root *element
	for {
		tok, err := dec.RawToken()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("not well-formed XML: %w", err)
		}
		switch t := tok.(type) {
		case xml.StartElement:
			if root != nil && len(stack) == 0 {
				return nil, errors.New("content after the root element")
			}
			e := &element{name: t.Name.Local, attrs: map[string]string{}}
			if t.Name.Space != "" {
				return nil, fmt.Errorf("element %s:%s has a namespace prefix", t.Name.Space, t.Name.Local)
			}
			for _, a := range t.Attr {
				if a.Name.Space != "" {
					return nil, fmt.Errorf("attribute %s:%s on <%s>", a.Name.Space, a.Name.Local, e.name)
				}
				if _, dup := e.attrs[a.Name.Local]; dup {
					return nil, fmt.Errorf("duplicate attribute %s on <%s>", a.Name.Local, e.name)
				}
				e.attrs[a.Name.Local] = a.Value
				e.order = append(e.order, a.Name.Local)
			}
			if len(stack) > 0 {
				p := stack[len(stack)-1]
				p.children = append(p.children, e)
			} else {
				root = e
			}
			stack = append(stack, e)
		case xml.EndElement:
			if len(stack) == 0 || stack[len(stack)-1].name != t.Name.Local {
				return nil, fmt.Errorf("unexpected </%s>", t.Name.Local)
			}
			stack = stack[:len(stack)-1]
		case xml.CharData:
			if len(stack) == 0 {
				if strings.TrimSpace(string(t)) != "" || root == nil {
					return nil, fmt.Errorf("text %q outside the root element", string(t))
				}
				return nil, errors.New("content after the root element")
			}
			stack[len(stack)-1].text += string(t)
		default:
			return nil, fmt.Errorf("unexpected %T in the block", tok)
		}
	}
	if root == nil || len(stack) > 0 {
		return nil, errors.New("no complete root element")
	}
	return root, nil
}

func (e *element) wantAttrs(want ...string) error {
	if !slices.Equal(e.order, want) {
		return fmt.Errorf("<%s> has attributes %v, want %v", e.name, e.order, want)
	}
	return nil
}

// CheckBlock checks that rendered, the output of
// rag.FormatRAGContextForPrompt(b), satisfies docs/spec.md's P2 (isolation:
// the text and attributes of every source and of the profile decode back to
// what went in after SanitizeText or SanitizeAttr, and nothing outside the
// <source> and <user_profile> elements comes from b's text), P3 (each source
// carries its index, url, title, retrieval date and age) and P9 (the profile
// first, then the knowledge, with an accurate count and summary).
func CheckBlock(b rag.Block, rendered string) error {
	if b.Empty() {
		if rendered != "" {
			return fmt.Errorf("an empty block rendered %q", rendered)
		}
		return nil
	}
	if !strings.HasPrefix(rendered, "<knowledge_context>") || !strings.HasSuffix(rendered, "</knowledge_context>") {
		return errors.New("the block does not start with <knowledge_context> and end with </knowledge_context>")
	}
	root, err := parseStrict(rendered)
	if err != nil {
		return err
	}
	if root.name != "knowledge_context" {
		return fmt.Errorf("the root element is <%s>", root.name)
	}
	if err := root.wantAttrs(); err != nil {
		return err
	}
	if strings.TrimSpace(root.text) != "" {
		return fmt.Errorf("text %q directly inside <knowledge_context>", root.text)
	}
	var want []string
	if b.UserProfile != "" {
		want = append(want, "user_profile")
	}
	if len(b.Sources) > 0 {
		want = append(want, "related_knowledge")
	}
	var got []string
	for _, c := range root.children {
		got = append(got, c.name)
	}
	if !slices.Equal(got, want) {
		return fmt.Errorf("sections %v, want %v (P9: profile first, then knowledge)", got, want)
	}
	kids := root.children
	if b.UserProfile != "" {
		if err := checkProfile(kids[0], b.UserProfile); err != nil {
			return err
		}
		kids = kids[1:]
	}
	if len(b.Sources) == 0 {
		return nil
	}
	return checkKnowledge(kids[0], b)
}

// checkProfile checks the <user_profile> element p against the profile.
func checkProfile(p *element, profile string) error {
	if err := p.wantAttrs(); err != nil {
		return err
	}
	if len(p.children) > 0 {
		return fmt.Errorf("<user_profile> holds element <%s>: the profile changed the markup", p.children[0].name)
	}
	if w := "\n" + SanitizeText(profile) + "\n"; p.text != w {
		return fmt.Errorf("the profile decodes to %q, want %q", p.text, w)
	}
	return nil
}

// checkKnowledge checks the <related_knowledge> element rk against the
// block's sources: its count and summary (P9) and each source (P2, P3).
func checkKnowledge(rk *element, b rag.Block) error {
	if err := rk.wantAttrs("count", "total_found", "summary"); err != nil {
		return err
	}
	n := len(b.Sources)
	if rk.attrs["count"] != strconv.Itoa(n) || rk.attrs["total_found"] != strconv.Itoa(b.TotalFound) ||
		rk.attrs["summary"] != wantSummary(b) {
		return fmt.Errorf("<related_knowledge count=%q total_found=%q summary=%q> for %d of %d sources",
			rk.attrs["count"], rk.attrs["total_found"], rk.attrs["summary"], n, b.TotalFound)
	}
	if strings.TrimSpace(rk.text) != "" {
		return fmt.Errorf("text %q inside <related_knowledge> but outside its sources", rk.text)
	}
	if len(rk.children) != n {
		return fmt.Errorf("%d elements inside <related_knowledge>, want %d sources", len(rk.children), n)
	}
	for i, s := range rk.children {
		if err := checkSource(i, s, b.Sources[i]); err != nil {
			return err
		}
	}
	return nil
}

// checkSource checks the i-th <source> element s against src: its
// attributes (P3) and its text (P2).
func checkSource(i int, s *element, src rag.Source) error {
	if s.name != "source" {
		return fmt.Errorf("element <%s> inside <related_knowledge>", s.name)
	}
	if err := s.wantAttrs("index", "url", "title", "retrieved", "age"); err != nil {
		return err
	}
	if len(s.children) > 0 {
		return fmt.Errorf("source %d holds element <%s>: its text changed the markup", i+1, s.children[0].name)
	}
	wantAttr := map[string]string{
		"index": strconv.Itoa(src.Index), "url": SanitizeAttr(src.URL), "title": SanitizeAttr(src.Title),
		"retrieved": src.Retrieved.UTC().Format("2006-01-02"), "age": SanitizeAttr(src.Age),
	}
	for _, k := range s.order {
		if s.attrs[k] != wantAttr[k] {
			return fmt.Errorf("source %d: %s=%q, want %q (P3)", i+1, k, s.attrs[k], wantAttr[k])
		}
	}
	if w := "\n" + SanitizeText(src.Content) + "\n"; s.text != w {
		return fmt.Errorf("source %d decodes to %q, want %q (P2)", i+1, s.text, w)
	}
	return nil
}

// CheckMessage checks the knowledge message of docs/spec.md's P2: an
// assistant message (never a system message) that opens with
// rag.UntrustedPrefix on a line of its own, followed by the block, which must
// pass CheckBlock.
func CheckMessage(b rag.Block, m openai.ChatCompletionMessage) error {
	if m.Role != openai.ChatMessageRoleAssistant {
		return fmt.Errorf("the knowledge message has role %q, want assistant", m.Role)
	}
	rest, ok := strings.CutPrefix(m.Content, rag.UntrustedPrefix+"\n")
	if !ok {
		return fmt.Errorf("the knowledge message does not open with the untrusted-data prefix: %.80q", m.Content)
	}
	return CheckBlock(b, rest)
}

// CheckResults checks docs/spec.md's P1 for the results of one search with
// topK (0 or less: the default 5): at most topK results, in descending
// score, no record twice, each score a number equal to its explanation's
// fused score.
func CheckResults(res []search.Result, topK int) error {
	if topK <= 0 {
		topK = search.DefaultTopK
	}
	if len(res) > topK {
		return fmt.Errorf("%d results for topK %d", len(res), topK)
	}
	seen := map[string]bool{}
	for i, r := range res {
		if math.IsNaN(r.Score) || math.IsInf(r.Score, 0) {
			return fmt.Errorf("result %d has score %v", i, r.Score)
		}
		if r.Score != r.Explanation.Fused {
			return fmt.Errorf("result %d: score %v, explanation says %v", i, r.Score, r.Explanation.Fused)
		}
		if i > 0 && r.Score > res[i-1].Score {
			return fmt.Errorf("score rises at result %d: %v after %v", i, r.Score, res[i-1].Score)
		}
		if seen[r.Record.ID] {
			return fmt.Errorf("record %s twice", r.Record.ID)
		}
		seen[r.Record.ID] = true
	}
	return nil
}

// CheckBudgets checks docs/spec.md's P4 for the budgets computed from p,
// with big-integer arithmetic: negative counts are 0; available = max(0,
// limit − system − query − reserve); the preference budget (0: 500,
// negative: 0) is capped at available; knowledge = max(0, min(base,
// floor((available − preference) × 0.3))) with base 0 meaning 2000 and a
// negative base 0; the rest remains.
func CheckBudgets(p BudgetParams, got budget.Budgets) error {
	nn := func(v int) *big.Int { return big.NewInt(int64(max(v, 0))) }
	avail := nn(p.ModelContextLimit)
	avail.Sub(avail, nn(p.SystemPromptTokens)).Sub(avail, nn(p.UserQueryTokens)).Sub(avail, nn(p.ResponseReserve))
	if avail.Sign() < 0 {
		avail.SetInt64(0)
	}
	pref := big.NewInt(int64(p.Config.PreferenceBudget))
	switch {
	case p.Config.PreferenceBudget == 0:
		pref.SetInt64(budget.DefaultPreferenceBudget)
	case p.Config.PreferenceBudget < 0:
		pref.SetInt64(0)
	}
	if pref.Cmp(avail) > 0 {
		pref.Set(avail)
	}
	base := big.NewInt(int64(p.Config.BaseBudget))
	if p.Config.BaseBudget == 0 {
		base.SetInt64(budget.DefaultBaseBudget)
	}
	k := new(big.Int).Sub(avail, pref)
	k.Mul(k, big.NewInt(3)).Quo(k, big.NewInt(10))
	if base.Cmp(k) < 0 {
		k.Set(base)
	}
	if k.Sign() < 0 {
		k.SetInt64(0)
	}
	rest := new(big.Int).Sub(avail, pref)
	rest.Sub(rest, k)
	want := [4]*big.Int{avail, pref, k, rest}
	have := [4]int{got.TotalAvailable, got.PreferenceBudget, got.KnowledgeBudget, got.Remaining}
	for i, name := range []string{"available", "preference", "knowledge", "remaining"} {
		if want[i].Cmp(big.NewInt(int64(have[i]))) != 0 {
			return fmt.Errorf("%s budget %d, want %s (got %+v)", name, have[i], want[i], got)
		}
	}
	return nil
}

// CheckSelection checks docs/spec.md's P7 and P8 for sel =
// budget.Select(c.Items, c.Budget, counter), both safety and liveness, by
// computing the selection the specification demands: items in descending
// score (NaN last, ties in input order); each whole item (trailing space
// trimmed) that fits in what is left, with its overhead, is selected; the
// first that does not fit is cut to the longest prefix ending at one of
// ends(text) (sentence ends strictly inside the text) that fits, or dropped
// when none fits, and selection stops there. ends nil means
// PlainSentenceEnds, exact for GenText.
func CheckSelection(c Candidates, sel []budget.Selected, counter budget.Counter, ends func(string) []int) error {
	if ends == nil {
		ends = PlainSentenceEnds
	}
	order := make([]int, len(c.Items))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		x, y := c.Items[a].Score, c.Items[b].Score
		switch {
		case math.IsNaN(x) && math.IsNaN(y):
			return 0
		case math.IsNaN(x):
			return 1
		case math.IsNaN(y):
			return -1
		}
		return cmp.Compare(y, x)
	})
	var want []budget.Selected
	left := c.Budget
	for _, i := range order {
		if c.Budget <= 0 {
			break // nothing is selected for no budget
		}
		it := c.Items[i]
		over := max(it.Overhead, 0)
		if over > left {
			break
		}
		whole := strings.TrimRightFunc(it.Text, unicode.IsSpace)
		if n := counter.Count(whole); n+over <= left {
			want = append(want, budget.Selected{Item: i, Text: whole, Tokens: n + over})
			left -= n + over
			continue
		}
		// The longest prefix that fits: try them from the longest down.
		best, bestN := "", 0
		es := ends(whole)
		for k := len(es) - 1; k >= 0; k-- {
			if e := es[k]; e < len(whole) {
				if n := counter.Count(whole[:e]); n+over <= left {
					best, bestN = whole[:e], n
					break
				}
			}
		}
		if best != "" {
			want = append(want, budget.Selected{Item: i, Text: best, Tokens: bestN + over, Truncated: true})
		}
		break
	}
	if len(sel) != len(want) {
		return fmt.Errorf("selected %d items %v, want %d %v", len(sel), summarize(sel), len(want), summarize(want))
	}
	for k := range want {
		if sel[k] != want[k] {
			return fmt.Errorf("selection %d is item %d (%d tokens, truncated %v, %.60q…), want item %d (%d tokens, truncated %v, %.60q…)",
				k, sel[k].Item, sel[k].Tokens, sel[k].Truncated, sel[k].Text, want[k].Item, want[k].Tokens, want[k].Truncated, want[k].Text)
		}
	}
	return nil
}

func summarize(s []budget.Selected) []string {
	out := make([]string, len(s))
	for i, x := range s {
		out[i] = fmt.Sprintf("%d:%dt", x.Item, x.Tokens)
		if x.Truncated {
			out[i] += "(cut)"
		}
	}
	return out
}

// CheckRelativeTime checks docs/spec.md's P13 for got = rag.RelativeTime(t,
// now): "unknown time" for the zero time, "just now" within a minute either
// way, else the whole number of the largest unit that fits (minute, hour,
// day, 30-day month, 365-day year), rounded down, singular for 1, as "N
// units ago" or "in N units".
func CheckRelativeTime(t, now time.Time, got string) error {
	want := "unknown time"
	if !t.IsZero() {
		d := now.Sub(t)
		future := d < 0
		if future {
			d = -d
		}
		want = "just now"
		units := []struct {
			name string
			size time.Duration
		}{{"year", 365 * 24 * time.Hour}, {"month", 30 * 24 * time.Hour}, {"day", 24 * time.Hour}, {"hour", time.Hour}, {"minute", time.Minute}}
		for _, u := range units {
			if d >= u.size {
				n := int64(d / u.size)
				name := u.name
				if n != 1 {
					name += "s"
				}
				want = fmt.Sprintf("%d %s ago", n, name)
				if future {
					want = fmt.Sprintf("in %d %s", n, name)
				}
				break
			}
		}
	}
	if got != want {
		return fmt.Errorf("%v before %v reads %q, want %q", now.Sub(t), now, got, want)
	}
	return nil
}

// CheckChunks checks that chunks, the output of chunk.Split(src, ...), cover
// src in order (docs/spec.md, chunk coverage): each chunk's text is the
// source bytes it claims, chunks are numbered from 0 and start strictly
// later than the one before, and every non-space character of src is in
// some chunk.
func CheckChunks(src string, chunks []chunk.Chunk) error {
	covered := make([]bool, len(src))
	for i, c := range chunks {
		if c.Start < 0 || c.End > len(src) || c.Start >= c.End || src[c.Start:c.End] != c.Text {
			return fmt.Errorf("chunk %d [%d,%d) is not the source text it claims", i, c.Start, c.End)
		}
		if i > 0 && c.Start <= chunks[i-1].Start {
			return fmt.Errorf("chunk %d starts at %d, not after chunk %d at %d", i, c.Start, i-1, chunks[i-1].Start)
		}
		if c.Index != i {
			return fmt.Errorf("chunk %d has index %d", i, c.Index)
		}
		for k := c.Start; k < c.End; k++ {
			covered[k] = true
		}
	}
	for k, r := range src {
		if !covered[k] && !unicode.IsSpace(r) {
			return fmt.Errorf("byte %d (%q) is in no chunk", k, r)
		}
	}
	return nil
}

// wantSummary is the summary of a block: the passages it shows of those
// found, and the distinct sources they come from.
func wantSummary(b rag.Block) string {
	urls := map[string]bool{}
	for _, s := range b.Sources {
		urls[s.URL] = true
	}
	w := fmt.Sprintf("Showing %d of %d passages", len(b.Sources), b.TotalFound)
	switch len(urls) {
	case 0:
		return w
	case 1:
		return w + ", from 1 source"
	}
	return fmt.Sprintf("%s, from %d sources", w, len(urls))
}

package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	openai "github.com/sashabaranov/go-openai"

	"github.com/ragmem/ragmem/budget"
	"github.com/ragmem/ragmem/internal/clean"
	"github.com/ragmem/ragmem/internal/llmchat"
	"github.com/ragmem/ragmem/rag"
)

// checkLLM wraps a missing client or model in ErrConfig.
func checkLLM(l rag.LLM) error {
	if err := l.Validate(); err != nil {
		return fmt.Errorf("%w: %v", ErrConfig, err)
	}
	return nil
}

// SourceKind says where a numbered source came from.
type SourceKind string

// Source kinds: where a cited source came from (Citation.Source).
const (
	WebSource    SourceKind = "web"
	MemorySource SourceKind = "memory"
)

// Citation labels (Property 12).
const (
	labelWeb    = "Web Source"
	labelMemory = "Knowledge Base"
)

// Label is "Web Source" for web results and "Knowledge Base" for the memory.
func (k SourceKind) Label() string {
	if k == WebSource {
		return labelWeb
	}
	return labelMemory
}

// Source is one numbered source shown to the model.
type Source struct {
	Index int        `json:"index"` // 1-based number the model cites
	Kind  SourceKind `json:"kind"`
	URL   string     `json:"url"`
	Title string     `json:"title"`
	Text  string     `json:"text"`          // the snippet or chunk, as sent (possibly truncated)
	Date  time.Time  `json:"date,omitzero"` // published (web) or indexed (memory)
}

// Citation is a source the answer cites.
type Citation struct {
	Index  int        `json:"index"`  // the number in the answer's [n] markers
	Source SourceKind `json:"source"` // "web" or "memory"
	Label  string     `json:"label"`  // "Web Source" or "Knowledge Base"
	URL    string     `json:"url"`
	Title  string     `json:"title"`
}

// EnhancedResult is the outcome of EnhancedSearch.
type EnhancedResult struct {
	Query         string           `json:"query"`
	WebResults    []WebResult      `json:"webResults"`
	MemoryResults []rag.ResultJSON `json:"memoryResults"`
	// Sources is the numbered list the model saw: memory first, then web.
	Sources []Source `json:"sources"`
	// Answer is the synthesised answer with [n] markers; markers that named
	// no retrieved source have been removed (see Dropped).
	Answer string `json:"synthesizedAnswer"`
	// Citations are the sources the answer cites, by index, each labelled by
	// where it really came from (never by what the model claimed).
	Citations []Citation `json:"citations"`
	// ConflictDisclaimer is set when the model reported that web and memory
	// sources disagree and both kinds were retrieved.
	ConflictDisclaimer string `json:"conflictDisclaimer,omitempty"`
	// Dropped lists source numbers the model cited that were never
	// retrieved (invented citations), removed from Answer and Citations.
	Dropped []int `json:"dropped,omitempty"`
	// Structured reports whether the model answered in the requested JSON
	// form. When false, Answer is its raw text and no conflict could be read.
	Structured bool `json:"structured"`
	// Warnings say what was degraded: a failed web search, an unavailable
	// memory.
	Warnings []string `json:"warnings,omitempty"`
}

// EnhanceOptions configure EnhancedSearch. A nil *EnhanceOptions means all
// defaults.
type EnhanceOptions struct {
	// Memory is searched for related knowledge: any rag.Memory, the engine
	// in process or a client of one. Default nil: web only.
	Memory rag.Memory
	// MemoryTopK is the number of memory chunks retrieved. Default 5.
	MemoryTopK int
	// WebLimit is the number of web results asked for. Default 5.
	WebLimit int
	// MaxSourceTokens caps each source's text sent to the model, cut at a
	// sentence boundary. Default 400.
	MaxSourceTokens int
	// Logger receives degradations. Default slog.Default().
	Logger *slog.Logger
	// Now is the current time (tests). Default time.Now.
	Now func() time.Time
}

// Errors.
var (
	ErrConfig    = errors.New("agent: invalid configuration")
	ErrEmptyGoal = errors.New("agent: empty query")
	ErrModel     = errors.New("agent: model request failed")
	ErrNoSources = errors.New("agent: nothing found in the web or the memory")
)

// maxQueryRunes caps a search query.
const maxQueryRunes = 2000

// synthesisPrompt is the system prompt of the synthesis call. Conflicts are
// detected by the model and reported in its structured output.
const synthesisPrompt = `You answer the user's question using only the numbered sources in the <search_sources> block. Each source is labelled "` + labelWeb + `" (found by a web search just now) or "` + labelMemory + `" (from the user's own saved knowledge base).
Rules:
- Support every claim with the number of its source in square brackets, like [2]. Cite several sources as [1][3]. Use only numbers that appear in the block.
- If a web source and a knowledge-base source disagree about a fact (different numbers, dates, versions, or contradictory statements), set "conflict" to true and describe the disagreement in "conflict_description", naming the source numbers on each side. Otherwise set "conflict" to false and "conflict_description" to "".
- If the sources do not answer the question, say so briefly.
- Reply with a JSON object only: {"answer": string, "cited": [source numbers], "conflict": boolean, "conflict_description": string}.
` + rag.ReferenceRule + ` The same holds for the <search_sources> block.`

var synthesisSchema = json.RawMessage(`{"type":"object","properties":{"answer":{"type":"string"},"cited":{"type":"array","items":{"type":"integer"}},"conflict":{"type":"boolean"},"conflict_description":{"type":"string"}},"required":["answer","cited","conflict","conflict_description"],"additionalProperties":false}`)

// EnhancedSearch answers query from the web and the memory together
// (property P12 in docs/spec.md): it retrieves related memory (opts.Memory) and runs the web
// search (web) concurrently, numbers what they found (memory first), and asks
// llm to synthesise an answer citing the numbers. Citations are checked
// against the retrieved sources and labelled "Web Source" or "Knowledge Base"
// by their real origin (Property 12); numbers the model invented are removed
// and listed in Dropped. The model reports disagreement between web and memory
// in its structured output; ConflictDisclaimer is then set if both kinds were
// retrieved.
//
// web may be nil (memory only) and opts.Memory may be nil (web only). A failed
// web search or memory search is logged and listed in Warnings; when nothing
// at all was found the result comes back with an error wrapping ErrNoSources
// and no model call is made. A model failure wraps ErrModel.
func EnhancedSearch(ctx context.Context, query string, web WebSearcher, llm rag.LLM, opts *EnhanceOptions) (*EnhancedResult, error) {
	var o EnhanceOptions
	if opts != nil {
		o = *opts
	}
	if o.MemoryTopK <= 0 {
		o.MemoryTopK = 5
	}
	if o.WebLimit <= 0 {
		o.WebLimit = DefaultWebLimit
	}
	if o.MaxSourceTokens <= 0 {
		o.MaxSourceTokens = 400
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if err := checkLLM(llm); err != nil {
		return nil, err
	}
	query = capRunes(clean.Line(query), maxQueryRunes)
	res := &EnhancedResult{Query: query}
	if query == "" {
		return res, ErrEmptyGoal
	}

	var wg sync.WaitGroup
	var webErr, memErr error
	if web != nil {
		wg.Go(func() { res.WebResults, webErr = web.SearchWeb(ctx, query, o.WebLimit) })
	}
	if o.Memory != nil {
		wg.Go(func() { res.MemoryResults, memErr = searchMemory(ctx, o.Memory, query, o.MemoryTopK) })
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return res, err
	}
	if web == nil {
		res.Warnings = append(res.Warnings, "no web searcher configured")
	}
	if webErr != nil {
		o.Logger.Warn("agent: web search failed; continuing with the memory", "err", webErr)
		res.Warnings = append(res.Warnings, "web search failed: "+webErr.Error())
	}
	if o.Memory == nil {
		res.Warnings = append(res.Warnings, "memory unavailable")
	}
	if memErr != nil {
		o.Logger.Warn("agent: memory search failed; continuing with the web", "err", memErr)
		res.Warnings = append(res.Warnings, "memory search failed: "+memErr.Error())
	}

	c := budget.CounterForModel(llm.Model)
	res.Sources = numberSources(res.MemoryResults, res.WebResults, o.MaxSourceTokens, c)
	if len(res.Sources) == 0 {
		if webErr != nil {
			return res, fmt.Errorf("%w (%w)", ErrNoSources, webErr)
		}
		return res, ErrNoSources
	}

	content, structuredAsked, err := synthesize(ctx, llm, query, res.Sources, o.Now())
	if err != nil {
		return res, err
	}
	syn, ok := parseSynthesis(content)
	res.Structured = ok
	if !ok && structuredAsked {
		o.Logger.Warn("agent: the model did not answer in the requested JSON form; using its text as the answer")
	}
	res.Answer, res.Citations, res.Dropped = resolveCitations(syn.Answer, syn.Cited, res.Sources)
	if len(res.Dropped) > 0 {
		o.Logger.Warn("agent: the model cited sources that were not retrieved; dropped them", "indexes", res.Dropped)
	}
	if syn.Conflict && hasKind(res.Sources, WebSource) && hasKind(res.Sources, MemorySource) {
		res.ConflictDisclaimer = conflictDisclaimer(syn.ConflictDescription)
	}
	return res, nil
}

// searchMemory searches mem for the topK passages (0: the memory's
// default) best matching query.
func searchMemory(ctx context.Context, mem rag.Memory, query string, topK int) ([]rag.ResultJSON, error) {
	out, err := mem.Search(ctx, rag.SearchRequest{Query: query, TopK: topK})
	if err != nil {
		return nil, err
	}
	return out.Results, nil
}

func hasKind(srcs []Source, k SourceKind) bool {
	return slices.ContainsFunc(srcs, func(s Source) bool { return s.Kind == k })
}

func conflictDisclaimer(desc string) string {
	d := capRunes(clean.Line(desc), 500)
	msg := "Note: the web sources and your knowledge base disagree"
	if d != "" {
		msg += ": " + strings.TrimRight(d, ".") + "."
	} else {
		msg += "."
	}
	return msg + " Check the cited sources before relying on either."
}

// numberSources numbers memory chunks first, then web results, each text cut
// to maxTokens at a sentence boundary.
func numberSources(mem []rag.ResultJSON, web []WebResult, maxTokens int, c budget.Counter) []Source {
	var out []Source
	add := func(s Source) {
		s.Index = len(out) + 1
		s.Text = fitTokens(s.Text, maxTokens, c)
		out = append(out, s)
	}
	for _, r := range mem {
		add(Source{Kind: MemorySource, URL: r.URL, Title: r.Title, Text: r.Content, Date: r.CreatedAt})
	}
	for _, w := range web {
		add(Source{Kind: WebSource, URL: w.URL, Title: w.Title, Text: w.Snippet, Date: w.Published})
	}
	return out
}

// fitTokens cuts s to maxTokens at a sentence boundary, or at a rune
// boundary when not even the first sentence fits.
func fitTokens(s string, maxTokens int, c budget.Counter) string {
	// Counting a huge text costs time; no tokenizer needs more than 16
	// bytes per token on ordinary text, so the tail beyond that is cut
	// first (at a rune boundary) without counting it.
	if limit := max(maxTokens, 1) * 16; len(s) > limit {
		for limit > 0 && !utf8.RuneStart(s[limit]) {
			limit--
		}
		s = s[:limit]
	}
	out, cut := budget.TruncateAtSentence(s, maxTokens, c)
	if !cut || out != "" {
		return out
	}
	r := []rune(strings.TrimSpace(s))
	n := min(len(r), maxTokens*2) // about two runes per token: safely under for most text
	for n > 0 && c.Count(string(r[:n])) > maxTokens {
		n = n * 3 / 4
	}
	if n == 0 {
		return ""
	}
	return string(r[:n]) + "…"
}

// sourcesBlock renders the numbered sources as the untrusted-data message
// content the model sees.
func sourcesBlock(srcs []Source, now time.Time) string {
	var b strings.Builder
	b.WriteString(rag.UntrustedPrefix)
	fmt.Fprintf(&b, "\n<search_sources count=\"%d\">\n", len(srcs))
	for _, s := range srcs {
		fmt.Fprintf(&b, "<source index=\"%d\" label=\"%s\" url=\"%s\" title=\"%s\"", s.Index, s.Kind.Label(), rag.EscapeAttr(s.URL), rag.EscapeAttr(s.Title))
		if !s.Date.IsZero() {
			fmt.Fprintf(&b, " date=\"%s\" age=\"%s\"", s.Date.UTC().Format("2006-01-02"), rag.EscapeAttr(rag.RelativeTime(s.Date, now)))
		}
		b.WriteString(">\n")
		b.WriteString(rag.EscapeText(s.Text))
		b.WriteString("\n</source>\n")
	}
	b.WriteString("</search_sources>")
	return b.String()
}

// synthesize asks the model; it reports whether structured output was asked.
func synthesize(ctx context.Context, llm rag.LLM, query string, srcs []Source, now time.Time) (string, bool, error) {
	req := llm.Request([]openai.ChatCompletionMessage{
		{Role: openai.ChatMessageRoleSystem, Content: synthesisPrompt},
		{Role: openai.ChatMessageRoleAssistant, Content: sourcesBlock(srcs, now)},
		{Role: openai.ChatMessageRoleUser, Content: query},
	})
	return llmchat.Complete(ctx, llm.Client, req, "cited_answer", synthesisSchema, !llm.NoStructuredOutput, ErrModel)
}

// synthesis is the model's structured answer.
type synthesis struct {
	Answer              string `json:"answer"`
	Cited               []int  `json:"cited"`
	Conflict            bool   `json:"conflict"`
	ConflictDescription string `json:"conflict_description"`
}

// maxSynthesisBytes caps what parseSynthesis reads.
const maxSynthesisBytes = 1 << 20

// parseSynthesis reads the model's answer: a JSON object {"answer", "cited",
// "conflict", "conflict_description"}, possibly inside a Markdown code fence
// or surrounded by prose. Numbers given as strings ("2", "[2]") are accepted.
// When no such object can be read it returns the whole (cleaned) text as the
// answer and false. It never panics.
func parseSynthesis(content string) (synthesis, bool) {
	if len(content) > maxSynthesisBytes {
		content = content[:maxSynthesisBytes]
	}
	content = strings.ToValidUTF8(content, "")
	raw := strings.TrimSpace(content)
	var s synthesis
	if obj, ok := llmchat.JSONObject(raw); ok {
		var loose struct {
			Answer              *string           `json:"answer"`
			Cited               []json.RawMessage `json:"cited"`
			Conflict            json.RawMessage   `json:"conflict"`
			ConflictDescription string            `json:"conflict_description"`
		}
		if err := json.Unmarshal([]byte(obj), &loose); err == nil && loose.Answer != nil {
			s.Answer = strings.TrimSpace(strings.ToValidUTF8(*loose.Answer, ""))
			for _, c := range loose.Cited {
				if n, ok := citedNumber(c); ok {
					s.Cited = append(s.Cited, n)
				}
			}
			b := strings.Trim(strings.ToLower(strings.TrimSpace(string(loose.Conflict))), `"`)
			s.Conflict = b == "true" || b == "yes"
			s.ConflictDescription = loose.ConflictDescription
			return s, true
		}
	}
	s.Answer = raw
	return s, false
}

func citedNumber(raw json.RawMessage) (int, bool) {
	var n json.Number
	if err := json.Unmarshal(raw, &n); err == nil {
		if v, err := strconv.Atoi(n.String()); err == nil {
			return v, true
		}
		return 0, false
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		v, err := strconv.Atoi(strings.Trim(strings.TrimSpace(s), "[]"))
		return v, err == nil
	}
	return 0, false
}

// markerRE matches citation markers: [3] or [1, 3]. Four-digit numbers such
// as years are not markers.
var markerRE = regexp.MustCompile(`\s*\[(\d{1,3}(?:\s*,\s*\d{1,3})*)\]`)

// resolveCitations checks the answer's [n] markers and the model's cited list
// against the numbered sources. Markers naming a retrieved source are kept
// ("[1, 3]" is rewritten "[1][3]"); markers naming none are removed from the
// answer. The citations are the retrieved sources named by a kept marker or by
// the cited list, by index, each labelled by its real kind; dropped holds the
// numbers that named no source, ascending.
func resolveCitations(answer string, cited []int, srcs []Source) (string, []Citation, []int) {
	valid := func(n int) bool { return n >= 1 && n <= len(srcs) }
	used := map[int]bool{}
	bad := map[int]bool{}
	// Removing a marker can join its neighbours into a new one ("[0[0]]"),
	// so strip until nothing changes; after a few passes, neutralise what is
	// left instead of removing it.
	out := answer
	for pass := 0; ; pass++ {
		next, removed := rewriteMarkers(out, valid, used, bad, pass >= 8)
		out = next
		if !removed {
			break
		}
	}
	for _, n := range cited {
		if valid(n) {
			used[n] = true
		} else {
			bad[n] = true
		}
	}
	var cits []Citation
	for i := 1; i <= len(srcs); i++ {
		if used[i] {
			s := srcs[i-1]
			cits = append(cits, Citation{Index: s.Index, Source: s.Kind, Label: s.Kind.Label(), URL: s.URL, Title: s.Title})
		}
	}
	var dropped []int
	for n := range bad {
		dropped = append(dropped, n)
	}
	slices.Sort(dropped)
	return strings.TrimSpace(out), cits, dropped
}

// rewriteMarkers does one pass over s's markers: valid numbers are kept
// and recorded in used, others recorded in bad and removed (or, when
// neutralise, replaced by "[?]"). It reports whether it removed any.
func rewriteMarkers(s string, valid func(int) bool, used, bad map[int]bool, neutralise bool) (string, bool) {
	var b strings.Builder
	last, removed := 0, false
	for _, m := range markerRE.FindAllStringSubmatchIndex(s, -1) {
		b.WriteString(s[last:m[0]])
		last = m[1]
		whole := s[m[0]:m[1]]
		lead := whole[:strings.IndexByte(whole, '[')]
		var keep strings.Builder
		for _, part := range strings.Split(s[m[2]:m[3]], ",") {
			n, _ := strconv.Atoi(strings.TrimSpace(part))
			if valid(n) {
				used[n] = true
				fmt.Fprintf(&keep, "[%d]", n)
			} else {
				bad[n] = true
			}
		}
		switch {
		case keep.Len() > 0:
			b.WriteString(lead)
			b.WriteString(keep.String())
		case neutralise:
			b.WriteString(lead)
			b.WriteString("[?]")
		default:
			removed = true
			// Keep the space before it only if a word follows directly
			// ("a [9]b" -> "a b"; "a [9]." -> "a."; "a [9] b" -> "a b").
			if r, _ := utf8.DecodeRuneInString(s[m[1]:]); m[1] < len(s) && (unicode.IsLetter(r) || unicode.IsDigit(r)) {
				b.WriteString(lead)
			}
		}
	}
	b.WriteString(s[last:])
	return b.String(), removed
}

// FormatCitations lists citations one per line with their label:
//
//	[1] Knowledge Base: Title <url>
//	[3] Web Source: Title <url>
func FormatCitations(cits []Citation) string {
	var b strings.Builder
	for i, c := range cits {
		if i > 0 {
			b.WriteByte('\n')
		}
		fmt.Fprintf(&b, "[%d] %s: %s", c.Index, c.Label, clean.Line(c.Title))
		if c.URL != "" && c.URL != c.Title {
			fmt.Fprintf(&b, " <%s>", clean.Line(c.URL))
		}
	}
	return b.String()
}

// Text renders the result for a reader or a model: the answer, the conflict
// disclaimer if any, and the labelled citations.
func (r *EnhancedResult) Text() string {
	var b strings.Builder
	b.WriteString(r.Answer)
	if r.ConflictDisclaimer != "" {
		b.WriteString("\n\n")
		b.WriteString(r.ConflictDisclaimer)
	}
	if len(r.Citations) > 0 {
		b.WriteString("\n\nSources:\n")
		b.WriteString(FormatCitations(r.Citations))
	}
	return b.String()
}

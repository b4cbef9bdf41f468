package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/ragmem/ragmem/budget"
	"github.com/ragmem/ragmem/internal/clean"
	"github.com/ragmem/ragmem/prefs"
	"github.com/ragmem/ragmem/rag"
)

// Tool names offered to the model.
const (
	toolSearchMemory       = "search_memory"
	toolRememberPreference = "remember_preference"
	toolSearchWeb          = "search_web_for_info"
)

const maxToolTopK = 20

var (
	searchMemoryTool = openai.Tool{Type: openai.ToolTypeFunction, Function: &openai.FunctionDefinition{
		Name: toolSearchMemory,
		Description: "Search the user's knowledge base (pages they read, documents they indexed) with hybrid keyword and vector search. " +
			"Use it when the knowledge context you were given does not cover what you need. Returns passages with their source URL, title and age.",
		Parameters: json.RawMessage(`{"type":"object","properties":{` +
			`"query":{"type":"string","description":"What to look for: a question or keywords."},` +
			`"topK":{"type":"integer","minimum":1,"maximum":20,"description":"How many passages to return. Default 5."}},` +
			`"required":["query"]}`),
	}}
	rememberPreferenceTool = openai.Tool{Type: openai.ToolTypeFunction, Function: &openai.FunctionDefinition{
		Name: toolRememberPreference,
		Description: "Save a lasting preference or fact about the user to their profile, which is shown to you in every future conversation. " +
			"Use it only when the user states one explicitly (\"I'm a data engineer\", \"keep answers short\").",
		Parameters: json.RawMessage(`{"type":"object","properties":{` +
			`"type":{"type":"string","enum":["expertise","style","domain","custom"],"description":"expertise: who the user is; style: how to answer; domain: what they work on; custom: anything else."},` +
			`"content":{"type":"string","description":"The preference as a short statement, e.g. \"User prefers answers with Go code examples\"."}},` +
			`"required":["type","content"]}`),
	}}
	searchWebTool = openai.Tool{Type: openai.ToolTypeFunction, Function: &openai.FunctionDefinition{
		Name: toolSearchWeb,
		Description: "Search the web and the user's knowledge base together and get a synthesised answer with numbered citations, " +
			"each labelled \"Web Source\" or \"Knowledge Base\", and a note when they disagree. Use it for current events or facts the knowledge base lacks. " +
			"Keep the labels when you cite these sources.",
		Parameters: json.RawMessage(`{"type":"object","properties":{` +
			`"query":{"type":"string","description":"The question to search for."}},"required":["query"]}`),
	}}
)

// toolkit executes the tools of one Run.
type toolkit struct {
	cfg   Config
	log   *slog.Logger
	c     budget.Counter
	max   int // tokens per result
	tools []openai.Tool
}

func newToolkit(cfg Config, log *slog.Logger, c budget.Counter) *toolkit {
	t := &toolkit{cfg: cfg, log: log, c: c, max: cfg.ToolResultTokens}
	if t.max <= 0 {
		t.max = DefaultToolResultTokens
	}
	if cfg.Memory != nil {
		t.tools = append(t.tools, searchMemoryTool, rememberPreferenceTool)
	}
	if cfg.WebSearcher != nil {
		t.tools = append(t.tools, searchWebTool)
	}
	return t
}

func (t *toolkit) offers(name string) bool {
	for _, tool := range t.tools {
		if tool.Function.Name == name {
			return true
		}
	}
	return false
}

// call runs one tool call. Failures become an "error: ..." result for the
// model and are recorded in the returned ToolCall.
func (t *toolkit) call(ctx context.Context, tc openai.ToolCall, res *Result) ToolCall {
	rec := ToolCall{ID: tc.ID, Name: tc.Function.Name, Arguments: tc.Function.Arguments}
	var out string
	var err error
	switch name := tc.Function.Name; {
	case !t.offers(name):
		err = fmt.Errorf("unknown tool %q", capRunes(clean.Line(name), 100))
	case name == toolSearchMemory:
		out, err = t.searchMemory(ctx, tc.Function.Arguments)
	case name == toolRememberPreference:
		out, err = t.rememberPreference(ctx, tc.Function.Arguments)
	case name == toolSearchWeb:
		out, err = t.searchWeb(ctx, tc.Function.Arguments, res)
	}
	if err != nil {
		t.log.Warn("agent: tool call failed", "tool", rec.Name, "err", err)
		rec.Err = err.Error()
		out = "error: " + err.Error()
	}
	rec.Result = fitTokens(out, t.max, t.c)
	return rec
}

func decodeArgs(raw string, v any) error {
	if strings.TrimSpace(raw) == "" {
		raw = "{}"
	}
	if err := json.Unmarshal([]byte(raw), v); err != nil {
		return fmt.Errorf("the arguments are not the JSON object the tool expects: %v", err)
	}
	return nil
}

func (t *toolkit) searchMemory(ctx context.Context, raw string) (string, error) {
	var a struct {
		Query string `json:"query"`
		TopK  int    `json:"topK"`
	}
	if err := decodeArgs(raw, &a); err != nil {
		return "", err
	}
	q := capRunes(clean.Line(a.Query), maxQueryRunes)
	if q == "" {
		return "", fmt.Errorf("query is empty")
	}
	// A topK of 0 asks for the memory's default.
	results, err := searchMemory(ctx, t.cfg.Memory, q, min(max(a.TopK, 0), maxToolTopK))
	if err != nil {
		return "", fmt.Errorf("memory search failed: %w", err)
	}
	if len(results) == 0 {
		return "No passages in the knowledge base match this query.", nil
	}
	return formatResults(results, t.max, t.c, time.Now()), nil
}

// formatResults renders search results as the untrusted-data
// <knowledge_context> text (rag's format), within maxTokens: the last results
// are left out first, and a single result that does not fit is cut at a
// sentence boundary.
func formatResults(results []rag.ResultJSON, maxTokens int, c budget.Counter, now time.Time) string {
	srcs := make([]rag.Source, len(results))
	for i, r := range results {
		srcs[i] = rag.Source{Index: i + 1, URL: r.URL, Title: r.Title, HeadingPath: r.HeadingPath,
			Retrieved: r.CreatedAt, Age: rag.RelativeTime(r.CreatedAt, now), Content: r.Content, Score: r.Score}
	}
	render := func() string {
		return rag.BuildRAGContextMessage(rag.Block{Sources: srcs, TotalFound: len(results)}).Content
	}
	for {
		text := render()
		n := c.Count(text)
		if n <= maxTokens {
			return text
		}
		if len(srcs) > 1 {
			srcs = srcs[:len(srcs)-1]
			continue
		}
		over := n - c.Count(srcs[0].Content)
		srcs[0].Content = fitTokens(srcs[0].Content, max(0, maxTokens-over-8), c)
		srcs[0].Truncated = true
		return render()
	}
}

func (t *toolkit) rememberPreference(ctx context.Context, raw string) (string, error) {
	var a struct {
		Type    string `json:"type"`
		Content string `json:"content"`
	}
	if err := decodeArgs(raw, &a); err != nil {
		return "", err
	}
	typ, err := prefs.ParseType(a.Type)
	if err != nil {
		return "", err
	}
	p, err := t.cfg.Memory.AddPreference(ctx, rag.PreferenceRequest{Type: string(typ), Content: a.Content})
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("Saved to the user's profile (%s, id %s): %s", p.Type, p.ID, p.Content), nil
}

func (t *toolkit) searchWeb(ctx context.Context, raw string, res *Result) (string, error) {
	var a struct {
		Query string `json:"query"`
	}
	if err := decodeArgs(raw, &a); err != nil {
		return "", err
	}
	er, err := EnhancedSearch(ctx, a.Query, t.cfg.WebSearcher, t.cfg.LLM, &EnhanceOptions{Memory: t.cfg.Memory, Logger: t.log})
	if er != nil && (err == nil || len(er.Sources) > 0) {
		res.Searches = append(res.Searches, er)
	}
	if err != nil {
		return "", err
	}
	return rag.UntrustedPrefix + "\n" + er.Text(), nil
}

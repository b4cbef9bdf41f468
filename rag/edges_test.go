package rag

import (
	"bytes"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ragmem/ragmem/budget"
	"github.com/ragmem/ragmem/index"
	"github.com/ragmem/ragmem/internal/embed"
	"github.com/ragmem/ragmem/prefs"
	"github.com/ragmem/ragmem/search"
)

// Tests of edges and defaults: each pins a boundary that a one-token change
// of the code would move (see docs/testing.md, mutation testing).

func TestEscapeValidRuneBoundaries(t *testing.T) {
	for in, want := range map[string]string{
		"a\x1fb":       "ab",           // below the first allowed control-free rune
		"a\x20b":       "a b",          // U+0020, the first
		"a\ud7ffb":     "a\ud7ffb",     // the last rune before the surrogates
		"a\ue000b":     "a\ue000b",     // the first after them
		"a\ufffdb":     "a\ufffdb",     // the last of the BMP that XML allows
		"a\ufffeb":     "ab",           // not allowed
		"a\U00010000b": "a\U00010000b", // the first supplementary rune
		"a\x80b":       "ab",           // a lone continuation byte is invalid UTF-8
		"a\U0010ffffb": "a\U0010ffffb",
		"tab\tand\nnl": "tab\tand\nnl",
		"\x7f delete":  "\x7f delete", // XML allows U+007F
	} {
		if got := EscapeText(in); got != want {
			t.Errorf("EscapeText(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestConfigDefaults(t *testing.T) {
	d := Config{}.withDefaults()
	if d != DefaultConfig() {
		t.Fatalf("zero config: %+v, want %+v", d, DefaultConfig())
	}
	c := Config{TopK: -1, SimilarityThreshold: -1, KnowledgeBudget: -5, PreferenceBudget: -1}.withDefaults()
	if c.TopK != 5 || c.SimilarityThreshold != -1 || c.KnowledgeBudget != 2000 || c.PreferenceBudget != 0 {
		t.Errorf("negative fields: %+v", c)
	}
	set := Config{TopK: 1, SimilarityThreshold: 0.5, KnowledgeBudget: 1, PreferenceBudget: 1, SearchMode: search.Vector, Fusion: search.RRF, Model: "gpt-4"}
	if got := set.withDefaults(); got != set {
		t.Errorf("set fields changed: %+v, want %+v", got, set)
	}
}

// logRecorder collects log records.
type logRecorder struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logRecorder) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logRecorder) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

func TestEngineLogsToItsLogger(t *testing.T) {
	rec := &logRecorder{}
	fe := &flakyEmbedder{Embedder: embed.Default()}
	e := openEngine(t, &Options{Embedder: fe, Logger: slog.New(slog.NewTextHandler(rec, nil))})
	if _, err := e.IndexDocument(ctx, index.Document{SourceURL: "https://k.example/", Content: "Kelp forests grow fast."}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.ContextFor(ctx, "kelp", ContextOptions{}); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(rec.String(), "level=WARN") || strings.Contains(rec.String(), "level=ERROR") {
		t.Errorf("a healthy engine logged: %s", rec)
	}
	fe.down.Store(true)
	// A query not searched before: query embeddings are cached.
	if _, err := e.Retrieve(ctx, "kelp forests grow", nil); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(rec.String(), "level=WARN") || !strings.Contains(rec.String(), "BM25") {
		t.Errorf("the fallback was not logged to the given logger: %q", rec)
	}
}

func TestSearchOptionsOverrideConfig(t *testing.T) {
	e := openEngine(t, &Options{Config: Config{SearchMode: search.FullText, Fusion: search.RRF}})
	if _, err := e.IndexDocument(ctx, index.Document{SourceURL: "https://k.example/", Content: "Kelp forests grow fast in cold water."}); err != nil {
		t.Fatal(err)
	}
	method := func(o *search.Options) string {
		res, err := e.Retrieve(ctx, "kelp forests", o)
		if err != nil || len(res) == 0 {
			t.Fatalf("%+v: %v %v", o, err, res)
		}
		return res[0].Explanation.Method
	}
	if m := method(nil); m != "bm25" {
		t.Errorf("configured mode: %s", m)
	}
	if m := method(&search.Options{SimilarityThreshold: -1}); m != "bm25" {
		t.Errorf("options without a mode: %s, want the configured full text", m)
	}
	if m := method(&search.Options{Mode: search.Vector, SimilarityThreshold: -1}); m != "vector" {
		t.Errorf("options with a mode: %s", m)
	}
	if m := method(&search.Options{Mode: search.Hybrid, SimilarityThreshold: -1}); !strings.HasPrefix(m, "rrf") {
		t.Errorf("hybrid without a fusion: %s, want the configured RRF", m)
	}
	if m := method(&search.Options{Mode: search.Hybrid, Fusion: search.Relative, SimilarityThreshold: -1}); !strings.HasPrefix(m, "relative") {
		t.Errorf("hybrid with a fusion: %s", m)
	}
}

// sources returns n results of about the same size, best first.
func sources(n int) []search.Result {
	var rs []search.Result
	for i := 0; i < n; i++ {
		rs = append(rs, search.Result{Score: 1 / float64(i+1), Record: index.Record{
			ID: fmt.Sprintf("c%d", i), SourceURL: fmt.Sprintf("https://s.example/%d", i), Title: fmt.Sprintf("Source %d", i),
			Content: fmt.Sprintf("Source %d opens here. It has a second sentence. And a third one that ends it.", i),
		}})
	}
	return rs
}

func TestAssembleUsesTheWholeBudget(t *testing.T) {
	c := budget.CounterForModel("gpt-4o")
	now := time.Now()
	all := assemble("", sources(3), 100000, c, now)
	if len(all.Sources) != 3 {
		t.Fatalf("%d sources with a large budget", len(all.Sources))
	}
	// A budget of the block's size keeps every source (the last possibly
	// cut: selection estimates each source's markup with the widest index).
	exact := assemble("", sources(3), all.KnowledgeTokens, c, now)
	if len(exact.Sources) != 3 || exact.KnowledgeTokens > all.KnowledgeTokens {
		t.Errorf("budget = block size: %d sources, %d tokens; want 3, at most %d", len(exact.Sources), exact.KnowledgeTokens, all.KnowledgeTokens)
	}
	// Less than that cuts the last source at a sentence rather than
	// dropping it, and never exceeds the budget.
	two := assemble("", sources(2), 100000, c, now)
	for b := two.KnowledgeTokens + 50; b < all.KnowledgeTokens; b++ {
		got := assemble("", sources(3), b, c, now)
		if got.KnowledgeTokens > b {
			t.Fatalf("budget %d: %d tokens", b, got.KnowledgeTokens)
		}
		if len(got.Sources) != 3 || !got.Sources[2].Truncated {
			t.Fatalf("budget %d (two sources take %d, three %d): %d sources, the last truncated %v",
				b, two.KnowledgeTokens, all.KnowledgeTokens, len(got.Sources), len(got.Sources) == 3 && got.Sources[2].Truncated)
		}
	}
}

func TestProfileTruncatedToItsBudget(t *testing.T) {
	e := openEngine(t, nil)
	for i := 0; i < 6; i++ {
		if _, err := e.PreferenceStore().Add(ctx, prefs.Custom, fmt.Sprintf("Statement number %d about the user, long enough to cost tokens", i)); err != nil {
			t.Fatal(err)
		}
	}
	c := budget.CounterForModel("")
	overhead := c.Count("<user_profile>\n\n</user_profile>\n")
	for _, pb := range []int{overhead, overhead + 1, overhead + 20, overhead + 40} {
		b, err := e.BuildRAGContext(ctx, "", 0, Config{PreferenceBudget: pb})
		if err != nil {
			t.Fatal(err)
		}
		if b.ProfileTokens > pb {
			t.Errorf("preference budget %d: the profile takes %d tokens", pb, b.ProfileTokens)
		}
		if pb >= overhead+20 && b.UserProfile == "" {
			t.Errorf("preference budget %d: no profile", pb)
		}
	}
}

func TestNoKnowledgeBudgetSearchesNothing(t *testing.T) {
	e := openEngine(t, nil)
	if _, err := e.IndexDocument(ctx, index.Document{SourceURL: "https://k.example/", Content: "Kelp forests grow fast."}); err != nil {
		t.Fatal(err)
	}
	b, err := e.BuildRAGContext(ctx, "kelp forests", 0, Config{})
	if err != nil || b.TotalFound != 0 || len(b.Sources) != 0 {
		t.Errorf("knowledge budget 0: %v, %d found, %d sources", err, b.TotalFound, len(b.Sources))
	}
	b, err = e.BuildRAGContext(ctx, "kelp forests", 1000, Config{})
	if err != nil || b.TotalFound != 1 {
		t.Errorf("knowledge budget 1000: %v, %d found", err, b.TotalFound)
	}
}

func TestBuildContextRequestDefaults(t *testing.T) {
	e := openEngine(t, nil)
	q := "Ünïcödé テキスト 1234567 — naïve façade"
	o200k, cl100k := budget.CounterForModel("gpt-4o").Count(q), budget.CounterForModel("gpt-4").Count(q)
	if o200k == cl100k {
		t.Fatal("the query counts the same in both encodings; pick another")
	}
	c, err := e.ContextFor(ctx, q, ContextOptions{Model: "gpt-4o", ModelContextLimit: 10000})
	if err != nil {
		t.Fatal(err)
	}
	if c.UserQueryTokens != o200k || c.Budgets.TotalAvailable != 10000-o200k-1024 {
		t.Errorf("gpt-4o: query %d tokens, available %d; want %d, %d", c.UserQueryTokens, c.Budgets.TotalAvailable, o200k, 10000-o200k-1024)
	}
	// The engine's configured model wins over the request's.
	e2 := openEngine(t, &Options{Config: Config{Model: "gpt-4"}})
	if c, _ := e2.ContextFor(ctx, q, ContextOptions{Model: "gpt-4o", ModelContextLimit: 10000}); c.UserQueryTokens != cl100k {
		t.Errorf("configured gpt-4, requested gpt-4o: %d tokens, want %d", c.UserQueryTokens, cl100k)
	}
	// Explicit system prompt tokens win over counting the prompt; a zero
	// reserve means the default 1024.
	c, _ = e.ContextFor(ctx, q, ContextOptions{Model: "gpt-4o", ModelContextLimit: 10000, SystemPrompt: "You are terse.", SystemPromptTokens: 300, ResponseReserve: 0})
	if c.Budgets.TotalAvailable != 10000-300-o200k-1024 {
		t.Errorf("explicit system tokens: available %d", c.Budgets.TotalAvailable)
	}
	sys := budget.CounterForModel("gpt-4o").Count("You are terse.")
	c, _ = e.ContextFor(ctx, q, ContextOptions{Model: "gpt-4o", ModelContextLimit: 10000, SystemPrompt: "You are terse.", ResponseReserve: 7})
	if c.Budgets.TotalAvailable != 10000-sys-o200k-7 {
		t.Errorf("counted system prompt: available %d, want %d", c.Budgets.TotalAvailable, 10000-sys-o200k-7)
	}
}

func TestProfileThatExactlyFillsTheWindow(t *testing.T) {
	e := openEngine(t, nil)
	if _, err := e.PreferenceStore().Add(ctx, prefs.Style, "User prefers short answers"); err != nil {
		t.Fatal(err)
	}
	c := budget.CounterForModel("gpt-4o")
	profile := c.Count("<user_profile>\nStyle: User prefers short answers.\n</user_profile>\n")
	q := "kelp"
	limit := profile + 100 + c.Count(q) + 50
	got, err := e.ContextFor(ctx, q, ContextOptions{Model: "gpt-4o", ModelContextLimit: limit, SystemPromptTokens: 100, ResponseReserve: 50})
	if err != nil {
		t.Fatal(err)
	}
	if got.Budgets.TotalAvailable != profile || got.Block.UserProfile == "" {
		t.Errorf("profile of %d tokens in %d available: profile %q", profile, got.Budgets.TotalAvailable, got.Block.UserProfile)
	}
	got, _ = e.ContextFor(ctx, q, ContextOptions{Model: "gpt-4o", ModelContextLimit: limit - 1, SystemPromptTokens: 100, ResponseReserve: 50})
	if got.Block.UserProfile != "" {
		t.Errorf("a profile of %d tokens was kept with %d available", profile, got.Budgets.TotalAvailable)
	}
}

func TestContextLimitForModelPrefixes(t *testing.T) {
	for m, want := range map[string]int{
		"/gpt-4o": 128000, "openai/gpt-4.1-mini": 1047576, "GPT-5": 400000, "o1-preview": 200000, "o4-mini": 200000,
		"gpt-4-turbo": 128000, "gpt-4.5-preview": 128000, "chatgpt-4o-latest": 128000, "gpt-4-32k": 32768, "azure/": 8192,
	} {
		if got := ContextLimitForModel(m); got != want {
			t.Errorf("ContextLimitForModel(%q) = %d, want %d", m, got, want)
		}
	}
}

// Property-based tests (gopter) of what ragmem promises: the properties of
// docs/spec.md, numbered as there (P1–P13, then the chunking, reopening,
// fusion, context-request, search-option, outage and calibration
// properties). Each test names the property it checks; the checkers
// and generators are those of package ragmemtest, which users can run
// against their own configuration.
//
// Each property runs at least 100 cases (RAGMEM_PROPERTY_RUNS=10000 for a
// long run). The seed is logged (go test -v) and printed on failure; set
// RAGMEM_PROPERTY_SEED to replay a run. A failing case is shrunk to a small
// one before it is reported.
package ragmem_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/leanovate/gopter"
	"github.com/leanovate/gopter/gen"
	"github.com/leanovate/gopter/prop"
	openai "github.com/sashabaranov/go-openai"

	"github.com/ragmem/ragmem/agent"
	"github.com/ragmem/ragmem/budget"
	"github.com/ragmem/ragmem/chunk"
	"github.com/ragmem/ragmem/index"
	"github.com/ragmem/ragmem/index/driver"
	"github.com/ragmem/ragmem/internal/embed"
	"github.com/ragmem/ragmem/internal/index/engine"
	"github.com/ragmem/ragmem/internal/index/local"
	"github.com/ragmem/ragmem/prefs"
	"github.com/ragmem/ragmem/rag"
	"github.com/ragmem/ragmem/ragmemtest"
	"github.com/ragmem/ragmem/search"
)

var bg = context.Background()

// check runs one property with the given parameters.
func check(t *testing.T, params *gopter.TestParameters, name string, p gopter.Prop) {
	t.Helper()
	ps := gopter.NewProperties(params)
	ps.Property(name, p)
	ps.TestingRun(t)
}

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// corpusEngine is an engine holding n documents of ragmemtest.GenCorpus
// drawn for seed, for properties that only read.
func corpusEngine(t *testing.T, seed int64, n int, opts *ragmemtest.EngineOptions) (*rag.Engine, []index.Document) {
	t.Helper()
	e := ragmemtest.NewEngine(t, opts)
	docs := ragmemtest.Sample[[]index.Document](ragmemtest.GenCorpus(n, n), seed)
	if _, err := e.IndexDocuments(bg, docs); err != nil {
		t.Fatal(err)
	}
	return e, docs
}

// P1 (docs/spec.md): at most topK results, in descending score, whatever
// the query, mode, fusion and threshold.
func TestProperty1TopKBound(t *testing.T) {
	params := ragmemtest.Parameters(t)
	e, _ := corpusEngine(t, params.Seed(), 60, nil)
	var found atomic.Int64
	check(t, params, "top-k bound and descending order", prop.ForAll(
		func(q string, topK int, mode search.Mode, fusion search.Fusion, thr float64) string {
			res, err := e.Retrieve(bg, q, &search.Options{Mode: mode, TopK: topK, Fusion: fusion, SimilarityThreshold: thr})
			if err != nil {
				return err.Error()
			}
			if len(res) > 0 {
				found.Add(1)
			}
			return ragmemtest.ErrString(ragmemtest.CheckResults(res, topK))
		},
		ragmemtest.GenQuery(), gen.IntRange(1, 25), gen.OneConstOf(search.Hybrid, search.Vector, search.FullText),
		gen.OneConstOf(search.Relative, search.RRF), gen.OneConstOf(-1.0, 0.1, 0.3, 0.6),
	))
	if found.Load() == 0 {
		t.Error("no search returned anything; P1 was not exercised")
	}
}

// P2 (docs/spec.md): whatever a block holds, its rendering is well-formed
// XML in which every source's text and attributes, and the profile, decode
// back to what went in (after the documented sanitisation), nothing outside
// them comes from the block's text, and the message that carries it is an
// assistant message opening with the untrusted-data prefix.
func TestProperty2ContextIsolation(t *testing.T) {
	ragmemtest.Run(t, "rendered knowledge stays inside its own elements and message", prop.ForAll(
		func(b rag.Block) string {
			if err := ragmemtest.CheckBlock(b, rag.FormatRAGContextForPrompt(b)); err != nil {
				return err.Error()
			}
			return ragmemtest.ErrString(ragmemtest.CheckMessage(b, rag.BuildRAGContextMessage(b)))
		},
		ragmemtest.GenBlock(),
	))
}

// sseModel is an OpenAI-compatible chat server that streams a fixed answer
// and records the messages of every request.
type sseModel struct {
	mu   sync.Mutex
	last []openai.ChatCompletionMessage
}

func (m *sseModel) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	var body openai.ChatCompletionRequest
	if err := json.NewDecoder(req.Body).Decode(&body); err != nil {
		http.Error(w, `{"error":{"message":"bad request","type":"invalid_request_error"}}`, http.StatusBadRequest)
		return
	}
	m.mu.Lock()
	m.last = body.Messages
	m.mu.Unlock()
	w.Header().Set("Content-Type", "text/event-stream")
	for _, delta := range []map[string]any{{"role": "assistant", "content": ""}, {"content": "Noted."}} {
		ev, _ := json.Marshal(map[string]any{"id": "chatcmpl-p2", "object": "chat.completion.chunk", "created": 1, "model": body.Model,
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": nil}}})
		fmt.Fprintf(w, "data: %s\n\n", ev)
	}
	ev, _ := json.Marshal(map[string]any{"id": "chatcmpl-p2", "object": "chat.completion.chunk", "created": 1, "model": body.Model,
		"choices": []any{map[string]any{"index": 0, "delta": map[string]any{}, "finish_reason": "stop"}}})
	fmt.Fprintf(w, "data: %s\n\ndata: [DONE]\n\n", ev)
}

// recordingMemory is the engine as the agent's rag.Memory, keeping the
// last context it built: the agent holds the wire answer (rag.ContextJSON,
// which carries no source text), and P2 checks the message the model got
// against the block's inputs. BuildContext maps the fields the agent sends
// as Engine.BuildContext does.
type recordingMemory struct {
	*rag.Engine
	mu   sync.Mutex
	last *rag.Context
}

func (m *recordingMemory) BuildContext(ctx context.Context, req rag.ContextRequest) (*rag.ContextJSON, error) {
	c, err := m.ContextFor(ctx, req.Query, rag.ContextOptions{Model: req.Model, ModelContextLimit: req.ModelContextLimit,
		SystemPrompt: req.SystemPrompt, SystemPromptTokens: req.SystemPromptTokens, ResponseReserve: req.ResponseReserve})
	if err != nil {
		return nil, err
	}
	m.mu.Lock()
	m.last = c
	m.mu.Unlock()
	out := c.JSON()
	return &out, nil
}

func (m *recordingMemory) lastContext() *rag.Context {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.last
}

// P2 (docs/spec.md), as a model sees it: in the request an agent sends, the
// system message is the agent's prompt and the standing reference rule and
// nothing else, the retrieved knowledge travels in its own assistant
// message, and no other message carries a knowledge block.
func TestProperty2SystemPromptCarriesNoKnowledge(t *testing.T) {
	params := ragmemtest.Parameters(t)
	e, _ := corpusEngine(t, params.Seed(), 30, nil)
	mem := &recordingMemory{Engine: e}
	model := &sseModel{}
	srv := httptest.NewServer(model)
	defer srv.Close()
	oc := openai.DefaultConfig("k")
	oc.BaseURL = srv.URL + "/v1"
	llm := rag.LLM{Client: openai.NewClientWithConfig(oc), Model: "gpt-4o"}
	withKnowledge := 0
	check(t, params, "the system prompt carries the rule, never the knowledge", prop.ForAll(
		func(sys, goal string) string {
			res, err := agent.Run(bg, goal, agent.Config{LLM: llm, Memory: mem, SystemPrompt: sys, MaxToolRounds: -1, Logger: quietLogger()})
			if err != nil {
				return err.Error()
			}
			model.mu.Lock()
			msgs := model.last
			model.mu.Unlock()
			wantSys := strings.TrimSpace(sys)
			if wantSys == "" {
				wantSys = agent.DefaultSystemPrompt
			}
			wantSys += "\n\n" + rag.ReferenceRule
			if len(msgs) < 2 {
				return fmt.Sprintf("the model got %d messages", len(msgs))
			}
			if msgs[0].Role != openai.ChatMessageRoleSystem || msgs[0].Content != wantSys {
				return fmt.Sprintf("the first message is %s %q, want the system prompt and the rule only", msgs[0].Role, msgs[0].Content)
			}
			if last := msgs[len(msgs)-1]; last.Role != openai.ChatMessageRoleUser || last.Content != goal {
				return fmt.Sprintf("the last message is %s %q, want the user's goal only", last.Role, last.Content)
			}
			if res.Context == nil {
				return "no knowledge context was built"
			}
			built := mem.lastContext()
			if built == nil || built.Message.Content != res.Context.Message.Content {
				return "the agent's context is not the one the memory built"
			}
			block := built.Block
			if block.Empty() {
				if len(msgs) != 2 {
					return fmt.Sprintf("%d messages for an empty knowledge context", len(msgs))
				}
				return ""
			}
			withKnowledge++
			if len(msgs) != 3 {
				return fmt.Sprintf("%d messages, want system, knowledge, user", len(msgs))
			}
			if err := ragmemtest.CheckMessage(block, openai.ChatCompletionMessage{Role: msgs[1].Role, Content: msgs[1].Content}); err != nil {
				return err.Error()
			}
			return ""
		},
		ragmemtest.GenText(0, 40), ragmemtest.GenQuery(),
	))
	if withKnowledge == 0 {
		t.Error("no run retrieved any knowledge; P2 was not exercised")
	}
}

// P3 and P9 (docs/spec.md), for the blocks the engine builds: each source
// is a retrieved chunk with that chunk's url, title and indexing date,
// numbered from 1 in descending score; its text is the chunk's, or a prefix
// of it when cut; the profile comes first; the summary counts the sources
// shown and the chunks found; the counts are those of the text sent.
func TestProperty3And9EngineBlocks(t *testing.T) {
	params := ragmemtest.Parameters(t)
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	var clock atomic.Int64 // read by the engine's background worker too
	clock.Store(now.Add(-50 * 24 * time.Hour).UnixNano())
	e, _ := corpusEngine(t, params.Seed(), 40, &ragmemtest.EngineOptions{Now: func() time.Time { return time.Unix(0, clock.Load()).UTC() }})
	recs, err := e.Store().Records(bg, index.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	byID := map[string]index.Record{}
	for _, r := range recs {
		byID[r.ID] = r
	}
	clock.Store(now.UnixNano())
	if _, err := e.PreferenceStore().Add(bg, prefs.Expertise, "User is a <b>backend</b> developer & writes Go"); err != nil {
		t.Fatal(err)
	}
	counter := ragmemtest.TokenOracle("gpt-4o")
	shown := 0
	check(t, params, "blocks carry their chunks' attribution, profile first", prop.ForAll(
		func(q string, limit int) string {
			c, err := e.ContextFor(bg, q, rag.ContextOptions{Model: "gpt-4o", ModelContextLimit: limit, SystemPromptTokens: 300})
			if err != nil {
				return err.Error()
			}
			b := c.Block
			if err := ragmemtest.CheckBlock(b, c.Text); err != nil {
				return err.Error()
			}
			if err := ragmemtest.CheckMessage(b, c.Message); err != nil {
				return err.Error()
			}
			found, err := e.Retrieve(bg, q, nil)
			if err != nil {
				return err.Error()
			}
			if c.Budgets.KnowledgeBudget > 0 && b.TotalFound != len(found) {
				return fmt.Sprintf("total found %d, the search finds %d", b.TotalFound, len(found))
			}
			urls := map[string]bool{}
			for _, s := range b.Sources {
				urls[s.URL] = true
			}
			want := fmt.Sprintf("Showing %d of %d passages", len(b.Sources), b.TotalFound)
			switch len(urls) {
			case 0:
			case 1:
				want += ", from 1 source"
			default:
				want += fmt.Sprintf(", from %d sources", len(urls))
			}
			if b.Summary != want {
				return "summary " + b.Summary + ", want " + want
			}
			if !strings.Contains(b.UserProfile, "backend") {
				return fmt.Sprintf("profile %q", b.UserProfile)
			}
			for i, s := range b.Sources {
				r, ok := byID[s.ChunkID]
				if !ok {
					return fmt.Sprintf("source %d is chunk %q, which is not stored", i+1, s.ChunkID)
				}
				if s.Index != i+1 || s.URL != r.SourceURL || s.Title != r.Title || !s.Retrieved.Equal(r.CreatedAt) || s.Age != "1 month ago" {
					return fmt.Sprintf("source %d is %d %q %q %v %q, its chunk %q %q %v", i+1, s.Index, s.URL, s.Title, s.Retrieved, s.Age, r.SourceURL, r.Title, r.CreatedAt)
				}
				whole := strings.TrimRight(r.Content, " \n\t")
				if s.Truncated != (s.Content != whole) || !strings.HasPrefix(whole, s.Content) || s.Content == "" {
					return fmt.Sprintf("source %d (truncated %v) is not its chunk or a prefix of it", i+1, s.Truncated)
				}
				if i > 0 && s.Score > b.Sources[i-1].Score {
					return fmt.Sprintf("source %d scores higher than source %d", i+1, i)
				}
			}
			shown += len(b.Sources)
			if n := counter.Count(c.Text); b.TotalTokens != n || b.KnowledgeTokens != n-b.ProfileTokens {
				return fmt.Sprintf("block of %d tokens reports %d (knowledge %d, profile %d)", n, b.TotalTokens, b.KnowledgeTokens, b.ProfileTokens)
			}
			return ""
		},
		ragmemtest.GenQuery(), gen.IntRange(1800, 20000),
	))
	if shown == 0 {
		t.Error("no block held a source; P3 was not exercised")
	}
}

// Engine configuration (docs/spec.md): zero or negative fields of a
// configuration take their documented defaults; the block retrieves what
// the configured search returns, keeps the profile within its budget and the
// knowledge within the knowledge budget.
func TestPropertyEngineConfig(t *testing.T) {
	params := ragmemtest.Parameters(t)
	e, _ := corpusEngine(t, params.Seed(), 30, nil)
	for i, p := range []string{"User is a backend developer who writes Go every day", "User prefers short answers with code examples",
		"User works on search engines and vector databases", "Always answer in plain English without jargon"} {
		if _, err := e.PreferenceStore().Add(bg, []prefs.Type{prefs.Expertise, prefs.Style, prefs.Domain, prefs.Custom}[i], p); err != nil {
			t.Fatal(err)
		}
	}
	counter := budget.CounterForModel("")
	genConfig := gen.Struct(reflect.TypeOf(rag.Config{}), map[string]gopter.Gen{
		"TopK":                gen.IntRange(-2, 8),
		"SimilarityThreshold": gen.OneConstOf(0.0, -1.0, 0.2, 0.5),
		"KnowledgeBudget":     gen.OneConstOf(0, -5, 150, 600, 3000),
		"PreferenceBudget":    gen.OneGenOf(gen.OneConstOf(0, -1), gen.IntRange(1, 80)),
		"SearchMode":          gen.OneConstOf(search.Mode(""), search.Hybrid, search.Vector, search.FullText),
		"Fusion":              gen.OneConstOf(search.Fusion(""), search.Relative, search.RRF),
	})
	check(t, params, "configuration defaults and bounds", prop.ForAll(
		func(c rag.Config, q string, kb int) string {
			eff := c
			if eff.TopK <= 0 {
				eff.TopK = 5
			}
			if eff.SimilarityThreshold == 0 {
				eff.SimilarityThreshold = 0.3
			}
			if eff.KnowledgeBudget <= 0 {
				eff.KnowledgeBudget = 2000
			}
			switch {
			case eff.PreferenceBudget == 0:
				eff.PreferenceBudget = 500
			case eff.PreferenceBudget < 0:
				eff.PreferenceBudget = 0
			}
			if eff.SearchMode == "" {
				eff.SearchMode = search.Hybrid
			}
			if eff.Fusion == "" {
				eff.Fusion = search.Relative
			}
			b, err := e.BuildRAGContext(bg, q, kb, c)
			if err != nil {
				return err.Error()
			}
			want, err := e.Retrieve(bg, q, &search.Options{Mode: eff.SearchMode, TopK: eff.TopK, SimilarityThreshold: eff.SimilarityThreshold, Fusion: eff.Fusion})
			if err != nil {
				return err.Error()
			}
			if kb <= 0 {
				want = nil
			}
			if b.TotalFound != len(want) {
				return fmt.Sprintf("found %d, the configured search %+v finds %d", b.TotalFound, eff, len(want))
			}
			for i, s := range b.Sources {
				if i >= len(want) || s.ChunkID != want[i].Record.ID {
					return fmt.Sprintf("source %d is not the search's result %d", i+1, i+1)
				}
			}
			if b.ProfileTokens > eff.PreferenceBudget {
				return fmt.Sprintf("profile of %d tokens for a preference budget of %d", b.ProfileTokens, eff.PreferenceBudget)
			}
			if full := counter.Count("<user_profile>\n" + rag.EscapeText(b.UserProfile) + "\n</user_profile>\n"); b.UserProfile != "" && full != b.ProfileTokens {
				return fmt.Sprintf("profile counted %d, is %d", b.ProfileTokens, full)
			}
			if eff.PreferenceBudget >= 80 && strings.Count(b.UserProfile, "\n") != 3 {
				return fmt.Sprintf("a budget of %d holds only %q", eff.PreferenceBudget, b.UserProfile)
			}
			if len(b.Sources) > 0 && b.KnowledgeTokens > kb {
				return fmt.Sprintf("knowledge of %d tokens for a budget of %d", b.KnowledgeTokens, kb)
			}
			cx, err := e.ContextFor(bg, q, rag.ContextOptions{ModelContextLimit: 20000, SystemPromptTokens: 100, ResponseReserve: 100, Config: &c})
			if err != nil {
				return err.Error()
			}
			if cx.Budgets.KnowledgeBudget != min(eff.KnowledgeBudget, (cx.Budgets.TotalAvailable-cx.Block.ProfileTokens)*3/10) {
				return fmt.Sprintf("knowledge budget %d with a configured base of %d", cx.Budgets.KnowledgeBudget, eff.KnowledgeBudget)
			}
			return ""
		},
		genConfig, gen.OneGenOf(ragmemtest.GenQuery(), gen.Const("")), gen.OneGenOf(gen.Const(0), gen.IntRange(1, 2500)),
	))
}

// P4 (docs/spec.md): the budget formula, exactly, for any inputs.
func TestProperty4BudgetCalculation(t *testing.T) {
	ragmemtest.Run(t, "knowledge budget = min(base, (available − preference) × 0.3)", prop.ForAll(
		func(p ragmemtest.BudgetParams) string {
			return ragmemtest.ErrString(ragmemtest.CheckBudgets(p, p.Budgets()))
		},
		ragmemtest.GenBudgetParams(),
	))
}

// P5 (docs/spec.md): chunks of a page indexed through the background
// indexer carry its URL, title and a creation time within a second of the
// call.
func TestProperty5PageMetadata(t *testing.T) {
	e := ragmemtest.NewEngine(t, nil)
	check(t, ragmemtest.Parameters(t), "page chunks carry url, title and createdAt", prop.ForAll(
		func(d index.Document) string {
			start := time.Now()
			id, err := e.IndexPageAsync(d)
			if err != nil {
				return err.Error()
			}
			if err := e.Flush(bg); err != nil {
				return err.Error()
			}
			if j, _ := e.LookupJob(id); j.State != index.JobDone {
				return fmt.Sprintf("job %+v", j)
			}
			recs, err := e.Store().Source(bg, d.SourceURL)
			if err != nil || len(recs) == 0 {
				return fmt.Sprintf("no chunks (%v)", err)
			}
			for _, c := range recs {
				if c.SourceURL != d.SourceURL || c.Title != d.Title {
					return fmt.Sprintf("chunk metadata %q %q", c.SourceURL, c.Title)
				}
				if c.CreatedAt.Before(start.Add(-time.Second)) || c.CreatedAt.After(time.Now().Add(time.Second)) {
					return fmt.Sprintf("createdAt %v is not the time of the call (%v)", c.CreatedAt, start)
				}
			}
			// Forget the page, so that a long run's store (and memory) stays
			// small.
			if _, err := e.Remove(bg, d.SourceURL); err != nil {
				return err.Error()
			}
			return ""
		},
		ragmemtest.GenDocument(),
	))
}

// writeCounter is a storage backend that counts the writes that reach it.
type writeCounter struct {
	driver.Backend
	writes atomic.Int64
}

func (w *writeCounter) Apply(ctx context.Context, b *driver.Batch) error {
	w.writes.Add(1)
	return w.Backend.Apply(ctx, b)
}

func (w *writeCounter) SetMeta(ctx context.Context, k, v string) error {
	w.writes.Add(1)
	return w.Backend.SetMeta(ctx, k, v)
}

// P6 (docs/spec.md): re-indexing identical content writes nothing at all
// (no batch reaches the store and its journal does not move), and changed
// content is replaced in one write by exactly the chunks of the new
// version.
func TestProperty6Idempotence(t *testing.T) {
	lb, err := local.Open(bg, "p6", &local.Options{InMemory: true, Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	be := &writeCounter{Backend: lb}
	e, err := rag.Open(bg, "", &rag.Options{Backend: be, Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	check(t, ragmemtest.Parameters(t), "re-indexing is a no-op; changes replace", prop.ForAll(
		func(d index.Document, repeats int, extra string) string {
			if _, err := e.IndexDocument(bg, d); err != nil {
				return err.Error()
			}
			first, _ := e.Store().Source(bg, d.SourceURL)
			w0 := be.writes.Load()
			st0, _ := lb.Stats(bg)
			for i := 0; i < repeats; i++ {
				res, err := e.IndexDocument(bg, d)
				if err != nil {
					return err.Error()
				}
				if !res.Unchanged || res.Chunks != len(first) || res.Removed != 0 {
					return fmt.Sprintf("identical re-index reported %+v", res)
				}
				if w := be.writes.Load(); w != w0 {
					return fmt.Sprintf("identical re-index wrote %d times", w-w0)
				}
				if st, _ := lb.Stats(bg); !st.LastSync.Equal(st0.LastSync) {
					return "identical re-index moved the journal"
				}
			}
			if now, _ := e.Store().Source(bg, d.SourceURL); !reflect.DeepEqual(now, first) {
				return "identical re-index changed the stored chunks"
			}
			changed := d
			changed.Content = d.Content + " " + extra
			res, err := e.IndexDocument(bg, changed)
			if err != nil {
				return err.Error()
			}
			if w := be.writes.Load(); w != w0+1 {
				return fmt.Sprintf("a changed document took %d writes, want one atomic batch", w-w0)
			}
			changed.DocType = index.DocKnowledge
			hash := engine.ContentHash(&changed)
			want := chunk.Split(changed.Content, changed.Format, nil)
			recs, _ := e.Store().Source(bg, d.SourceURL)
			if res.Unchanged || res.ContentHash != hash || res.Chunks != len(want) || res.Removed != len(first) || len(recs) != len(want) {
				return fmt.Sprintf("changed document: %+v, %d chunks stored, want %d replacing %d", res, len(recs), len(want), len(first))
			}
			for i, r := range recs {
				if r.ID != engine.ChunkID(d.SourceURL, hash, i) || r.Content != want[i].Text || r.ContentHash != hash || r.Position != i {
					return fmt.Sprintf("chunk %d is %s %q, want chunk %d of the new version", i, r.ID, r.Content, i)
				}
			}
			return ""
		},
		ragmemtest.GenDocument(), gen.IntRange(1, 3), ragmemtest.GenText(1, 100),
	))
}

// P7 and P8 (docs/spec.md), both safety and liveness, counted by
// tiktoken-go: selection takes whole items by descending score while they
// fit; the first that does not fit is cut to its longest sentence prefix
// that fits, or dropped; nothing else is taken.
func TestProperty7And8Selection(t *testing.T) {
	counter := &memoCounter{c: ragmemtest.TokenOracle("gpt-4o"), seen: map[string]int{}}
	ragmemtest.Run(t, "selection by score, cut at a sentence", prop.ForAll(
		func(c ragmemtest.Candidates) string {
			return ragmemtest.ErrString(ragmemtest.CheckSelection(c, budget.Select(c.Items, c.Budget, counter), counter, nil))
		},
		ragmemtest.GenCandidates(),
	))
}

// memoCounter remembers counts: Select and the checker count the same
// texts, and tiktoken-go is slow.
type memoCounter struct {
	mu   sync.Mutex
	c    budget.Counter
	seen map[string]int
}

func (m *memoCounter) Count(s string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	n, ok := m.seen[s]
	if !ok {
		n = m.c.Count(s)
		m.seen[s] = n
	}
	return n
}

// P8 (docs/spec.md), for one text: the longest whole-sentence prefix within
// the budget, counted by tiktoken-go; the whole text when it fits.
func TestProperty8TruncateAtSentence(t *testing.T) {
	counter := ragmemtest.TokenOracle("gpt-4")
	ragmemtest.Run(t, "truncation keeps the longest sentence prefix that fits", prop.ForAll(
		func(text string, n int, nearWhole bool) string {
			whole := strings.TrimRight(text, " \n")
			maxTokens := n
			if nearWhole { // a budget within 3 tokens of the whole text, either way
				maxTokens = counter.Count(whole) + n%7 - 3
			}
			got, cut := budget.TruncateAtSentence(text, maxTokens, counter)
			want, wantCut := whole, false
			if counter.Count(whole) > max(maxTokens, 0) {
				want, wantCut = "", true
				ends := ragmemtest.PlainSentenceEnds(whole)
				for k := len(ends) - 1; k >= 0; k-- { // the longest that fits
					if e := ends[k]; e < len(whole) && counter.Count(whole[:e]) <= maxTokens {
						want = whole[:e]
						break
					}
				}
			}
			if got != want || cut != wantCut {
				return fmt.Sprintf("cut to %d bytes (%v), want %d bytes (%v)", len(got), cut, len(want), wantCut)
			}
			return ""
		},
		ragmemtest.GenText(1, 300), gen.IntRange(-5, 300), gen.Bool(),
	))
}

// P10 (docs/spec.md): explicit preference statements, in many phrasings,
// are detected with their type and content.
//
// Every form with every object of its lists is checked first, plainly
// phrased, so that each object is tried in every run whatever the seed.
func TestProperty10PreferenceDetection(t *testing.T) {
	for _, s := range ragmemtest.PlainStatements() {
		if msg := checkStatement(s); msg != "" {
			t.Error(msg)
		}
	}
	ragmemtest.Run(t, "explicit preference statements are detected", prop.ForAll(checkStatement, ragmemtest.GenStatement()))
}

// checkStatement is P10 for one statement: detected with exactly its type,
// content and match.
func checkStatement(s ragmemtest.Statement) string {
	in := prefs.DetectPreferenceIntent(s.Message)
	if in == nil {
		return fmt.Sprintf("not detected: %q", s.Message)
	}
	if in.Type != s.Type {
		return fmt.Sprintf("%q detected as %s, want %s", s.Message, in.Type, s.Type)
	}
	if in.Content != s.Content {
		return fmt.Sprintf("%q: content %q, want %q", s.Message, in.Content, s.Content)
	}
	if in.Match != s.Match {
		return fmt.Sprintf("%q: match %q, want %q", s.Message, in.Match, s.Match)
	}
	return ""
}

// P10 (docs/spec.md): a fact the user asks the assistant to remember is
// stored about the user, in the third person ("Remember that I do not eat
// meat": "User does not eat meat"). Every fact in every phrasing is checked
// first, plainly phrased.
func TestProperty10RememberedFacts(t *testing.T) {
	for _, s := range ragmemtest.PlainRemembered() {
		if msg := checkStatement(s); msg != "" {
			t.Error(msg)
		}
	}
	ragmemtest.Run(t, "remembered facts are stored in the third person", prop.ForAll(checkStatement, ragmemtest.GenRemembered()))
}

// othersWords wrap a message in the words of others: quoted lines, fenced
// code, material pasted after an introduction, reported speech. Quoting
// and pasting within a line take the message on one line.
var othersWords = []func(string) string{
	func(m string) string { return "> " + strings.ReplaceAll(m, "\n", "\n> ") },
	func(m string) string { return "Can you check this?\n> " + strings.ReplaceAll(m, "\n", "\n> ") },
	func(m string) string { return "```\n" + m + "\n```" },
	func(m string) string { return "Here is the log:\n```\n" + m + "\n```\nWhat does it mean?" },
	func(m string) string { return "~~~\n" + m + "\n~~~" },
	func(m string) string { return "Translate this: " + oneLine(m) },
	func(m string) string { return "Translate this:\n" + m },
	func(m string) string { return "Summarize the following:\n\n" + m },
	func(m string) string { return "Here's what she wrote: " + oneLine(m) },
	func(m string) string { return "He said, \"" + oneLine(m) + "\"" },
	func(m string) string { return "My manager wrote `" + oneLine(m) + "` in the ticket." },
	func(m string) string { return "Summarize email 2: " + oneLine(m) },
	func(m string) string {
		return "Please summarize the thread from 9:30 (https://mail.example.com/t/42): " + oneLine(m)
	},
}

// oneLine puts a message on one line.
func oneLine(m string) string { return strings.Join(strings.Fields(m), " ") }

// ownWordsAfter put the words of others before a message, on lines of
// their own: what follows is the user's again.
var ownWordsAfter = []func(string) string{
	func(m string) string { return "```\nfmt.Println(\"I'm a nurse\")\n```\n" + m },
	func(m string) string { return "~~~\nI'm a nurse\n~~~\n" + m },
	func(m string) string { return "> I'm a nurse\n" + m },
	func(m string) string { return "He said, \"I'm a nurse.\"\n" + m },
	func(m string) string { return "Translate this: bonjour.\n" + m },
}

// P10 (docs/spec.md): a statement in the words of others (quoted, fenced,
// pasted, reported) is never taken for the user's preference, and one that
// follows such words on a line of its own is detected as it would be alone.
func TestProperty10OthersWords(t *testing.T) {
	ragmemtest.Run(t, "the words of others are not the user's preferences", prop.ForAll(
		func(s ragmemtest.Statement, w, a int) string {
			if m := othersWords[w](s.Message); prefs.DetectPreferenceIntent(m) != nil {
				return fmt.Sprintf("detected in the words of others: %q", m)
			}
			m := ownWordsAfter[a](s.Message)
			in := prefs.DetectPreferenceIntent(m)
			if in == nil || in.Type != s.Type || in.Content != s.Content || in.Match != s.Match {
				return fmt.Sprintf("%q: %+v, want %s %q (match %q)", m, in, s.Type, s.Content, s.Match)
			}
			return ""
		},
		ragmemtest.GenStatement(), gen.IntRange(0, len(othersWords)-1), gen.IntRange(0, len(ownWordsAfter)-1),
	))
}

// P10 (docs/spec.md), questions: a statement about the user put as a
// question ("I'm a nurse, right?") states nothing and is not detected; a
// request asked as a question ("Could you keep your answers short?") is the
// preference it requests, detected with its content and words.
func TestProperty10Questions(t *testing.T) {
	ragmemtest.Run(t, "questions state no preference, requests do", prop.ForAll(
		func(a ragmemtest.Asked) string {
			in := prefs.DetectPreferenceIntent(a.Message)
			if a.Type == "" {
				if in != nil {
					return fmt.Sprintf("%q is a question, detected as %s %q", a.Message, in.Type, in.Content)
				}
				return ""
			}
			if in == nil || in.Type != a.Type || in.Content != a.Content || in.Match != a.Match {
				return fmt.Sprintf("%q: %+v, want %s %q (match %q)", a.Message, in, a.Type, a.Content, a.Match)
			}
			return ""
		},
		ragmemtest.GenAsked(),
	))
}

// P10 (docs/spec.md), lead-ins: a statement after at most
// ragmemtest.MaxLeadIns greetings and fillers in its clause is detected as
// it would be alone; after more, detection stops reading the clause.
func TestProperty10LeadIns(t *testing.T) {
	ragmemtest.Run(t, "statements after at most seven fillers are detected", prop.ForAll(
		func(l ragmemtest.LeadIns) string {
			in := prefs.DetectPreferenceIntent(l.Message)
			if l.Fillers > ragmemtest.MaxLeadIns {
				if in != nil {
					return fmt.Sprintf("%q (%d fillers): detected %s %q", l.Message, l.Fillers, in.Type, in.Content)
				}
				return ""
			}
			if in == nil || in.Type != l.Type || in.Content != l.Content || in.Match != l.Match {
				return fmt.Sprintf("%q (%d fillers): %+v, want %s %q (match %q)", l.Message, l.Fillers, in, l.Type, l.Content, l.Match)
			}
			return ""
		},
		ragmemtest.GenLeadIns(),
	))
}

// P10 (docs/spec.md), the content's length: a statement whose content is at
// most prefs.MaxIntentContent runes keeps all of it; a longer one is cut to
// the longest prefix of at most that many runes that ends at a word
// boundary, unless that would drop half of the text or more (bytes of the
// first MaxIntentContent runes; one very long word): then it is cut inside
// the word, exactly at the cap. The cut is always at a rune boundary.
// The match is the statement's words, whole. A word boundary at exactly
// half of the text is checked first, in every run.
func TestProperty10ContentCap(t *testing.T) {
	const head = "User is a "
	x, y := strings.Repeat("x", (prefs.MaxIntentContent/2)-len(head)), strings.Repeat("y", 200)
	for _, o := range []string{x + " " + y, x + "x " + y, x[1:] + " " + y} {
		l := ragmemtest.LongStatement{Message: "I'm a " + o, Full: head + o, Match: "I'm a " + o}
		if msg := checkLong(l); msg != "" {
			t.Error(msg)
		}
	}
	ragmemtest.Run(t, "long contents are cut at the cap, at a word boundary", prop.ForAll(checkLong, ragmemtest.GenLongStatement()))
}

// checkLong is P10's content cap for one long statement.
func checkLong(l ragmemtest.LongStatement) string {
	in := prefs.DetectPreferenceIntent(l.Message)
	if in == nil || in.Type != prefs.Expertise || in.Match != l.Match {
		return fmt.Sprintf("%q: %+v", l.Message, in)
	}
	n := utf8.RuneCountInString(in.Content)
	capBytes := len(l.Full) // bytes of the first MaxIntentContent runes
	if r := []rune(l.Full); len(r) > prefs.MaxIntentContent {
		capBytes = len(string(r[:prefs.MaxIntentContent]))
	}
	switch {
	case utf8.RuneCountInString(l.Full) <= prefs.MaxIntentContent:
		if in.Content != l.Full {
			return fmt.Sprintf("content of %d runes cut to %d", utf8.RuneCountInString(l.Full), n)
		}
	case !strings.HasPrefix(l.Full, in.Content) || !utf8.ValidString(in.Content) || n > prefs.MaxIntentContent:
		return fmt.Sprintf("content %q (%d runes) is not a prefix of the statement's of at most %d runes", in.Content, n, prefs.MaxIntentContent)
	case l.Full[len(in.Content)] != ' ':
		// Inside a word: only a word that a cut at a word boundary would
		// drop with half of the text or more.
		if n != prefs.MaxIntentContent || 2*strings.LastIndexByte(in.Content, ' ') > capBytes {
			return fmt.Sprintf("content cut inside a word at %d runes, with a word boundary in its second half", n)
		}
	case 2*len(in.Content) <= capBytes:
		return fmt.Sprintf("content cut at a word boundary to %d of %d bytes: half of the text or more dropped", len(in.Content), capBytes)
	default:
		// The longest such prefix: the next word does not fit.
		next := strings.IndexByte(l.Full[len(in.Content)+1:], ' ')
		if next < 0 {
			next = len(l.Full) - len(in.Content) - 1
		}
		if m := utf8.RuneCountInString(l.Full[:len(in.Content)+1+next]); m <= prefs.MaxIntentContent {
			return fmt.Sprintf("content cut to %d runes, where the next word would fit (%d runes)", n, m)
		}
	}
	return ""
}

// storeOp is one operation on the preference store: add a statement (one
// of a few, in another case or spacing, empty, or of about MaxContentLen
// bytes) of some type, or remove a stored one (or an unknown id).
type storeOp struct {
	Remove  bool
	Type    int // index in prefTypes
	Content int // 0–3: storeContents; 4: white space only; 5: "Likes xxx…" of Long bytes
	Variant int // 0 as is, 1 upper case, 2 lower case, 3 spaced out
	Long    int
	Pick    int // which stored preference to remove (beyond them: an unknown id)
}

var (
	prefTypes     = []prefs.Type{prefs.Expertise, prefs.Domain, prefs.Style, prefs.Custom}
	storeContents = []string{"Likes tea", "Prefers short answers", "Works in genomics", "Is a nurse!"}
)

func (o storeOp) content() string {
	c := " \t "
	switch {
	case o.Content < len(storeContents):
		c = storeContents[o.Content]
	case o.Content > len(storeContents):
		c = "Likes " + strings.Repeat("x", max(0, o.Long-6))
	}
	switch o.Variant {
	case 1:
		c = strings.ToUpper(c)
	case 2:
		c = strings.ToLower(c)
	case 3:
		c = "  " + strings.ReplaceAll(c, " ", " \t ") + "\n"
	}
	return c
}

func genStoreOp() gopter.Gen {
	return gen.Struct(reflect.TypeOf(storeOp{}), map[string]gopter.Gen{
		"Remove":  gen.Frequency(map[int]gopter.Gen{4: gen.Const(false), 1: gen.Const(true)}),
		"Type":    gen.IntRange(0, len(prefTypes)-1),
		"Content": gen.IntRange(0, len(storeContents)+1),
		"Variant": gen.IntRange(0, 3),
		"Long":    gen.IntRange(prefs.MaxContentLen-2, prefs.MaxContentLen+2),
		"Pick":    gen.IntRange(0, 5),
	})
}

// samePref reports whether two preferences are the same statement with the
// same times.
func samePref(a, b prefs.Preference) bool {
	return a.ID == b.ID && a.Type == b.Type && a.Content == b.Content && a.CreatedAt.Equal(b.CreatedAt) && a.UpdatedAt.Equal(b.UpdatedAt)
}

// profileOf is the profile text of the stored preferences ps, oldest first
// (docs/spec.md, P11): one line per preference, "Type: content", ending
// with sentence punctuation; who the user is first, then what they work on,
// how answers should be written, and what else to remember.
func profileOf(ps []prefs.Preference) string {
	var lines []string
	for _, t := range prefTypes {
		for _, p := range ps {
			if p.Type != t {
				continue
			}
			line := p.Content
			if !strings.HasSuffix(line, "!") {
				line += "."
			}
			lines = append(lines, strings.ToUpper(string(t[:1]))+string(t[1:])+": "+line)
		}
	}
	return strings.Join(lines, "\n")
}

// P11 (docs/spec.md), the store: adding a statement stores it (cleaned of
// surrounding and repeated white space) under a new id, or returns the
// stored one of the same type that differs only in case and spacing; the
// same words under another type are another preference; an empty statement
// and one longer than prefs.MaxContentLen bytes are refused with their
// errors and change nothing. Removing takes away exactly one. The store
// lists exactly what was kept, oldest first, with the times Add returned,
// and formats its profile in the documented order; Clear reports how many it
// removed. When the index cannot be read any more, formatting falls back to
// the last list with the error, and adding fails: nothing is lost silently.
func TestPropertyPreferenceStore(t *testing.T) {
	ragmemtest.Run(t, "the preference store keeps exactly what it was given", prop.ForAll(
		func(ops []storeOp) string {
			e, err := ragmemtest.OpenEngine(bg, nil)
			if err != nil {
				return err.Error()
			}
			defer e.Close()
			st := e.PreferenceStore()
			var model []prefs.Preference
			for i, o := range ops {
				if o.Remove {
					id, want := "pref_unknown", false
					if o.Pick < len(model) {
						id, want = model[o.Pick].ID, true
						model = slices.Delete(model, o.Pick, o.Pick+1)
					}
					if ok, err := st.Remove(bg, id); ok != want || err != nil {
						return fmt.Sprintf("op %d: Remove(%s) = %v, %v, want %v", i, id, ok, err, want)
					}
				} else {
					typ, c := prefTypes[o.Type], o.content()
					clean := strings.Join(strings.Fields(c), " ")
					p, err := st.Add(bg, typ, c)
					switch {
					case clean == "":
						if !errors.Is(err, prefs.ErrEmpty) {
							return fmt.Sprintf("op %d: Add(%q) = %v, want ErrEmpty", i, c, err)
						}
					case len(clean) > prefs.MaxContentLen:
						if !errors.Is(err, prefs.ErrTooLong) {
							return fmt.Sprintf("op %d: Add of %d bytes = %v, want ErrTooLong", i, len(clean), err)
						}
					case err != nil:
						return fmt.Sprintf("op %d: Add(%s, %d bytes): %v", i, typ, len(clean), err)
					default:
						k := slices.IndexFunc(model, func(q prefs.Preference) bool {
							return q.Type == typ && strings.EqualFold(q.Content, clean)
						})
						if k >= 0 {
							if !samePref(p, model[k]) {
								return fmt.Sprintf("op %d: Add(%s, %q) = %+v, want the stored %+v", i, typ, c, p, model[k])
							}
							break
						}
						if p.ID == "" || slices.ContainsFunc(model, func(q prefs.Preference) bool { return q.ID == p.ID }) ||
							p.Type != typ || p.Content != clean || p.CreatedAt.IsZero() || !p.UpdatedAt.Equal(p.CreatedAt) ||
							len(model) > 0 && p.CreatedAt.Before(model[len(model)-1].CreatedAt) {
							return fmt.Sprintf("op %d: Add(%s, %q) = %+v: want a new preference after %d", i, typ, c, p, len(model))
						}
						model = append(model, p)
					}
				}
				got, err := st.List(bg)
				if err != nil {
					return err.Error()
				}
				if len(got) != len(model) {
					return fmt.Sprintf("op %d: %d preferences listed, want %d", i, len(got), len(model))
				}
				for k := range got {
					if g, w := got[k], model[k]; !samePref(g, w) {
						return fmt.Sprintf("op %d: preference %d listed as %+v, want %+v", i, k, g, w)
					}
				}
				if f, want := prefs.Format(got, 1<<20, budget.CounterForModel("")), profileOf(model); f != want {
					return fmt.Sprintf("op %d: profile %q, want %q", i, f, want)
				}
			}
			n, err := st.Clear(bg)
			if n != len(model) || err != nil {
				return fmt.Sprintf("Clear = %d, %v, want %d", n, err, len(model))
			}
			if got, err := st.List(bg); len(got) != 0 || err != nil {
				return fmt.Sprintf("after Clear: %d preferences, %v", len(got), err)
			}
			// The index goes away: the last list is still the profile.
			p, err := st.Add(bg, prefs.Style, "Prefers tables")
			if err != nil {
				return err.Error()
			}
			if err := e.Close(); err != nil {
				return err.Error()
			}
			text, err := st.FormatForContext(bg, 1000, budget.CounterForModel(""))
			if err == nil || text != profileOf([]prefs.Preference{p}) {
				return fmt.Sprintf("closed index: profile %q, %v; want the last list and an error", text, err)
			}
			if _, err := st.Add(bg, prefs.Custom, "Likes coffee"); err == nil {
				return "closed index: Add succeeded"
			}
			if cached, ok := st.Cached(); !ok || len(cached) != 1 || !samePref(cached[0], p) {
				return fmt.Sprintf("closed index: cached %+v, %v", cached, ok)
			}
			return ""
		},
		ragmemtest.ListOf(genStoreOp(), 0, 12),
	))
}

// foreignPref is a preference record written by another version of the
// store or copied from another store: its type may be one this version does
// not know, its update time malformed, missing or later than its creation.
type foreignPref struct {
	ID      int // "pref_<ID>": records share ids only by accident
	Type    int // index in foreignTypes
	Created int // minutes after a fixed time: records may share one
	Updated int // 0: no attribute, 1: malformed, 2+: that many minutes after Created
}

var foreignTypes = []string{"expertise", "domain", "style", "custom", "mood", ""}

// P11 (docs/spec.md), the store reads what others wrote: preference records
// in the index that another version wrote or a copy brought are listed with
// their id, content and creation time; a type this version does not know is
// read as custom; the update time is the record's own when it parses, the
// creation time otherwise; records created at the same instant are listed
// in id order.
func TestPropertyPreferenceRecordsRead(t *testing.T) {
	ragmemtest.Run(t, "preference records of others are read as documented", prop.ForAll(
		func(fs []foreignPref) string {
			lb, err := local.Open(bg, "prefs", &local.Options{InMemory: true, Logger: quietLogger()})
			if err != nil {
				return err.Error()
			}
			ix, err := engine.Open(bg, "", &engine.Options{Backend: lb, Logger: quietLogger()})
			if err != nil {
				_ = lb.Close()
				return err.Error()
			}
			defer ix.Close()
			base := time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)
			want := map[string]prefs.Preference{}
			var recs []index.Record
			for _, f := range fs {
				id := fmt.Sprintf("pref_%02d", f.ID)
				if _, dup := want[id]; dup {
					continue
				}
				p := prefs.Preference{ID: id, Type: prefs.Custom, Content: "Statement " + id, CreatedAt: base.Add(time.Duration(f.Created) * time.Minute)}
				p.UpdatedAt = p.CreatedAt
				attrs := map[string]string{"preferenceType": foreignTypes[f.Type]}
				if typ, err := prefs.ParseType(foreignTypes[f.Type]); err == nil {
					p.Type = typ
				}
				switch {
				case f.Updated == 1:
					attrs["updatedAt"] = "yesterday"
				case f.Updated >= 2:
					p.UpdatedAt = p.CreatedAt.Add(time.Duration(f.Updated) * time.Minute)
					attrs["updatedAt"] = p.UpdatedAt.Format(time.RFC3339Nano)
				}
				want[id] = p
				recs = append(recs, index.Record{ID: id, SourceURL: prefs.SourceURL, Title: "User Preference", Content: p.Content,
					DocType: index.DocPreference, CreatedAt: p.CreatedAt, End: len(p.Content), Attrs: attrs})
			}
			if len(recs) > 0 {
				if err := ix.Put(bg, recs); err != nil {
					return err.Error()
				}
			}
			got, err := prefs.NewStore(ix).List(bg)
			if err != nil {
				return err.Error()
			}
			if len(got) != len(want) {
				return fmt.Sprintf("%d preferences listed, want %d", len(got), len(want))
			}
			for k, g := range got {
				if w := want[g.ID]; !samePref(g, w) {
					return fmt.Sprintf("listed %+v, want %+v", g, w)
				}
				if k > 0 {
					prev := got[k-1]
					if g.CreatedAt.Before(prev.CreatedAt) || g.CreatedAt.Equal(prev.CreatedAt) && g.ID < prev.ID {
						return fmt.Sprintf("%s listed after %s: want oldest first, then by id", g.ID, prev.ID)
					}
				}
			}
			return ""
		},
		ragmemtest.ListOf(gen.Struct(reflect.TypeOf(foreignPref{}), map[string]gopter.Gen{
			"ID":      gen.IntRange(0, 20),
			"Type":    gen.IntRange(0, len(foreignTypes)-1),
			"Created": gen.IntRange(0, 2),
			"Updated": gen.IntRange(0, 4),
		}), 0, 6),
	))
}

// maxFalsePositiveRate bounds P10's false positives (docs/spec.md).
const maxFalsePositiveRate = 0.02

// corpusSentences returns the sentences of the sample corpus in
// internal/sample/corpus: documentation prose that states no preference of
// its reader.
func corpusSentences(t *testing.T) []string {
	t.Helper()
	var out []string
	paths, _ := filepath.Glob("internal/sample/corpus/*")
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		text := string(b)
		if strings.HasSuffix(p, ".html") {
			text, _ = chunk.ExtractHTML(text)
		}
		for _, sp := range chunk.Sentences(text) {
			s := strings.TrimSpace(text[sp.Start:sp.End])
			if len(strings.Fields(s)) >= 3 && !strings.HasPrefix(s, "#") {
				out = append(out, s)
			}
		}
	}
	if len(out) < 50 {
		t.Fatalf("only %d corpus sentences", len(out))
	}
	return out
}

// P10 (docs/spec.md), negatives: ordinary messages that state no
// preference (generated questions, other people's jobs, passing states,
// hypotheticals, quoted and reported speech, requests about pasted text,
// statements about things; and the sentences of the sample corpus) are
// rarely taken for one: at most 2% false positives. The rate is logged.
func TestProperty10FalsePositiveRate(t *testing.T) {
	params := ragmemtest.Parameters(t)
	n := max(2000, ragmemtest.Runs(t))
	gp := gopter.DefaultGenParameters().CloneWithSeed(params.Seed())
	g := ragmemtest.GenOrdinary()
	var msgs []string
	for len(msgs) < n {
		if v, ok := g(gp).Retrieve(); ok {
			msgs = append(msgs, v.(ragmemtest.Ordinary).Message)
		}
	}
	msgs = append(msgs, corpusSentences(t)...)
	var fps []string
	for _, m := range msgs {
		if in := prefs.DetectPreferenceIntent(m); in != nil {
			fps = append(fps, fmt.Sprintf("%q -> %s %q", m, in.Type, in.Content))
		}
	}
	rate := float64(len(fps)) / float64(len(msgs))
	t.Logf("P10 false positives: %d of %d ordinary messages (%.2f%%)", len(fps), len(msgs), 100*rate)
	for i, fp := range fps {
		if i == 10 {
			t.Logf("… and %d more", len(fps)-10)
			break
		}
		t.Logf("false positive: %s", fp)
	}
	if rate > maxFalsePositiveRate {
		t.Errorf("false-positive rate %.2f%% is above %.0f%%", 100*rate, 100*maxFalsePositiveRate)
	}
}

// P11 (docs/spec.md), counted by tiktoken-go: every preference is in the
// profile whatever the query, and the profile's real token count is
// deducted before the knowledge budget is computed.
func TestProperty11PreferenceInclusion(t *testing.T) {
	params := ragmemtest.Parameters(t)
	e, _ := corpusEngine(t, params.Seed(), 20, nil)
	check(t, params, "preferences always included and deducted first", prop.ForAll(
		func(ps []ragmemtest.Preference, q string, limit int, model string) string {
			if _, err := e.PreferenceStore().Clear(bg); err != nil {
				return err.Error()
			}
			for _, p := range ps {
				if _, err := e.PreferenceStore().Add(bg, p.Type, p.Content); err != nil {
					return err.Error()
				}
			}
			const sys, reserve = 200, 500
			c, err := e.ContextFor(bg, q, rag.ContextOptions{Model: model, ModelContextLimit: limit, SystemPromptTokens: sys, ResponseReserve: reserve})
			if err != nil {
				return err.Error()
			}
			o := ragmemtest.TokenOracle(model)
			for _, p := range ps {
				if !strings.Contains(c.Block.UserProfile, p.Content) {
					return fmt.Sprintf("profile %q lacks %q", c.Block.UserProfile, p.Content)
				}
			}
			profile := o.Count("<user_profile>\n" + c.Block.UserProfile + "\n</user_profile>\n")
			if len(ps) == 0 {
				profile = 0
			}
			avail := limit - sys - o.Count(q) - reserve
			want := min(2000, (avail-profile)*3/10)
			b := c.Budgets
			if c.UserQueryTokens != o.Count(q) || c.Block.ProfileTokens != profile || b.PreferenceBudget != profile ||
				b.TotalAvailable != avail || b.KnowledgeBudget != want {
				return fmt.Sprintf("budgets %+v, profile %d tokens, query %d: want available %d, preference %d, knowledge %d",
					b, c.Block.ProfileTokens, c.UserQueryTokens, avail, profile, want)
			}
			if n := o.Count(c.Text); c.Block.TotalTokens != n || c.Block.TotalTokens-c.Block.ProfileTokens > b.KnowledgeBudget && len(c.Block.Sources) > 0 {
				return fmt.Sprintf("block of %d tokens reports %d, knowledge budget %d", n, c.Block.TotalTokens, b.KnowledgeBudget)
			}
			return ""
		},
		ragmemtest.ListOf(ragmemtest.GenPreference(), 0, 3),
		gen.OneGenOf(ragmemtest.GenQuery(), gen.Const("")), gen.IntRange(2000, 200000), gen.OneConstOf("gpt-4o", "gpt-4", "llama-3"),
	))
}

// p12Web is a WebSearcher returning the results prepared for the current case.
type p12Web struct{ results []agent.WebResult }

func (w *p12Web) SearchWeb(_ context.Context, _ string, limit int) ([]agent.WebResult, error) {
	return w.results[:min(limit, len(w.results))], nil
}

// p12Part is one sentence of a generated model answer: a word followed by
// citation markers, possibly with a label the model claims.
type p12Part struct {
	Word  string
	Cites []int
	Label int // 0: none, 1: "Web Source", 2: "Knowledge Base"
}

// p12Case is one case of P12: web results, a query, and the answer the
// model gives (markers, cited numbers valid, out of range or invented, a
// conflict flag, sometimes no JSON at all).
type p12Case struct {
	Web        []string // web result titles; snippets are derived from them
	Query      string
	Parts      []p12Part
	Cited      []int
	Conflict   bool
	Structured bool
}

// p12Model is an OpenAI-compatible chat server that answers with the
// current case.
type p12Model struct {
	mu sync.Mutex
	c  p12Case
}

func (m *p12Model) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	var body struct {
		Messages []struct{ Role, Content string } `json:"messages"`
	}
	if err := json.NewDecoder(req.Body).Decode(&body); err != nil || len(body.Messages) < 2 {
		http.Error(w, `{"error":{"message":"bad request","type":"invalid_request_error"}}`, http.StatusBadRequest)
		return
	}
	m.mu.Lock()
	c := m.c
	m.mu.Unlock()
	var ans strings.Builder
	for _, p := range c.Parts {
		ans.WriteString(p.Word)
		if p.Label > 0 {
			fmt.Fprintf(&ans, " (%s)", []string{"", "Web Source", "Knowledge Base"}[p.Label])
		}
		for _, n := range p.Cites {
			fmt.Fprintf(&ans, " [%d]", n)
		}
		ans.WriteString(". ")
	}
	content := strings.TrimSpace(ans.String())
	if c.Structured {
		b, _ := json.Marshal(map[string]any{"answer": content, "cited": c.Cited, "conflict": c.Conflict, "conflict_description": "sources differ"})
		content = string(b)
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{
		"id": "chatcmpl-p12", "object": "chat.completion", "created": 1, "model": "gpt-4o",
		"choices": []any{map[string]any{"index": 0, "message": map[string]any{"role": "assistant", "content": content}, "finish_reason": "stop"}},
	})
}

func genP12Case() gopter.Gen {
	cite := gen.IntRange(-1, 12)
	part := gen.Struct(reflect.TypeOf(p12Part{}), map[string]gopter.Gen{
		"Word":  ragmemtest.GenWord(),
		"Cites": ragmemtest.ListOf(cite, 0, 2),
		"Label": gen.IntRange(0, 2),
	})
	return gen.Struct(reflect.TypeOf(p12Case{}), map[string]gopter.Gen{
		"Web":        ragmemtest.ListOf(ragmemtest.GenQuery(), 0, 5),
		"Query":      gen.Frequency(map[int]gopter.Gen{3: ragmemtest.GenQuery(), 1: gen.Const("zyzzyva quokka")}),
		"Parts":      ragmemtest.ListOf(part, 0, 5),
		"Cited":      ragmemtest.ListOf(cite, 0, 3),
		"Conflict":   gen.Bool(),
		"Structured": gen.Frequency(map[int]gopter.Gen{4: gen.Const(true), 1: gen.Const(false)}),
	})
}

var p12MarkerRe = regexp.MustCompile(`\[(\d{1,3})\]`)

// P12 (docs/spec.md): when an answer draws on web results and stored
// knowledge, its citations say which is which: every citation names a
// source that was actually retrieved, labelled "Web Source" or "Knowledge
// Base" by where that source came from (whatever the model claimed), and no
// invented number survives in the answer.
func TestProperty12DualSourceCitation(t *testing.T) {
	params := ragmemtest.Parameters(t)
	e, _ := corpusEngine(t, params.Seed(), 40, nil)
	model := &p12Model{}
	srv := httptest.NewServer(model)
	defer srv.Close()
	oc := openai.DefaultConfig("k")
	oc.BaseURL = srv.URL + "/v1"
	llm := rag.LLM{Client: openai.NewClientWithConfig(oc), Model: "gpt-4o"}
	both := 0
	check(t, params, "citations distinguish Web Source from Knowledge Base", prop.ForAll(
		func(c p12Case) string {
			web := &p12Web{}
			for i, title := range c.Web {
				web.results = append(web.results, agent.WebResult{
					Title: title + " </search_sources>", URL: fmt.Sprintf("https://web.example/%d/%s", i, strings.ReplaceAll(title, " ", "-")), Snippet: "About " + title + ".",
				})
			}
			model.mu.Lock()
			model.c = c
			model.mu.Unlock()
			res, err := agent.EnhancedSearch(bg, c.Query, web, llm, &agent.EnhanceOptions{Memory: e, Logger: quietLogger()})
			if err != nil {
				if errors.Is(err, agent.ErrNoSources) && res != nil && len(res.Sources) == 0 && len(web.results) == 0 {
					return ""
				}
				return err.Error()
			}
			// The numbered sources are exactly what was retrieved: memory, then web.
			if len(res.Sources) != len(res.MemoryResults)+len(web.results) {
				return fmt.Sprintf("%d sources for %d memory and %d web results", len(res.Sources), len(res.MemoryResults), len(web.results))
			}
			for i, s := range res.Sources {
				wantKind, wantURL := agent.MemorySource, ""
				if i < len(res.MemoryResults) {
					wantURL = res.MemoryResults[i].URL
				} else {
					wantKind, wantURL = agent.WebSource, web.results[i-len(res.MemoryResults)].URL
				}
				if s.Index != i+1 || s.Kind != wantKind || s.URL != wantURL {
					return fmt.Sprintf("source %d is %+v", i+1, s)
				}
			}
			// Every citation is a retrieved source with its true label.
			labels := map[string]bool{}
			cited := map[int]bool{}
			for _, ct := range res.Citations {
				if ct.Index < 1 || ct.Index > len(res.Sources) {
					return fmt.Sprintf("citation %d of %d sources", ct.Index, len(res.Sources))
				}
				s := res.Sources[ct.Index-1]
				want := map[agent.SourceKind]string{agent.WebSource: "Web Source", agent.MemorySource: "Knowledge Base"}[s.Kind]
				if ct.Label != want || ct.Source != s.Kind || ct.URL != s.URL || ct.Title != s.Title {
					return fmt.Sprintf("citation %+v for source %+v", ct, s)
				}
				labels[ct.Label] = true
				cited[ct.Index] = true
			}
			for _, d := range res.Dropped {
				if d >= 1 && d <= len(res.Sources) {
					return fmt.Sprintf("dropped the retrieved source %d", d)
				}
			}
			for _, m := range p12MarkerRe.FindAllStringSubmatch(res.Answer, -1) {
				if n, _ := strconv.Atoi(m[1]); !cited[n] {
					return fmt.Sprintf("answer %q cites [%d], which is not a citation", res.Answer, n)
				}
			}
			// The rendered list shows the labels, one citation per line.
			lines := strings.Split(agent.FormatCitations(res.Citations), "\n")
			for i, ct := range res.Citations {
				if !strings.HasPrefix(lines[i], fmt.Sprintf("[%d] %s: ", ct.Index, ct.Label)) {
					return fmt.Sprintf("line %q for %+v", lines[i], ct)
				}
			}
			if labels["Web Source"] && labels["Knowledge Base"] {
				both++
			}
			// A disclaimer exactly when the model reported a conflict and
			// both kinds were retrieved.
			wantDisclaimer := c.Conflict && c.Structured && len(web.results) > 0 && len(res.MemoryResults) > 0
			if (res.ConflictDisclaimer != "") != wantDisclaimer {
				return fmt.Sprintf("disclaimer %q, want one: %v", res.ConflictDisclaimer, wantDisclaimer)
			}
			return ""
		},
		genP12Case(),
	))
	if both == 0 {
		t.Error("no case cited both web and memory sources; the generators do not exercise P12")
	}
}

// P13 (docs/spec.md): relative times read as the whole number of the
// largest unit, rounded down, in the past or the future.
func TestProperty13RelativeTime(t *testing.T) {
	now := time.Date(2026, 5, 17, 9, 30, 0, 0, time.UTC)
	units := []time.Duration{time.Minute, time.Hour, 24 * time.Hour, 30 * 24 * time.Hour, 365 * 24 * time.Hour}
	var edges []interface{}
	for _, u := range units {
		for _, k := range []time.Duration{1, 2, 11} {
			edges = append(edges, k*u-1, k*u, k*u+1)
		}
	}
	// Every edge, both ways, first: a unit's boundary is one value among
	// many random durations, which a run of 100 cases may miss.
	for _, d := range edges {
		for _, sign := range []time.Duration{1, -1} {
			then := now.Add(-sign * d.(time.Duration))
			if err := ragmemtest.CheckRelativeTime(then, now, rag.RelativeTime(then, now)); err != nil {
				t.Error(err)
			}
		}
	}
	ragmemtest.Run(t, "relative time formatting", prop.ForAll(
		func(d time.Duration, future, zero bool) string {
			if future {
				d = -d
			}
			then := now.Add(-d)
			if zero {
				then = time.Time{}
			}
			return ragmemtest.ErrString(ragmemtest.CheckRelativeTime(then, now, rag.RelativeTime(then, now)))
		},
		gen.OneGenOf(
			gen.OneConstOf(edges...),
			// Log-uniform from 1 s to 12 years, so that every unit is drawn
			// about equally often.
			gen.Float64Range(0, math.Log(float64(12*365*24*time.Hour/time.Second))).Map(func(x float64) time.Duration {
				return time.Duration(math.Exp(x) * float64(time.Second))
			}),
		),
		gen.Bool(), gen.Frequency(map[int]gopter.Gen{30: gen.Const(false), 1: gen.Const(true)}),
	))
}

// Chunk coverage (docs/spec.md): chunks are the source's own bytes, in
// order, and together hold every non-space character of it.
func TestPropertyChunksCoverSource(t *testing.T) {
	ragmemtest.Run(t, "chunks cover the source in order", prop.ForAll(
		func(d index.Document, maxTokens int) string {
			return ragmemtest.ErrString(ragmemtest.CheckChunks(d.Content, chunk.Split(d.Content, d.Format, &chunk.Options{MaxTokens: maxTokens, Overlap: maxTokens / 8})))
		},
		ragmemtest.GenDocument(), gen.IntRange(40, 500),
	))
}

// Query cache (docs/spec.md): caching query embeddings changes no result:
// an engine whose small cache evicts and hits answers every search, repeated
// or not, exactly as one that caches nothing.
func TestPropertyQueryCacheIsTransparent(t *testing.T) {
	params := ragmemtest.Parameters(t)
	docs := ragmemtest.Sample[[]index.Document](ragmemtest.GenCorpus(search.MinCalibrationChunks+10, search.MinCalibrationChunks+10), params.Seed())
	open := func(c *embed.QueryCache) *rag.Engine {
		e := ragmemtest.NewEngine(t, &ragmemtest.EngineOptions{QueryCache: c})
		if _, err := e.IndexDocuments(bg, docs); err != nil {
			t.Fatal(err)
		}
		// Calibrated before the searches (the engine's calibrator would
		// do it in the background, to the same weight).
		if _, err := search.Calibrate(bg, e.Store(), nil); err != nil {
			t.Fatal(err)
		}
		return e
	}
	cached := open(embed.NewQueryCache(&embed.QueryCacheOptions{MaxEntries: 3}))
	uncached := open(embed.NewQueryCache(&embed.QueryCacheOptions{MaxEntries: -1}))
	// A small pool of queries, so that many searches repeat one, with
	// variants that differ only in their last letters ("river forest",
	// "river forests", "river fores").
	var pool []string
	for _, q := range ragmemtest.Sample[[]string](gen.SliceOfN(3, ragmemtest.GenQuery()), params.Seed()) {
		pool = append(pool, q, q+"s", q[:len(q)-1])
	}
	check(t, params, "the query cache is transparent", prop.ForAll(
		func(i int, mode search.Mode, topK int) string {
			o := &search.Options{Mode: mode, TopK: topK, SimilarityThreshold: -1}
			a, err := cached.Retrieve(bg, pool[i], o)
			if err != nil {
				return err.Error()
			}
			b, err := uncached.Retrieve(bg, pool[i], o)
			if err != nil {
				return err.Error()
			}
			if !sameResults(a, b) {
				return fmt.Sprintf("%q: with the cache %s, without %s", pool[i], describe(a), describe(b))
			}
			return ""
		},
		gen.IntRange(0, len(pool)-1), gen.OneConstOf(search.Hybrid, search.Vector), gen.IntRange(1, 10),
	))
}

// reopenQuery is one search of the reopen property.
type reopenQuery struct {
	Query  string
	Mode   search.Mode
	Fusion search.Fusion
	TopK   int
}

// Reopening (docs/spec.md): a store closed and opened again answers every
// search exactly as before, after writes and a removal, its fusion
// calibrated (and not measured again on reopening).
func TestPropertyReopenSameResults(t *testing.T) {
	params := ragmemtest.Parameters(t)
	dir := t.TempDir()
	e, err := rag.Open(bg, dir, &rag.Options{Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	n := search.MinCalibrationChunks + 10
	docs := ragmemtest.Sample[[]index.Document](ragmemtest.GenCorpus(n, n), params.Seed())
	if _, err := e.IndexDocuments(bg, docs[:30]); err != nil {
		t.Fatal(err)
	}
	for _, d := range docs[30:] {
		if _, err := e.IndexDocument(bg, d); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := e.Remove(bg, docs[3].SourceURL); err != nil {
		t.Fatal(err)
	}
	// Close runs the calibration the writes made due; searches follow it.
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	if e, err = rag.Open(bg, dir, &rag.Options{Logger: quietLogger()}); err != nil {
		t.Fatal(err)
	}
	cal, ok := search.StoredCalibration(bg, e.Store())
	if !ok {
		t.Fatalf("a store of %d documents is not calibrated", n-1)
	}
	qs := ragmemtest.Sample[[]reopenQuery](gen.SliceOfN(ragmemtest.Runs(t), gen.Struct(reflect.TypeOf(reopenQuery{}), map[string]gopter.Gen{
		"Query":  ragmemtest.GenQuery(),
		"Mode":   gen.OneConstOf(search.Hybrid, search.Vector, search.FullText),
		"Fusion": gen.OneConstOf(search.Relative, search.RRF),
		"TopK":   gen.IntRange(1, 15),
	})), params.Seed())
	opts := func(q reopenQuery) *search.Options {
		return &search.Options{Mode: q.Mode, Fusion: q.Fusion, TopK: q.TopK, SimilarityThreshold: -1}
	}
	before := make([][]search.Result, len(qs))
	nonEmpty := 0
	for i, q := range qs {
		if before[i], err = e.Retrieve(bg, q.Query, opts(q)); err != nil {
			t.Fatal(err)
		}
		if len(before[i]) > 0 {
			nonEmpty++
		}
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	e, err = rag.Open(bg, dir, &rag.Options{Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if again, _ := search.StoredCalibration(bg, e.Store()); !reflect.DeepEqual(again, cal) {
		t.Errorf("the calibration changed on reopening: %+v, before %+v", again, cal)
	}
	failures := 0
	for i, q := range qs {
		res, err := e.Retrieve(bg, q.Query, opts(q))
		if err != nil {
			t.Fatal(err)
		}
		if !sameResults(res, before[i]) {
			failures++
			if failures <= 5 {
				t.Errorf("%+v: after reopening %s, before %s", q, describe(res), describe(before[i]))
			}
		}
	}
	if nonEmpty < len(qs)/2 {
		t.Errorf("only %d of %d queries found anything; the property tested little", nonEmpty, len(qs))
	}
	t.Logf("%d queries compared after reopening, %d with results", len(qs), nonEmpty)
}

// sameResults reports whether a and b hold the same records with the same
// scores (to 1e-9) in the same order.
func sameResults(a, b []search.Result) bool {
	if len(a) != len(b) {
		return false
	}
	for k := range a {
		if a[k].Record.ID != b[k].Record.ID || math.Abs(a[k].Score-b[k].Score) > 1e-9 {
			return false
		}
	}
	return true
}

func describe(rs []search.Result) string {
	var b strings.Builder
	for _, r := range rs {
		fmt.Fprintf(&b, "%s=%.6f ", r.Record.ID, r.Score)
	}
	return b.String()
}

// fusionOptions are the fusion settings hybrid properties draw.
type fusionOptions struct {
	Fusion    search.Fusion
	Alpha     float64
	Threshold float64
	TopK      int
}

func genFusionOptions() gopter.Gen {
	return gen.Struct(reflect.TypeOf(fusionOptions{}), map[string]gopter.Gen{
		"Fusion":    gen.OneConstOf(search.Relative, search.RRF, search.DBSF),
		"Alpha":     gen.OneConstOf(0.0, 0.05, 0.3, 0.5, 0.9, 1.0),
		"Threshold": gen.OneConstOf(-1.0, 0.1, 0.3, 0.6),
		"TopK":      gen.IntRange(1, 25),
	})
}

func (f fusionOptions) options() *search.Options {
	return &search.Options{Fusion: f.Fusion, Alpha: f.Alpha, SimilarityThreshold: f.Threshold, TopK: f.TopK}
}

// Hybrid ranking (docs/spec.md): a result first in both rankings, strictly,
// is first when they are fused, with either fusion and any weight.
func TestPropertyFusionFirstInBoth(t *testing.T) {
	ragmemtest.Run(t, "first in both lists is first fused", prop.ForAll(
		func(l ragmemtest.RankedLists, f fusionOptions) string {
			// Make id 20 (outside the generated pool) strictly first in both.
			top := 0.0
			for _, h := range l.BM25 {
				top = math.Max(top, h.Score)
			}
			l.BM25 = append([]ragmemtest.Hit{{ID: 20, Score: top + 1}}, l.BM25...)
			top = -1
			for _, h := range l.Vector {
				top = math.Max(top, h.Score)
			}
			l.Vector = append([]ragmemtest.Hit{{ID: 20, Score: top + 0.01}}, l.Vector...)
			text, vec := l.Hits()
			res := search.Fuse(text, vec, f.options())
			if len(res) == 0 {
				return "no results, though the top of both lists passes any threshold"
			}
			if res[0].Record.ID != ragmemtest.RecordID(20) {
				return fmt.Sprintf("%s is first (%.4f), not %s, first in both lists (%+v)", res[0].Record.ID, res[0].Score, ragmemtest.RecordID(20), res[0].Explanation)
			}
			return ""
		},
		ragmemtest.GenRankedLists(), genFusionOptions(),
	))
}

// Hybrid ranking (docs/spec.md): fusion is monotone in each list's score:
// raising one result's score in one list never lowers its fused score and
// never moves it down (or out of) the fused ranking.
func TestPropertyFusionMonotone(t *testing.T) {
	ragmemtest.Run(t, "fusion is monotone in each list's score", prop.ForAll(
		func(l ragmemtest.RankedLists, f fusionOptions, inVector bool, which int, raise float64) string {
			list := &l.BM25
			if inVector {
				list = &l.Vector
			}
			if len(*list) == 0 {
				return ""
			}
			raised := append([]ragmemtest.Hit(nil), (*list)...)
			target := raised[which%len(raised)].ID
			for i := range raised {
				if raised[i].ID == target {
					raised[i].Score += raise
					if inVector {
						raised[i].Score = math.Min(raised[i].Score, 1)
					}
					break // the first occurrence is the one Hits keeps
				}
			}
			text, vec := l.Hits()
			*list = raised
			text2, vec2 := l.Hits()
			id := ragmemtest.RecordID(target)
			opts := f.options()
			pos := func(rs []search.Result) (int, float64) {
				for i, r := range rs {
					if r.Record.ID == id {
						return i, r.Score
					}
				}
				return -1, 0
			}
			p0, s0 := pos(search.Fuse(text, vec, opts))
			p1, s1 := pos(search.Fuse(text2, vec2, opts))
			if p0 < 0 {
				return ""
			}
			// Scores are compared to 1e-12: a fused score that is mathematically
			// unchanged (DBSF maps the lower of two scores to 1/3 however low
			// it is) may move in its last bits.
			if p1 < 0 || p1 > p0 || s1 < s0-1e-12 {
				return fmt.Sprintf("raising %s by %.2f moved it from place %d (%.17g) to %d (%.17g)", id, raise, p0+1, s0, p1+1, s1)
			}
			return ""
		},
		ragmemtest.GenRankedLists(), genFusionOptions(), gen.Bool(), gen.IntRange(0, 14), gen.Float64Range(0, 10),
	))
}

// Hybrid ranking (docs/spec.md): feedback refines the vector ranking but
// keeps what a result's vector similarity means. With a dense embedder,
// every hybrid result's VectorSimilarity is its cosine similarity to the
// query itself (computed here from the stored vectors), the threshold
// passes a result only on BM25 or on that similarity, and with feedback off
// hybrid search is plain fusion of the two rankings.
func TestPropertyFeedbackKeepsTheQuerySimilarity(t *testing.T) {
	params := ragmemtest.Parameters(t)
	e, _ := corpusEngine(t, params.Seed(), 60, &ragmemtest.EngineOptions{Embedder: embed.NewRandProj(&embed.RandProjOptions{Dimension: 96})})
	ix := e.Store()
	knowledge := index.Filter{DocTypes: []string{index.DocKnowledge}}
	var refined atomic.Int64
	check(t, params, "feedback keeps each result's similarity to the query", prop.ForAll(
		func(q string, alpha, thr float64, topK int) string {
			opts := search.Options{Mode: search.Hybrid, Alpha: alpha, SimilarityThreshold: thr, TopK: topK, MaxPerSource: -1, KeepDuplicates: true}
			res, err := e.Retrieve(bg, q, &opts)
			if err != nil {
				return err.Error()
			}
			qv, err := ix.EmbedQuery(bg, q)
			if err != nil {
				return err.Error()
			}
			var qn float64
			for _, x := range qv {
				qn += float64(x) * float64(x)
			}
			ids := make([]string, len(res))
			for i, r := range res {
				ids[i] = r.Record.ID
			}
			vs, err := ix.Vectors(bg, ids)
			if err != nil {
				return err.Error()
			}
			text, err := ix.FullText(bg, q, 1, knowledge)
			if err != nil {
				return err.Error()
			}
			for i, r := range res {
				x := r.Explanation
				if x.VectorRank == 0 {
					continue
				}
				if x.FeedbackSimilarity != 0 {
					refined.Add(1)
				}
				var d float64
				for j := range qv {
					d += float64(qv[j]) * float64(vs[i][j])
				}
				if want := d / math.Sqrt(qn); math.Abs(x.VectorSimilarity-want) > 1e-4 {
					return fmt.Sprintf("%s: vector similarity %.5f, but its cosine to the query is %.5f (%+v)", r.Record.ID, x.VectorSimilarity, want, x)
				}
				if thr >= 0 && x.VectorSimilarity < thr && (x.BM25Rank == 0 || len(text) == 0 || x.BM25Score/text[0].Score < thr) {
					return fmt.Sprintf("%s passed threshold %.1f on neither side (%+v)", r.Record.ID, thr, x)
				}
			}
			off := opts
			off.Feedback = -1
			plain, err := e.Retrieve(bg, q, &off)
			if err != nil {
				return err.Error()
			}
			pool := max(10*topK, search.MinCandidatePool) // the default candidate pool
			th, _ := ix.FullText(bg, q, pool, knowledge)
			vh, _ := ix.Vector(bg, q, pool, knowledge)
			want := search.Fuse(th, vh, &off)
			if len(plain) != len(want) {
				return fmt.Sprintf("feedback off: %d results, plain fusion %d", len(plain), len(want))
			}
			for i := range plain {
				if plain[i].Record.ID != want[i].Record.ID || plain[i].Score != want[i].Score || plain[i].Explanation.FeedbackSimilarity != 0 {
					return fmt.Sprintf("feedback off, result %d: %s %.6f, plain fusion %s %.6f", i+1, plain[i].Record.ID, plain[i].Score, want[i].Record.ID, want[i].Score)
				}
			}
			return ""
		},
		ragmemtest.GenQuery(), gen.OneConstOf(0.05, 0.3, 0.7), gen.OneConstOf(-1.0, 0.1, 0.3, 0.6), gen.IntRange(1, 15),
	))
	if refined.Load() == 0 {
		t.Error("no result was refined by feedback; the property was not exercised")
	}
}

// warnLog is a slog handler that keeps the messages of the records at
// Warn level and above, so that properties can check what an engine logs.
type warnLog struct {
	mu   sync.Mutex
	msgs []string
}

func (w *warnLog) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelWarn }
func (w *warnLog) WithAttrs([]slog.Attr) slog.Handler           { return w }
func (w *warnLog) WithGroup(string) slog.Handler                { return w }
func (w *warnLog) Handle(_ context.Context, r slog.Record) error {
	w.mu.Lock()
	w.msgs = append(w.msgs, r.Message)
	w.mu.Unlock()
	return nil
}

// take returns the messages logged since the last call and forgets them.
func (w *warnLog) take() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	m := w.msgs
	w.msgs = nil
	return m
}

// requestCase is one model call of the context-request property: fields
// left at 0 or "" take their defaults.
type requestCase struct {
	Provider     string // "" or a provider prefix of the model name
	Model        string // the request's model
	ConfigModel  string // the configuration's model, which wins when set
	Limit        int    // ModelContextLimit; 0 or negative: the model's window
	SystemPrompt string
	SystemTokens int // SystemPromptTokens; 0: counted from SystemPrompt
	Reserve      int // ResponseReserve; 0 or negative: 1024
	Query        string
	Foreign      string // text on which the tokenizers of the models differ
}

// contextWindows are the documented context windows of the models the
// property draws (docs/spec.md, Context requests): written down here, not
// read from ragmem.
var contextWindows = map[string]int{"gpt-4o": 128000, "gpt-4o-mini": 128000, "gpt-4": 8192, "gpt-4-32k": 32768,
	"gpt-3.5-turbo": 16385, "gpt-4.1": 1047576, "llama-3": 8192, "": 8192}

// Context requests (docs/spec.md): the fields a request leaves at zero take
// their documented defaults (the tokenizer of the configuration's model,
// else of the request's model, else cl100k_base; the model's context
// window; the system prompt counted from its text; a reserve of 1024 tokens)
// and the budgets are those of P4 for them, counted by tiktoken-go. A
// healthy engine logs no warning while it builds contexts.
func TestPropertyContextRequestDefaults(t *testing.T) {
	params := ragmemtest.Parameters(t)
	logs := &warnLog{}
	e := ragmemtest.NewEngine(t, &ragmemtest.EngineOptions{Logger: slog.New(logs)})
	docs := ragmemtest.Sample[[]index.Document](ragmemtest.GenCorpus(20, 20), params.Seed())
	if _, err := e.IndexDocuments(bg, docs); err != nil {
		t.Fatal(err)
	}
	models := []interface{}{}
	for m := range contextWindows {
		models = append(models, m)
	}
	slices.SortFunc(models, func(a, b interface{}) int { return strings.Compare(a.(string), b.(string)) })
	genCase := gen.Struct(reflect.TypeOf(requestCase{}), map[string]gopter.Gen{
		"Provider":     gen.OneConstOf("", "", "openai/", "azure/deployments/", "/"),
		"Model":        gen.OneConstOf(models...),
		"ConfigModel":  gen.Frequency(map[int]gopter.Gen{3: gen.Const(""), 1: gen.OneConstOf("gpt-4o", "gpt-4")}),
		"Limit":        gen.Frequency(map[int]gopter.Gen{2: gen.OneConstOf(0, -1), 3: gen.IntRange(1500, 150000)}),
		"SystemPrompt": gen.OneGenOf(gen.Const(""), ragmemtest.GenHostileText(1, 60)),
		"SystemTokens": gen.Frequency(map[int]gopter.Gen{2: gen.Const(0), 1: gen.IntRange(1, 900)}),
		"Reserve":      gen.Frequency(map[int]gopter.Gen{2: gen.OneConstOf(0, -7), 3: gen.IntRange(1, 3000)}),
		"Query":        ragmemtest.GenQuery(),
		"Foreign":      gen.OneConstOf("", " naïveté 😀😀", " Привет, как дела", " 日本語のテキストです", " 12345678 ∑∫√"),
	})
	check(t, params, "context requests take their documented defaults", prop.ForAll(
		func(c requestCase) string {
			q := c.Query + c.Foreign
			var cfg *rag.Config
			if c.ConfigModel != "" {
				cfg = &rag.Config{Model: c.ConfigModel}
			}
			got, err := e.ContextFor(bg, q, rag.ContextOptions{Model: c.Provider + c.Model, ModelContextLimit: c.Limit,
				SystemPrompt: c.SystemPrompt, SystemPromptTokens: c.SystemTokens, ResponseReserve: c.Reserve, Config: cfg})
			if err != nil {
				return err.Error()
			}
			tokenizer := c.Model
			if c.ConfigModel != "" {
				tokenizer = c.ConfigModel
			}
			o := ragmemtest.TokenOracle(tokenizer)
			limit := c.Limit
			if limit <= 0 {
				limit = contextWindows[c.Model]
			}
			sys := c.SystemTokens
			if sys == 0 {
				sys = o.Count(c.SystemPrompt)
			}
			reserve := c.Reserve
			if reserve <= 0 {
				reserve = 1024
			}
			avail := max(0, limit-sys-o.Count(q)-reserve)
			want := min(2000, avail*3/10)
			b := got.Budgets
			if got.UserQueryTokens != o.Count(q) || b.TotalAvailable != avail || b.PreferenceBudget != 0 || b.KnowledgeBudget != want {
				return fmt.Sprintf("query of %d tokens (want %d), budgets %+v: want available %d (window %d, system %d, reserve %d), knowledge %d",
					got.UserQueryTokens, o.Count(q), b, avail, limit, sys, reserve, want)
			}
			if n := o.Count(got.Text); got.Block.TotalTokens != n {
				return fmt.Sprintf("the block has %d tokens and reports %d", n, got.Block.TotalTokens)
			}
			if w := logs.take(); len(w) > 0 {
				return fmt.Sprintf("a healthy engine logged %q", w)
			}
			return ""
		},
		genCase,
	))
}

// blockCase is one block of the block-liveness property.
type blockCase struct {
	Query            string
	Budget           int // the knowledge budget of the block
	TopK             int
	Threshold        float64
	PreferenceBudget int // 0: the default 500; negative: no profile
}

// P7 and P8 (docs/spec.md) for the blocks the engine builds, as well as
// for the selection alone: a block never exceeds its knowledge budget, and
// it leaves out nothing that would fit. When its last source is whole, the
// next result of the search, cut to its first sentence, would not fit;
// when its last source is cut, that source with one more sentence would not
// fit. Counted by tiktoken-go, on the rendered block, with a few tokens of
// slack per source: the engine counts each source's markup with the widest
// index the block can need, and BPE counts are not exactly additive.
func TestPropertyBlockLeavesOutNothingThatFits(t *testing.T) {
	params := ragmemtest.Parameters(t)
	e := ragmemtest.NewEngine(t, &ragmemtest.EngineOptions{Chunking: &chunk.Options{MaxTokens: 120}})
	// Plain text only, so that ragmemtest.PlainSentenceEnds is exact.
	docs := ragmemtest.Sample[[]index.Document](ragmemtest.ListOf(gen.Struct(reflect.TypeOf(index.Document{}), map[string]gopter.Gen{
		"SourceURL": gen.IntRange(0, 1<<20).Map(func(n int) string { return fmt.Sprintf("https://live.example/%d", n) }),
		"Title":     ragmemtest.GenQuery(),
		"Content":   ragmemtest.GenText(20, 500),
		"Format":    gen.Const(chunk.Text),
	}), 30, 30), params.Seed())
	if _, err := e.IndexDocuments(bg, docs); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"User is a backend developer who writes Go", "User prefers short answers"} {
		if _, err := e.PreferenceStore().Add(bg, prefs.Custom, p); err != nil {
			t.Fatal(err)
		}
	}
	o := ragmemtest.TokenOracle("")
	left, cut := 0, 0
	check(t, params, "a block leaves out nothing that fits", prop.ForAll(
		func(c blockCase) string {
			cfg := rag.Config{TopK: c.TopK, SimilarityThreshold: c.Threshold, PreferenceBudget: c.PreferenceBudget}
			b, err := e.BuildRAGContext(bg, c.Query, c.Budget, cfg)
			if err != nil {
				return err.Error()
			}
			res, err := e.Retrieve(bg, c.Query, &search.Options{TopK: c.TopK, SimilarityThreshold: c.Threshold})
			if err != nil {
				return err.Error()
			}
			n := len(b.Sources)
			if n > len(res) {
				return fmt.Sprintf("%d sources from %d results", n, len(res))
			}
			for i, s := range b.Sources {
				if s.ChunkID != res[i].Record.ID {
					return fmt.Sprintf("source %d is %s, result %d is %s", i+1, s.ChunkID, i+1, res[i].Record.ID)
				}
			}
			profile := 0
			if b.UserProfile != "" {
				profile = o.Count("<user_profile>\n" + rag.EscapeText(b.UserProfile) + "\n</user_profile>\n")
			}
			knowledge := func(srcs []rag.Source) int {
				if len(srcs) == 0 {
					return 0
				}
				bb := b
				bb.Sources = srcs
				return o.Count(rag.FormatRAGContextForPrompt(bb)) - profile
			}
			if k := knowledge(b.Sources); k > c.Budget {
				return fmt.Sprintf("%d sources take %d tokens of a budget of %d", n, k, c.Budget)
			}
			var more []rag.Source // the block with what it should not have left out
			var what string
			switch {
			case n > 0 && b.Sources[n-1].Truncated:
				last := b.Sources[n-1]
				whole := strings.TrimRightFunc(res[n-1].Record.Content, unicode.IsSpace)
				end := len(whole)
				for _, e := range ragmemtest.PlainSentenceEnds(whole) {
					if e > len(last.Content) {
						end = e
						break
					}
				}
				last.Content = whole[:end]
				more = append(slices.Clone(b.Sources[:n-1]), last)
				what, cut = fmt.Sprintf("source %d cut to %d bytes, not %d", n, len(b.Sources[n-1].Content), end), cut+1
			case n < len(res):
				r := res[n].Record
				whole := strings.TrimRightFunc(r.Content, unicode.IsSpace)
				end := len(whole)
				if ends := ragmemtest.PlainSentenceEnds(whole); len(ends) > 0 {
					end = ends[0]
				}
				more = append(slices.Clone(b.Sources), rag.Source{Index: n + 1, URL: r.SourceURL, Title: r.Title, Retrieved: r.CreatedAt,
					Age: rag.RelativeTime(r.CreatedAt, time.Now()), Content: whole[:end], ChunkID: r.ID})
				what, left = fmt.Sprintf("result %d (its first %d bytes)", n+1, end), left+1
			default:
				return ""
			}
			slack := 3 + 2*len(more)
			if k := knowledge(more); k <= c.Budget-slack {
				return fmt.Sprintf("%d sources in %d tokens, budget %d: %s would fit in %d", n, knowledge(b.Sources), c.Budget, what, k)
			}
			return ""
		},
		gen.Struct(reflect.TypeOf(blockCase{}), map[string]gopter.Gen{
			"Query":            ragmemtest.GenQuery(),
			"Budget":           gen.Frequency(map[int]gopter.Gen{1: gen.IntRange(0, 60), 4: gen.IntRange(60, 2500)}),
			"TopK":             gen.IntRange(1, 10),
			"Threshold":        gen.OneConstOf(-1.0, 0.1, 0.3),
			"PreferenceBudget": gen.OneConstOf(0, -1),
		}),
	))
	t.Logf("%d blocks left a result out, %d cut their last source", left, cut)
	if left == 0 || cut == 0 {
		t.Errorf("the property left out %d results and cut %d sources: liveness was not exercised", left, cut)
	}
}

// P11 (docs/spec.md) at the edge of the window: the profile is in the
// block exactly when it fits in what the model call leaves available, to
// the token, counted by tiktoken-go.
func TestProperty11ProfileAtTheWindowEdge(t *testing.T) {
	params := ragmemtest.Parameters(t)
	e, _ := corpusEngine(t, params.Seed(), 10, nil)
	o := ragmemtest.TokenOracle("gpt-4")
	kept, dropped := 0, 0
	check(t, params, "the profile is kept exactly when it fits the window", prop.ForAll(
		func(ps []ragmemtest.Preference, q string, sys, reserve, delta int) string {
			if _, err := e.PreferenceStore().Clear(bg); err != nil {
				return err.Error()
			}
			for _, p := range ps {
				if _, err := e.PreferenceStore().Add(bg, p.Type, p.Content); err != nil {
					return err.Error()
				}
			}
			req := rag.ContextOptions{Model: "gpt-4", ModelContextLimit: 1 << 20, SystemPromptTokens: sys, ResponseReserve: reserve}
			full, err := e.ContextFor(bg, q, req)
			if err != nil {
				return err.Error()
			}
			profile := o.Count("<user_profile>\n" + full.Block.UserProfile + "\n</user_profile>\n")
			// A window that leaves the profile's size, plus or minus delta.
			req.ModelContextLimit = sys + o.Count(q) + reserve + profile + delta
			c, err := e.ContextFor(bg, q, req)
			if err != nil {
				return err.Error()
			}
			if c.Budgets.TotalAvailable != profile+delta {
				return fmt.Sprintf("available %d, want %d", c.Budgets.TotalAvailable, profile+delta)
			}
			if fits := delta >= 0; (c.Block.UserProfile != "") != fits {
				return fmt.Sprintf("a profile of %d tokens with %d available: kept %v", profile, profile+delta, !fits)
			}
			if c.Block.UserProfile != "" {
				kept++
				if c.Block.UserProfile != full.Block.UserProfile {
					return fmt.Sprintf("profile %q, with a larger window %q", c.Block.UserProfile, full.Block.UserProfile)
				}
			} else {
				dropped++
			}
			return ""
		},
		ragmemtest.ListOf(ragmemtest.GenPreference(), 1, 3), ragmemtest.GenQuery(), gen.IntRange(0, 400), gen.IntRange(1, 1500), gen.IntRange(-2, 2),
	))
	if kept == 0 || dropped == 0 {
		t.Errorf("the profile was kept %d times and dropped %d times: the edge was not exercised", kept, dropped)
	}
}

// Search options (docs/spec.md): Engine.Search answers exactly as the
// search package does on the engine's store, with the options a caller
// leaves out taken from the engine's configuration: all of them for nil
// options, and each of the mode, top k, threshold and fusion left zero.
func TestPropertySearchOptionsDefaultToConfig(t *testing.T) {
	params := ragmemtest.Parameters(t)
	cfg := rag.Config{TopK: 3, SimilarityThreshold: -1, SearchMode: search.Vector, Fusion: search.RRF}
	e, _ := corpusEngine(t, params.Seed(), 30, &ragmemtest.EngineOptions{Config: cfg})
	check(t, params, "search options default to the engine's configuration", prop.ForAll(
		func(q string, given bool, o search.Options) string {
			want := search.Options{Mode: cfg.SearchMode, TopK: cfg.TopK, SimilarityThreshold: cfg.SimilarityThreshold, Fusion: cfg.Fusion}
			var opts *search.Options
			if given {
				opts = &o
				want = o
				if want.Mode == "" {
					want.Mode = cfg.SearchMode
				}
				if want.Fusion == "" {
					want.Fusion = cfg.Fusion
				}
				if want.TopK <= 0 {
					want.TopK = cfg.TopK
				}
				if want.SimilarityThreshold == 0 {
					want.SimilarityThreshold = cfg.SimilarityThreshold
				}
			}
			got, err := e.Retrieve(bg, q, opts)
			if err != nil {
				return err.Error()
			}
			exp, err := search.Search(bg, e.Store(), q, &want)
			if err != nil {
				return err.Error()
			}
			if len(got) != len(exp) {
				return fmt.Sprintf("%d results, %+v gives %d", len(got), want, len(exp))
			}
			for i := range got {
				if got[i].Record.ID != exp[i].Record.ID || got[i].Score != exp[i].Score || got[i].Explanation.Method != exp[i].Explanation.Method {
					return fmt.Sprintf("result %d is %s %v (%s), %+v gives %s %v (%s)", i+1, got[i].Record.ID, got[i].Score, got[i].Explanation.Method,
						want, exp[i].Record.ID, exp[i].Score, exp[i].Explanation.Method)
				}
			}
			return ""
		},
		ragmemtest.GenQuery(), gen.Frequency(map[int]gopter.Gen{3: gen.Const(true), 1: gen.Const(false)}), gen.Struct(reflect.TypeOf(search.Options{}), map[string]gopter.Gen{
			"Mode":                gen.OneConstOf(search.Mode(""), search.Hybrid, search.Hybrid, search.Vector, search.FullText),
			"Fusion":              gen.OneConstOf(search.Fusion(""), search.Relative, search.RRF),
			"TopK":                gen.IntRange(0, 8),
			"SimilarityThreshold": gen.OneConstOf(0.0, -1.0, 0.2),
		}),
	))
}

// downEmbedder is the offline lexical embedder behind a switch: when down,
// every call fails, as an embedding server that is unreachable.
type downEmbedder struct {
	lex  *embed.Lexical
	down atomic.Bool
}

func (d *downEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	if d.down.Load() {
		return nil, errors.New("connection refused")
	}
	return d.lex.Embed(ctx, texts)
}
func (d *downEmbedder) Identity() string   { return d.lex.Identity() }
func (d *downEmbedder) Dimension() int     { return d.lex.Dimension() }
func (d *downEmbedder) MatchesWords() bool { return true }

// outageStep is one search of the embedder-outage property, after the
// clock has moved by After.
type outageStep struct {
	Query string
	Mode  search.Mode
	TopK  int
	After time.Duration
}

// degradedMessage is what the engine logs when it answers from BM25 alone.
const degradedMessage = "rag: the embedder is unavailable; searches answer from BM25 alone until it is back"

// Embedder outage (docs/spec.md): while the embedder is down, a hybrid or
// vector search answers from BM25 alone, exactly as a full-text search
// with the same options, and says so in its report; a full-text search is
// not degraded. The engine's logger gets one warning for the first degraded
// search and then at most one a minute.
func TestPropertyEmbedderOutage(t *testing.T) {
	params := ragmemtest.Parameters(t)
	emb := &downEmbedder{lex: embed.NewLexical(nil)}
	logs := &warnLog{}
	now := time.Date(2026, 6, 1, 8, 0, 0, 0, time.UTC)
	var clock atomic.Int64
	clock.Store(now.UnixNano())
	e, _ := corpusEngine(t, params.Seed(), 30, &ragmemtest.EngineOptions{
		Embedder: emb, Logger: slog.New(logs), Now: func() time.Time { return time.Unix(0, clock.Load()).UTC() },
		QueryCache: embed.NewQueryCache(&embed.QueryCacheOptions{MaxEntries: -1}),
	})
	emb.down.Store(true)
	logs.take()
	var lastLogged time.Time // zero: nothing logged yet
	degraded := 0
	check(t, params, "an embedder outage falls back to BM25, logged once a minute", prop.ForAll(
		func(steps []outageStep) string {
			// Each case starts after two quiet minutes, so that its first
			// degraded search is logged whatever the cases before did.
			clock.Add(int64(2 * time.Minute))
			logs.take()
			for i, s := range steps {
				clock.Add(int64(s.After))
				at := time.Unix(0, clock.Load()).UTC()
				res, rep, err := e.RetrieveReport(bg, s.Query, &search.Options{Mode: s.Mode, TopK: s.TopK, SimilarityThreshold: -1})
				if err != nil {
					return fmt.Sprintf("step %d: %v", i, err)
				}
				// The warnings first, so that the model of what was logged
				// stays in step with the engine whatever fails below.
				wantLogs := 0
				if s.Mode != search.FullText && (lastLogged.IsZero() || at.Sub(lastLogged) > time.Minute) {
					wantLogs, lastLogged = 1, at
				}
				got := 0
				for _, m := range logs.take() {
					if m == degradedMessage {
						got++
					}
				}
				if got != wantLogs {
					return fmt.Sprintf("step %d (%s at %v, last warning at %v): %d warnings, want %d", i, s.Mode, at, lastLogged, got, wantLogs)
				}
				if s.Mode == search.FullText {
					if rep.Mode != search.FullText || rep.Degraded != "" {
						return fmt.Sprintf("step %d: a full-text search reported %+v", i, rep)
					}
				} else {
					degraded++
					if rep.Mode != search.FullText || !strings.HasPrefix(rep.Degraded, search.DegradedEmbedder) {
						return fmt.Sprintf("step %d: a %s search during the outage reported %+v", i, s.Mode, rep)
					}
				}
				want, err := e.Retrieve(bg, s.Query, &search.Options{Mode: search.FullText, TopK: s.TopK, SimilarityThreshold: -1})
				if err != nil {
					return fmt.Sprintf("step %d: full text: %v", i, err)
				}
				if !sameResults(res, want) {
					return fmt.Sprintf("step %d: %s search %s, full text %s", i, s.Mode, describe(res), describe(want))
				}
			}
			return ""
		},
		ragmemtest.ListOf(gen.Struct(reflect.TypeOf(outageStep{}), map[string]gopter.Gen{
			"Query": ragmemtest.GenQuery(),
			"Mode":  gen.OneConstOf(search.Hybrid, search.Vector, search.FullText),
			"TopK":  gen.IntRange(1, 8),
			"After": gen.OneConstOf(time.Duration(0), time.Second, 59*time.Second, time.Minute, time.Minute+time.Nanosecond, 3*time.Minute),
		}), 1, 6),
	))
	if degraded == 0 {
		t.Error("no search was degraded: the outage was not exercised")
	}
}

// semanticEmbedder is the offline lexical embedder presented as a semantic
// one (it does not say that it matches words), so that the engine keeps the
// store's fusion weight calibrated.
type semanticEmbedder struct{ lex *embed.Lexical }

func (s semanticEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	return s.lex.Embed(ctx, texts)
}
func (s semanticEmbedder) Identity() string   { return "semantic-" + s.lex.Identity() }
func (s semanticEmbedder) Dimension() int     { return s.lex.Dimension() }
func (s semanticEmbedder) MatchesWords() bool { return false }

// keptBackend is a storage backend that outlives the engine closing it, so
// that a property can open a second engine on what the first one wrote.
type keptBackend struct{ driver.Backend }

func (keptBackend) Close() error { return nil }

// calibrationCase is one store of the calibration property: Docs
// documents of one chunk each, the first Batch of them indexed in one batch
// and the rest one by one. Only the counts matter, so only they are drawn
// (and shrunk): each shrinking step builds and calibrates a store.
type calibrationCase struct {
	Docs  int
	Batch int
}

// Fusion calibration (docs/spec.md): a store that has been written until it
// holds at least search.MinCalibrationChunks knowledge chunks, in batches or
// one document at a time, is calibrated by the time the engine is closed,
// on a chunk count within a quarter of its own; a smaller one is not.
func TestPropertyCalibratedWhenGrown(t *testing.T) {
	params := ragmemtest.Parameters(t)
	emb := semanticEmbedder{embed.NewLexical(nil)}
	n := 0
	check(t, params, "a grown store is calibrated on its chunks", prop.ForAll(
		func(c calibrationCase) string {
			n++
			lb, err := local.Open(bg, "calibration", &local.Options{InMemory: true, Logger: quietLogger()})
			if err != nil {
				return err.Error()
			}
			defer lb.Close()
			e, err := rag.Open(bg, "", &rag.Options{Backend: keptBackend{lb}, Embedder: emb, Logger: quietLogger()})
			if err != nil {
				return err.Error()
			}
			docs := make([]index.Document, c.Docs)
			for i := range docs {
				w := ragmemtest.Vocabulary
				docs[i] = index.Document{SourceURL: fmt.Sprintf("https://cal.example/%d/%d", n, i), Title: "note",
					Content: fmt.Sprintf("Note %d on %s and %s: the %s of %s %d.", i, w[i%len(w)], w[(7*i+3)%len(w)], w[(3*i+1)%len(w)], w[(11*i+5)%len(w)], 13*i)}
			}
			batch := min(c.Batch, len(docs))
			if _, err := e.IndexDocuments(bg, docs[:batch]); err != nil {
				return err.Error()
			}
			for _, d := range docs[batch:] {
				if _, err := e.IndexDocument(bg, d); err != nil {
					return err.Error()
				}
			}
			if err := e.Close(); err != nil {
				return err.Error()
			}
			e, err = rag.Open(bg, "", &rag.Options{Backend: keptBackend{lb}, Embedder: emb, Logger: quietLogger()})
			if err != nil {
				return err.Error()
			}
			defer e.Close()
			st, err := e.Stats(bg)
			if err != nil {
				return err.Error()
			}
			cal, ok := search.StoredCalibration(bg, e.Store())
			if st.ChunkCount < search.MinCalibrationChunks {
				if ok {
					return fmt.Sprintf("a store of %d chunks is calibrated: %+v", st.ChunkCount, cal)
				}
				return ""
			}
			// Measured on the store, or on one within a quarter of its size
			// (search.Calibrator measures again after a quarter more).
			at := cal.Types[index.DocKnowledge].Chunks
			if !ok || at < search.MinCalibrationChunks || 4*abs(st.ChunkCount-at) >= at {
				return fmt.Sprintf("%d chunks (%d in a batch, %d one by one), calibration %+v (%v)", st.ChunkCount, batch, len(docs)-batch, cal, ok)
			}
			return ""
		},
		gen.Struct(reflect.TypeOf(calibrationCase{}), map[string]gopter.Gen{
			"Docs":  gen.IntRange(search.MinCalibrationChunks-15, search.MinCalibrationChunks+15),
			"Batch": gen.IntRange(0, search.MinCalibrationChunks+15),
		}),
	))
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

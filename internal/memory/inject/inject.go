// Package inject gives an agent its memory before each step: the
// memory files matched for the task (package memory), the procedural rules
// whose condition holds and the related episodes (memory/layers), in one
// untrusted-data context message within a token limit, cached for a while
// and never failing the agent.
//
// It is a library for agent loops that embed ragmem's Go API, and is served
// by no command, HTTP endpoint or MCP tool, by design: it combines memory
// files with an in-process layers.Manager and caches per process. Over the
// CLI, HTTP and MCP the memory-file part is served as it is (ragmem memory
// match --prompt, POST /v1/memories/match with "context": true, the MCP tool
// recall_memories).
//
//	inj := inject.New(&inject.Options{Store: mem, Manager: layers})
//	mc := inj.GetMemoryContext(ctx, inject.Query{Task: task, Agent: "developer"})
//	if !mc.Empty() {
//		messages = append(messages, mc.Message) // its own message, never the system prompt
//	}
package inject

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/ragmem/ragmem/budget"
	"github.com/ragmem/ragmem/internal/clean"
	"github.com/ragmem/ragmem/internal/memory"
	"github.com/ragmem/ragmem/internal/memory/layers"
)

// Defaults of Options.
const (
	defaultMaxTokens    = 2000
	defaultCacheTTL     = 60 * time.Second
	defaultCacheEntries = 256
	defaultMaxRules     = 5
	defaultMaxEpisodes  = 3
)

// Options configure New. A nil *Options means all defaults (and no memory:
// give a Store, a Manager or both). It is a plain value, copied by New.
type Options struct {
	// Store is the memory directory. Default nil: no memory files.
	Store *memory.Store
	// Manager holds the layers: matching procedural rules and related
	// episodic entries are injected too. Default nil.
	Manager *layers.Manager
	// MaxTokens caps the context message, counted exactly with the
	// tokenizer. Default 2000.
	MaxTokens int
	// TTL is how long a context is reused for the same query (domain, task,
	// tags, agent) while the memory does not change. Default 60 s; negative
	// disables the cache.
	TTL time.Duration
	// MaxCacheEntries bounds the cache (the oldest entry goes first).
	// Default 256.
	MaxCacheEntries int
	// MaxMemories, MaxRules and MaxEpisodes cap what is retrieved. Defaults
	// 5, 5 and 3; a negative value leaves that kind out.
	MaxMemories, MaxRules, MaxEpisodes int
	// Model chooses the tokenizer (budget.CounterForModel). Default
	// cl100k_base.
	Model string
	// Logger receives retrieval errors. Default slog.Default().
	Logger *slog.Logger
	// Now is the clock of the cache (tests). Default time.Now.
	Now func() time.Time
}

// Query asks for the memory relevant to an agent's next step (domain,
// task, tags; plus the agent's name for the scoring of memory
// files).
type Query struct {
	Domain string   `json:"domain,omitempty"`
	Task   string   `json:"task"`
	Tags   []string `json:"tags,omitempty"`
	Agent  string   `json:"agent,omitempty"`
	// MinImportance leaves out less important memory files. Default low.
	MinImportance memory.Importance `json:"minImportance,omitempty"`
}

// MemoryContext is what GetMemoryContext retrieved, formatted and within
// the token limit.
type MemoryContext struct {
	Memories []memory.Injected    `json:"memories"`
	Rules    []layers.Rule        `json:"rules"`
	Episodes []layers.ScoredEntry `json:"episodes"`
	// Text is the Markdown inside the block (not escaped).
	Text string `json:"text"`
	// Message is the untrusted-data context message to send before the
	// user's message (memory.ContextMessage(Text)); its Content is "" when
	// nothing was found.
	Message openai.ChatCompletionMessage `json:"message"`
	// Tokens is the exact token count of Message.Content.
	Tokens int `json:"tokens"`
	// Truncated is true when the last piece was cut to fit MaxTokens.
	Truncated bool `json:"truncated,omitempty"`
	// Cached is true when the context came from the cache.
	Cached bool `json:"cached"`
	// Err is the retrieval error, already logged: the context holds what
	// could still be retrieved (nothing when the memory store failed).
	Err error `json:"-"`
}

// Empty reports whether there is nothing to inject.
func (c *MemoryContext) Empty() bool { return c.Message.Content == "" }

// Stats are the injector's statistics.
type Stats struct {
	// Injections counts the contexts returned (from the cache or not).
	Injections            int64   `json:"injections"`
	CacheHits             int64   `json:"cacheHits"`
	CacheMisses           int64   `json:"cacheMisses"`
	TotalTokensInjected   int64   `json:"totalTokensInjected"`
	AvgTokensPerInjection float64 `json:"avgTokensPerInjection"`
	// Failures counts retrievals that failed (logged; no memory injected
	// from the failing source).
	Failures int64 `json:"failures"`
}

// Injector retrieves memory for an agent before each step with a
// token limit, a TTL cache and graceful fallback. It is safe for concurrent
// use.
type Injector struct {
	o       Options
	counter budget.Counter

	mu    sync.Mutex
	cache map[string]*cached
	order []string // cache keys, oldest first
	stats Stats
}

type cached struct {
	ctx        MemoryContext
	at         time.Time
	storeGen   uint64
	managerGen uint64
}

// New returns an injector.
func New(opts *Options) *Injector {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.MaxTokens <= 0 {
		o.MaxTokens = defaultMaxTokens
	}
	if o.TTL == 0 {
		o.TTL = defaultCacheTTL
	}
	if o.MaxCacheEntries <= 0 {
		o.MaxCacheEntries = defaultCacheEntries
	}
	if o.MaxMemories == 0 {
		o.MaxMemories = memory.DefaultMaxMemories
	}
	if o.MaxRules == 0 {
		o.MaxRules = defaultMaxRules
	}
	if o.MaxEpisodes == 0 {
		o.MaxEpisodes = defaultMaxEpisodes
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return &Injector{o: o, counter: budget.CounterForModel(o.Model), cache: map[string]*cached{}}
}

// cacheKey is the cache key of a query: domain|task|tags, tags
// sorted, plus the agent and the minimum importance, which change the
// result.
func cacheKey(q Query) string {
	tags := append([]string(nil), q.Tags...)
	for i := range tags {
		tags[i] = strings.ToLower(clean.Line(tags[i]))
	}
	sort.Strings(tags)
	return strings.Join([]string{clean.Line(q.Domain), clean.Line(q.Task), strings.Join(tags, ","), strings.ToLower(clean.Line(q.Agent)), q.MinImportance.String()}, "|")
}

// GetMemoryContext retrieves the memory relevant to q: memory
// files matched for the domain and task (Store.Match, with the tags as
// extra specialty tags), the procedural rules whose condition holds, and
// related episodic entries; formats them (ContextMessage) and keeps the
// message within MaxTokens, cutting the last piece at a sentence. A second
// identical query within the TTL is served from the cache unless the memory
// changed since. It never fails: a retrieval error is logged and returned in
// Err, and the agent proceeds with what could be retrieved (nothing when the
// memory store failed).
func (in *Injector) GetMemoryContext(ctx context.Context, q Query) MemoryContext {
	key := cacheKey(q)
	now := in.o.Now()
	if in.o.TTL > 0 {
		if c, ok := in.lookup(ctx, key, now); ok {
			return c
		}
	}
	mc, err := in.retrieve(ctx, q)
	in.mu.Lock()
	defer in.mu.Unlock()
	if err != nil {
		in.o.Logger.Error("inject: retrieving memory failed; the agent proceeds without it", "task", clean.Clip(q.Task, 200), "err", err)
		in.stats.Failures++
		mc.Err = err
	}
	in.stats.CacheMisses++
	in.stats.Injections++
	in.stats.TotalTokensInjected += int64(mc.Tokens)
	in.stats.AvgTokensPerInjection = float64(in.stats.TotalTokensInjected) / float64(in.stats.Injections)
	if err == nil && in.o.TTL > 0 {
		if sg, err := in.storeGen(ctx); err == nil {
			in.store(key, &cached{ctx: mc, at: now, storeGen: sg, managerGen: in.managerGen()})
		}
	}
	return mc
}

// storeGen is the memory files' generation (checked on disk when due).
func (in *Injector) storeGen(ctx context.Context) (uint64, error) {
	if in.o.Store == nil {
		return 0, nil
	}
	return in.o.Store.Generation(ctx)
}

func (in *Injector) managerGen() uint64 {
	if in.o.Manager == nil {
		return 0
	}
	return in.o.Manager.Generation()
}

// lookup returns a cached context that is fresh and whose memory has not
// changed (the store's view of its directory is refreshed first when due).
func (in *Injector) lookup(ctx context.Context, key string, now time.Time) (MemoryContext, bool) {
	in.mu.Lock()
	c, ok := in.cache[key]
	in.mu.Unlock()
	if !ok || now.Sub(c.at) >= in.o.TTL || now.Before(c.at) {
		return MemoryContext{}, false
	}
	sg, err := in.storeGen(ctx)
	if err != nil || c.storeGen != sg || c.managerGen != in.managerGen() {
		return MemoryContext{}, false
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	in.stats.CacheHits++
	in.stats.Injections++
	in.stats.TotalTokensInjected += int64(c.ctx.Tokens)
	in.stats.AvgTokensPerInjection = float64(in.stats.TotalTokensInjected) / float64(in.stats.Injections)
	out := c.ctx
	out.Cached = true
	return out, true
}

func (in *Injector) store(key string, c *cached) {
	if _, ok := in.cache[key]; !ok {
		in.order = append(in.order, key)
	}
	in.cache[key] = c
	for len(in.order) > in.o.MaxCacheEntries {
		delete(in.cache, in.order[0])
		in.order = in.order[1:]
	}
}

// Invalidate empties the cache.
func (in *Injector) Invalidate() {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.cache = map[string]*cached{}
	in.order = nil
}

// Stats returns the injection statistics.
func (in *Injector) Stats() Stats {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.stats
}

// retrieve queries every source; a failing source is reported and left out.
func (in *Injector) retrieve(ctx context.Context, q Query) (MemoryContext, error) {
	task := strings.TrimSpace(strings.TrimSpace(q.Domain) + " " + strings.TrimSpace(q.Task))
	var mc MemoryContext
	var errs []error
	if in.o.Store != nil && in.o.MaxMemories > 0 {
		ms, err := in.o.Store.Match(ctx, memory.MatchRequest{Task: task, Agent: q.Agent, AgentTags: q.Tags, MaxMemories: in.o.MaxMemories, MinImportance: q.MinImportance})
		if err == nil {
			mc.Memories, err = in.o.Store.Load(ctx, ms)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("memory files: %w", err))
			mc.Memories = nil
		}
	}
	if in.o.Manager != nil && task != "" {
		if in.o.MaxRules > 0 {
			rules, err := in.o.Manager.MatchRules(ctx, task, in.o.MaxRules, 0)
			if err != nil {
				errs = append(errs, fmt.Errorf("procedural rules: %w", err))
			}
			mc.Rules = rules
		}
		if in.o.MaxEpisodes > 0 {
			eps, err := in.o.Manager.Search(ctx, layers.Episodic, task, in.o.MaxEpisodes)
			if err != nil {
				errs = append(errs, fmt.Errorf("episodic memory: %w", err))
			}
			mc.Episodes = eps
		}
	}
	in.fit(&mc)
	return mc, errors.Join(errs...)
}

// piece is one unit of the context: a memory, a rule or an episode.
type piece struct {
	section int    // 0 memories, 1 rules, 2 episodes
	head    string // kept whole (a memory's title lines)
	body    string // cut at a sentence when needed
	mem     int    // index into the retrieved slices
}

// Section headings of the context text (the memory files' is
// memory.Heading).
const (
	rulesHeading    = "## Rules Learned from Previous Runs"
	episodesHeading = "## Related Past Episodes"
)

func render(ps []piece) string {
	var b strings.Builder
	last := -1
	for _, p := range ps {
		if p.section != last {
			if b.Len() > 0 && !strings.HasSuffix(b.String(), "\n\n") {
				b.WriteString("\n") // one blank line between sections
			}
			switch p.section {
			case 0:
				b.WriteString(memory.Heading + "\n\n" + memory.Intro + "\n" + memory.CiteHint + "\n\n")
			case 1:
				b.WriteString(rulesHeading + "\n\n")
			case 2:
				b.WriteString(episodesHeading + "\n\n")
			}
			last = p.section
		}
		b.WriteString(p.head)
		b.WriteString(p.body)
		if p.section == 0 {
			b.WriteString("\n\n")
		} else {
			b.WriteString("\n")
		}
	}
	return strings.TrimRight(b.String(), "\n") + "\n"
}

// fit selects pieces in priority order (memories by rank, then rules, then
// episodes) while the rendered message fits MaxTokens, cutting the first
// piece that does not fit at a sentence boundary and stopping there.
func (in *Injector) fit(mc *MemoryContext) {
	var all []piece
	for i, m := range mc.Memories {
		full := memory.FormatMemory(m)
		head, body, _ := strings.Cut(full, "\n\n")
		all = append(all, piece{section: 0, head: head + "\n\n", body: body, mem: i})
	}
	for i, r := range mc.Rules {
		all = append(all, piece{section: 1, head: "- When " + r.Condition + ": ", body: clean.Line(r.Action), mem: i})
	}
	for i, e := range mc.Episodes {
		all = append(all, piece{section: 2, head: "- " + e.Timestamp.UTC().Format("2006-01-02") + ": ", body: clean.Line(e.Content), mem: i})
	}
	count := func(ps []piece) int {
		if len(ps) == 0 {
			return 0
		}
		return in.counter.Count(memory.ContextMessage(render(ps)).Content)
	}
	var kept []piece
	truncated := false
	for _, p := range all {
		if count(append(kept, p)) <= in.o.MaxTokens {
			kept = append(kept, p)
			continue
		}
		// Cut the body to what is left, then shrink until the exact count
		// of the whole message fits.
		empty := p
		empty.body = ""
		left := in.o.MaxTokens - count(append(kept, empty))
		for left > 0 {
			text, _ := budget.TruncateAtSentence(p.body, left, in.counter)
			if text == "" {
				break
			}
			cut := p
			cut.body = text
			n := count(append(kept, cut))
			if n <= in.o.MaxTokens {
				kept = append(kept, cut)
				truncated = true
				break
			}
			left -= n - in.o.MaxTokens
		}
		break
	}
	var mems []memory.Injected
	var rules []layers.Rule
	var eps []layers.ScoredEntry
	for _, p := range kept {
		switch p.section {
		case 0:
			m := mc.Memories[p.mem]
			mems = append(mems, m)
		case 1:
			rules = append(rules, mc.Rules[p.mem])
		case 2:
			eps = append(eps, mc.Episodes[p.mem])
		}
	}
	mc.Memories, mc.Rules, mc.Episodes, mc.Truncated = mems, rules, eps, truncated
	if len(kept) == 0 {
		mc.Text, mc.Message, mc.Tokens = "", memory.ContextMessage(""), 0
		return
	}
	mc.Text = render(kept)
	mc.Message = memory.ContextMessage(mc.Text)
	mc.Tokens = in.counter.Count(mc.Message.Content)
}

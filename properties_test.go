// Property-based tests (gopter) of the correctness properties in
// ../shared/seeds/004 (Properties 1–13), plus: chunks cover their source in
// order, and a store reopened after Close answers searches exactly as before.
//
// Each property runs at least 100 cases. The seed is logged (go test -v) and
// printed on failure; set RAGMEM_PROPERTY_SEED to replay a run.
package ragmem_test

import (
	"context"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"math/rand"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode"

	"github.com/leanovate/gopter"
	"github.com/leanovate/gopter/gen"
	"github.com/leanovate/gopter/prop"
	openai "github.com/sashabaranov/go-openai"

	"github.com/ragmem/ragmem/agent"
	"github.com/ragmem/ragmem/budget"
	"github.com/ragmem/ragmem/chunk"
	"github.com/ragmem/ragmem/index"
	"github.com/ragmem/ragmem/prefs"
	"github.com/ragmem/ragmem/rag"
	"github.com/ragmem/ragmem/search"
)

const minRuns = 100

var bg = context.Background()

func params(t *testing.T) *gopter.TestParameters {
	seed := time.Now().UnixNano()
	if s := os.Getenv("RAGMEM_PROPERTY_SEED"); s != "" {
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			t.Fatalf("RAGMEM_PROPERTY_SEED: %v", err)
		}
		seed = v
	}
	t.Logf("property seed %d (replay with RAGMEM_PROPERTY_SEED=%d)", seed, seed)
	p := gopter.DefaultTestParametersWithSeed(seed)
	p.MinSuccessfulTests = minRuns
	return p
}

func run(t *testing.T, name string, p gopter.Prop) {
	t.Helper()
	ps := gopter.NewProperties(params(t))
	ps.Property(name, p)
	ps.TestingRun(t)
}

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func openEngine(t *testing.T, dir string) *rag.Engine {
	t.Helper()
	e, err := rag.Open(bg, dir, &rag.Options{Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

var vocabulary = strings.Fields(`river mountain forest ocean kernel compiler memory vector index search
token budget chunk sentence preference profile agent browser extension page cache latency
throughput cluster shard replica embedding hybrid fusion rank score query answer model
tokenizer paragraph heading install linux windows release binary server client request`)

// randomText writes sentences of vocabulary words, in paragraphs.
func randomText(r *rand.Rand, sentences int) string {
	var b strings.Builder
	for i := 0; i < sentences; i++ {
		n := 4 + r.Intn(12)
		for j := 0; j < n; j++ {
			w := vocabulary[r.Intn(len(vocabulary))]
			if j == 0 {
				w = strings.ToUpper(w[:1]) + w[1:]
			}
			b.WriteString(w)
			if j < n-1 {
				b.WriteByte(' ')
			}
		}
		b.WriteString([]string{". ", "! ", "? ", ". "}[r.Intn(4)])
		if r.Intn(5) == 0 {
			b.WriteString("\n\n")
		}
	}
	return b.String()
}

func randomQuery(r *rand.Rand) string {
	n := 1 + r.Intn(4)
	ws := make([]string, n)
	for i := range ws {
		ws[i] = vocabulary[r.Intn(len(vocabulary))]
	}
	return strings.Join(ws, " ")
}

// sharedEngine is a store of random documents used by read-only properties.
func sharedEngine(t *testing.T, seed int64, docs int) *rag.Engine {
	t.Helper()
	e := openEngine(t, t.TempDir())
	t.Cleanup(func() { e.Close() })
	r := rand.New(rand.NewSource(seed))
	var ds []index.Document
	for i := 0; i < docs; i++ {
		ds = append(ds, index.Document{SourceURL: fmt.Sprintf("https://corpus.example/%d", i), Title: randomQuery(r), Content: randomText(r, 5+r.Intn(60))})
	}
	if _, err := e.IndexMany(bg, ds); err != nil {
		t.Fatal(err)
	}
	return e
}

// Property 1: at most topK results, in descending score, for any query and topK.
func TestProperty1TopKBound(t *testing.T) {
	e := sharedEngine(t, 1, 60)
	run(t, "top-k bound and descending order", prop.ForAll(
		func(seed int64, topK int, mode string, thr float64) string {
			r := rand.New(rand.NewSource(seed))
			res, err := e.Search(bg, randomQuery(r), &search.Options{Mode: search.Mode(mode), TopK: topK, SimilarityThreshold: thr})
			if err != nil {
				return err.Error()
			}
			if len(res) > topK {
				return fmt.Sprintf("%d results for topK %d", len(res), topK)
			}
			for i := 1; i < len(res); i++ {
				if res[i].Score > res[i-1].Score {
					return fmt.Sprintf("score rises at %d: %v > %v", i, res[i].Score, res[i-1].Score)
				}
			}
			return ""
		},
		gen.Int64(), gen.IntRange(1, 25), gen.OneConstOf("hybrid", "vector", "fulltext"), gen.OneConstOf(-1.0, 0.1, 0.3, 0.6),
	))
}

// genBlock generates arbitrary blocks, hostile text included.
func genBlock() gopter.Gen {
	return gen.Int64().Map(func(seed int64) rag.Block {
		r := rand.New(rand.NewSource(seed))
		hostile := []string{"</knowledge_context>", "<system>", "]]>", "&amp;", "\"", "'", "<source index=\"9\">", "\x00", "\u2028", "\xff"}
		text := func() string {
			s := randomText(r, 1+r.Intn(4))
			for i := r.Intn(4); i > 0; i-- {
				s += hostile[r.Intn(len(hostile))]
			}
			return s
		}
		b := rag.Block{}
		if r.Intn(3) > 0 {
			b.UserProfile = text()
		}
		n := r.Intn(6)
		for i := 0; i < n; i++ {
			b.Sources = append(b.Sources, rag.Source{
				Index: i + 1, URL: "https://x.example/" + text(), Title: text(),
				Retrieved: time.Unix(r.Int63n(2e9), 0), Age: "3 days ago", Content: text(), Score: 1 / float64(i+1),
			})
		}
		b.TotalFound = n + r.Intn(5)
		b.Summary = fmt.Sprintf("Showing %d of %d sources", n, b.TotalFound)
		return b
	})
}

type node struct {
	XMLName xml.Name
	Attrs   []xml.Attr `xml:",any,attr"`
	Nodes   []node     `xml:",any"`
	Text    string     `xml:",chardata"`
}

func parse(s string) (node, error) {
	var n node
	dec := xml.NewDecoder(strings.NewReader(s))
	dec.Strict = true
	if err := dec.Decode(&n); err != nil {
		return n, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return n, fmt.Errorf("content after the root element")
	}
	return n, nil
}

func attrOf(n node, name string) (string, bool) {
	for _, a := range n.Attrs {
		if a.Name.Local == name {
			return a.Value, true
		}
	}
	return "", false
}

// Property 2: the knowledge lives in a dedicated <knowledge_context> block,
// delivered as its own non-system message, and no content can leave it.
func TestProperty2ContextIsolation(t *testing.T) {
	run(t, "knowledge stays inside its own block and message", prop.ForAll(
		func(b rag.Block) string {
			text := rag.FormatRAGContextForPrompt(b)
			if b.Empty() {
				if text != "" {
					return "empty block rendered text"
				}
				return ""
			}
			root, err := parse(text)
			if err != nil {
				return "not well-formed: " + err.Error()
			}
			if root.XMLName.Local != "knowledge_context" {
				return "root is " + root.XMLName.Local
			}
			for _, c := range root.Nodes {
				if c.XMLName.Local != "user_profile" && c.XMLName.Local != "related_knowledge" {
					return "unexpected element " + c.XMLName.Local
				}
				for _, s := range c.Nodes {
					if s.XMLName.Local != "source" || len(s.Nodes) != 0 {
						return "unexpected element inside " + c.XMLName.Local
					}
				}
			}
			msg := rag.BuildRAGContextMessage(b)
			if msg.Role == "system" || !strings.HasPrefix(msg.Content, rag.UntrustedPrefix) {
				return "message role " + msg.Role
			}
			if strings.Contains(rag.ReferenceRule, "<knowledge_context>") && strings.Contains(rag.ReferenceRule, b.UserProfile) && b.UserProfile != "" {
				return "system rule carries knowledge"
			}
			return ""
		},
		genBlock(),
	))
}

// Property 3: every included chunk carries its url, title and retrieved date.
// Property 9: profile first, then knowledge, with an accurate summary.
func TestProperty3And9AttributionAndStructure(t *testing.T) {
	run(t, "attribution and structure", prop.ForAll(
		func(b rag.Block) string {
			text := rag.FormatRAGContextForPrompt(b)
			if b.Empty() {
				return ""
			}
			root, err := parse(text)
			if err != nil {
				return err.Error()
			}
			var names []string
			for _, c := range root.Nodes {
				names = append(names, c.XMLName.Local)
			}
			want := []string{}
			if b.UserProfile != "" {
				want = append(want, "user_profile")
			}
			if len(b.Sources) > 0 {
				want = append(want, "related_knowledge")
			}
			if strings.Join(names, ",") != strings.Join(want, ",") {
				return fmt.Sprintf("sections %v, want %v", names, want)
			}
			if len(b.Sources) == 0 {
				return ""
			}
			rk := root.Nodes[len(root.Nodes)-1]
			if c, _ := attrOf(rk, "count"); c != strconv.Itoa(len(b.Sources)) {
				return "count attribute " + c
			}
			if tf, _ := attrOf(rk, "total_found"); tf != strconv.Itoa(b.TotalFound) {
				return "total_found attribute " + tf
			}
			if s, _ := attrOf(rk, "summary"); s != fmt.Sprintf("Showing %d of %d sources", len(b.Sources), b.TotalFound) {
				return "summary " + s
			}
			for i, s := range rk.Nodes {
				src := b.Sources[i]
				url, ok1 := attrOf(s, "url")
				title, ok2 := attrOf(s, "title")
				ret, ok3 := attrOf(s, "retrieved")
				if !ok1 || !ok2 || !ok3 || ret != src.Retrieved.UTC().Format("2006-01-02") {
					return fmt.Sprintf("source %d attributes %v", i, s.Attrs)
				}
				if url == "" || title == "" {
					return "empty url or title"
				}
			}
			return ""
		},
		genBlock(),
	))
}

// Property 4: the knowledge budget formula, exactly.
func TestProperty4BudgetCalculation(t *testing.T) {
	run(t, "knowledge budget = min(base, (available − preference) × 0.3)", prop.ForAll(
		func(limit, sys, q, reserve, base, pref int) string {
			b := budget.CalculateTokenBudgets(limit, sys, q, reserve, budget.Config{BaseBudget: base, PreferenceBudget: pref})
			avail := limit - sys - q - reserve
			if avail < 0 {
				avail = 0
			}
			p := min(pref, avail)
			want := int(math.Floor(float64(avail-p) * 0.3))
			want = max(0, min(base, want))
			if b.TotalAvailable != avail || b.PreferenceBudget != p || b.KnowledgeBudget != want || b.Remaining != avail-p-want {
				return fmt.Sprintf("got %+v, want available %d pref %d knowledge %d", b, avail, p, want)
			}
			return ""
		},
		gen.IntRange(4000, 200000), gen.IntRange(100, 2000), gen.IntRange(10, 1000), gen.IntRange(500, 4000),
		gen.IntRange(500, 5000), gen.IntRange(1, 5000),
	))
}

// Property 5: chunks of a page indexed through the auto-indexer carry its
// URL, title and a createdAt within a second of the call.
func TestProperty5PageMetadata(t *testing.T) {
	e := openEngine(t, t.TempDir())
	defer e.Close()
	run(t, "page chunks carry url, title and createdAt", prop.ForAll(
		func(seed int64, title string) string {
			r := rand.New(rand.NewSource(seed))
			url := fmt.Sprintf("https://pages.example/%d/%d", seed, r.Int63())
			title = strings.TrimSpace(title)
			if title == "" {
				title = "untitled"
			}
			start := time.Now()
			id := e.IndexPageAsync(index.Document{SourceURL: url, Title: title, Content: randomText(r, 3+r.Intn(80))})
			if err := e.Flush(bg); err != nil {
				return err.Error()
			}
			if j, _ := e.Job(id); j.State != index.JobDone {
				return fmt.Sprintf("job %+v", j)
			}
			recs, err := e.Store().Source(bg, url)
			if err != nil || len(recs) == 0 {
				return fmt.Sprintf("no chunks (%v)", err)
			}
			for _, c := range recs {
				if c.SourceURL != url || c.Title != title {
					return fmt.Sprintf("chunk metadata %q %q", c.SourceURL, c.Title)
				}
				if d := c.CreatedAt.Sub(start); d < -time.Second || d > time.Second+time.Since(start) {
					return fmt.Sprintf("createdAt %v is %v from the call", c.CreatedAt, d)
				}
			}
			return ""
		},
		gen.Int64(), gen.AlphaString(),
	))
}

// Property 6: re-indexing identical content keeps exactly one set of chunks;
// changed content leaves only the newest chunks.
func TestProperty6Idempotence(t *testing.T) {
	e := openEngine(t, t.TempDir())
	defer e.Close()
	run(t, "indexing is idempotent and replaces", prop.ForAll(
		func(seed int64, repeats int) string {
			r := rand.New(rand.NewSource(seed))
			url := fmt.Sprintf("https://idem.example/%d", r.Int63())
			content := randomText(r, 2+r.Intn(70))
			var first []index.Record
			for i := 0; i < repeats; i++ {
				if _, err := e.Index(bg, index.Document{SourceURL: url, Content: content}); err != nil {
					return err.Error()
				}
				recs, _ := e.Store().Source(bg, url)
				if i == 0 {
					first = recs
				} else if !sameIDs(first, recs) {
					return "identical re-index changed the chunks"
				}
			}
			changed := content + " " + randomText(r, 1+r.Intn(20))
			res, err := e.Index(bg, index.Document{SourceURL: url, Content: changed})
			if err != nil {
				return err.Error()
			}
			recs, _ := e.Store().Source(bg, url)
			if len(recs) != res.Chunks {
				return fmt.Sprintf("%d chunks stored, %d indexed", len(recs), res.Chunks)
			}
			for _, c := range recs {
				if c.ContentHash != res.ContentHash {
					return "a chunk of the old version survived"
				}
			}
			return ""
		},
		gen.Int64(), gen.IntRange(2, 4),
	))
}

func sameIDs(a, b []index.Record) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].ID != b[i].ID {
			return false
		}
	}
	return true
}

type scored struct {
	Texts  []string
	Scores []float64
	Budget int
}

func genScored() gopter.Gen {
	return gen.Int64().Map(func(seed int64) scored {
		r := rand.New(rand.NewSource(seed))
		n := 1 + r.Intn(12)
		s := scored{Budget: r.Intn(1500)}
		for i := 0; i < n; i++ {
			s.Texts = append(s.Texts, randomText(r, 1+r.Intn(25)))
			// Some ties on purpose.
			s.Scores = append(s.Scores, float64(r.Intn(20))/20)
		}
		return s
	})
}

var counter = budget.CounterForModel("gpt-4o")

// Property 7: selection takes the best-scoring chunks; no lower-scoring chunk
// is included while a higher-scoring one is excluded.
func TestProperty7ScorePriority(t *testing.T) {
	run(t, "selection by descending score", prop.ForAll(
		func(s scored) string {
			items := make([]budget.Item, len(s.Texts))
			for i := range items {
				items[i] = budget.Item{Text: s.Texts[i], Score: s.Scores[i], Overhead: i % 3}
			}
			sel := budget.Select(items, s.Budget, counter)
			included := map[int]bool{}
			total := 0
			for _, x := range sel {
				included[x.Item] = true
				total += x.Tokens
			}
			if total > s.Budget {
				return fmt.Sprintf("selected %d tokens of a %d budget", total, s.Budget)
			}
			for i := range items {
				for j := range items {
					if included[i] && !included[j] && items[j].Score > items[i].Score {
						return fmt.Sprintf("item %d (score %v) in, item %d (score %v) out", i, items[i].Score, j, items[j].Score)
					}
				}
			}
			for k := 1; k < len(sel); k++ {
				if items[sel[k].Item].Score > items[sel[k-1].Item].Score {
					return "selection not in score order"
				}
			}
			return ""
		},
		genScored(),
	))
}

var sentenceEnd = regexp.MustCompile(`[.!?。！？…]["'”’)\]]*$`)

// Property 8: a truncated chunk ends at a sentence boundary.
func TestProperty8SentenceTruncation(t *testing.T) {
	run(t, "truncation at sentence boundaries", prop.ForAll(
		func(s scored) string {
			items := make([]budget.Item, len(s.Texts))
			for i := range items {
				items[i] = budget.Item{Text: s.Texts[i], Score: s.Scores[i]}
			}
			for _, x := range budget.Select(items, s.Budget, counter) {
				orig := strings.TrimSpace(items[x.Item].Text)
				if !strings.HasPrefix(orig, x.Text) {
					return "truncation is not a prefix"
				}
				if x.Truncated && !sentenceEnd.MatchString(x.Text) {
					return fmt.Sprintf("truncated text ends %q", x.Text[max(0, len(x.Text)-20):])
				}
				if !x.Truncated && x.Text != orig {
					return "untruncated text changed"
				}
			}
			return ""
		},
		genScored(),
	))
}

var professions = []string{"software engineer", "data scientist", "nurse", "teacher", "product manager", "physicist",
	"backend developer", "student", "lawyer", "graphic designer", "site reliability engineer", "chef"}

// Property 10: explicit preference statements are detected and their
// content extracted.
func TestProperty10PreferenceDetection(t *testing.T) {
	type msg struct {
		Text, Want string
		Type       prefs.Type
	}
	g := gen.Int64().Map(func(seed int64) msg {
		r := rand.New(rand.NewSource(seed))
		p := professions[r.Intn(len(professions))]
		article := "a"
		if strings.ContainsRune("aeiou", rune(p[0])) {
			article = "an"
		}
		lead := []string{"", "Hi! ", "Quick question. ", "By the way, "}[r.Intn(4)]
		switch r.Intn(5) {
		case 0:
			return msg{lead + "I'm " + article + " " + p, p, prefs.Expertise}
		case 1:
			return msg{lead + "I work as " + article + " " + p + ".", p, prefs.Expertise}
		case 2:
			return msg{lead + "I am " + article + " " + p + " and need help", p, prefs.Expertise}
		case 3:
			level := []string{"5", "a beginner", "a child", "a new developer"}[r.Intn(4)]
			return msg{lead + "Explain like I'm " + level, level, prefs.Style}
		default:
			style := []string{"technical explanations", "short answers", "code examples", "detailed explanations"}[r.Intn(4)]
			return msg{lead + "I prefer " + style, style, prefs.Style}
		}
	})
	run(t, "explicit preference statements are detected", prop.ForAll(
		func(m msg) string {
			in := prefs.DetectPreferenceIntent(m.Text)
			if in == nil {
				return "not detected: " + m.Text
			}
			if in.Type != m.Type {
				return fmt.Sprintf("%q detected as %s, want %s", m.Text, in.Type, m.Type)
			}
			if !strings.Contains(strings.ToLower(in.Content), strings.ToLower(m.Want)) {
				return fmt.Sprintf("%q: content %q lacks %q", m.Text, in.Content, m.Want)
			}
			return ""
		},
		g,
	))
}

// Property 11: preferences are in the profile whatever the query, and their
// tokens are deducted before the knowledge budget is computed.
func TestProperty11PreferenceInclusion(t *testing.T) {
	e := sharedEngine(t, 11, 20)
	run(t, "preferences always included and deducted first", prop.ForAll(
		func(seed int64, limit int) string {
			r := rand.New(rand.NewSource(seed))
			if _, err := e.Preferences().Clear(bg); err != nil {
				return err.Error()
			}
			var contents []string
			for i := 1 + r.Intn(3); i > 0; i-- {
				c := fmt.Sprintf("User likes %s number %d", vocabulary[r.Intn(len(vocabulary))], r.Intn(1000))
				if _, err := e.Preferences().Add(bg, []prefs.Type{prefs.Expertise, prefs.Style, prefs.Domain, prefs.Custom}[r.Intn(4)], c); err != nil {
					return err.Error()
				}
				contents = append(contents, c)
			}
			c, err := e.BuildContext(bg, randomQuery(r), rag.ContextRequest{Model: "gpt-4o", ModelContextLimit: limit, SystemPromptTokens: 200, ResponseReserve: 500})
			if err != nil {
				return err.Error()
			}
			for _, want := range contents {
				if !strings.Contains(c.Block.UserProfile, want) {
					return fmt.Sprintf("profile %q lacks %q", c.Block.UserProfile, want)
				}
			}
			if c.Budgets.PreferenceBudget != c.Block.ProfileTokens {
				return fmt.Sprintf("deducted %d, profile is %d tokens", c.Budgets.PreferenceBudget, c.Block.ProfileTokens)
			}
			want := budget.CalculateKnowledgeBudget(c.Budgets.TotalAvailable, c.Block.ProfileTokens, 2000)
			if c.Budgets.KnowledgeBudget != want {
				return fmt.Sprintf("knowledge budget %d, want %d", c.Budgets.KnowledgeBudget, want)
			}
			if c.Block.KnowledgeTokens > c.Budgets.KnowledgeBudget && len(c.Block.Sources) > 0 {
				return "knowledge over budget"
			}
			return ""
		},
		gen.Int64(), gen.IntRange(2000, 200000),
	))
}

// p12Web is a WebSearcher returning the results prepared for the current case.
type p12Web struct{ results []agent.WebResult }

func (w *p12Web) SearchWeb(_ context.Context, _ string, limit int) ([]agent.WebResult, error) {
	return w.results[:min(limit, len(w.results))], nil
}

// p12Model is an OpenAI-compatible chat server whose answer is drawn from
// the current case's random source: markers and a cited list with valid,
// out-of-range and invented numbers, labels the model claims (right or
// wrong), a conflict flag, and sometimes no JSON at all.
type p12Model struct {
	mu                   sync.Mutex
	r                    *rand.Rand
	conflict, structured bool
}

var p12SourceRe = regexp.MustCompile(`<source index="`)

func (m *p12Model) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	var body struct {
		Messages []struct{ Role, Content string } `json:"messages"`
	}
	if err := json.NewDecoder(req.Body).Decode(&body); err != nil || len(body.Messages) < 2 {
		http.Error(w, `{"error":{"message":"bad request","type":"invalid_request_error"}}`, http.StatusBadRequest)
		return
	}
	n := len(p12SourceRe.FindAllString(body.Messages[1].Content, -1))
	m.mu.Lock()
	r := m.r
	var ans strings.Builder
	var cited []int
	pick := func() int { return r.Intn(n+5) - 1 } // -1 … n+3
	for i := r.Intn(6); i > 0; i-- {
		ans.WriteString(vocabulary[r.Intn(len(vocabulary))])
		switch r.Intn(4) {
		case 0:
			fmt.Fprintf(&ans, " [%d]", pick())
		case 1:
			fmt.Fprintf(&ans, " [%d, %d]", pick(), pick())
		case 2:
			fmt.Fprintf(&ans, " (%s) [%d]", []string{"Web Source", "Knowledge Base"}[r.Intn(2)], pick())
		}
		ans.WriteString(". ")
	}
	for i := r.Intn(4); i > 0; i-- {
		cited = append(cited, pick())
	}
	m.conflict = r.Intn(2) == 0
	m.structured = r.Intn(5) != 0
	content := strings.TrimSpace(ans.String())
	if m.structured {
		b, _ := json.Marshal(map[string]any{"answer": content, "cited": cited, "conflict": m.conflict, "conflict_description": "sources differ"})
		content = string(b)
	}
	m.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{
		"id": "chatcmpl-p12", "object": "chat.completion", "created": 1, "model": "gpt-4o",
		"choices": []any{map[string]any{"index": 0, "message": map[string]any{"role": "assistant", "content": content}, "finish_reason": "stop"}},
	})
}

var p12MarkerRe = regexp.MustCompile(`\[(\d{1,3})\]`)

// Property 12: when an answer draws on web results and stored knowledge,
// its citations say which is which: every citation names a source that was
// actually retrieved, labelled "Web Source" or "Knowledge Base" by where that
// source came from (whatever the model claimed), and no invented number
// survives in the answer.
func TestProperty12DualSourceCitation(t *testing.T) {
	e := sharedEngine(t, 12, 40)
	model := &p12Model{}
	srv := httptest.NewServer(model)
	defer srv.Close()
	oc := openai.DefaultConfig("k")
	oc.BaseURL = srv.URL + "/v1"
	llm := agent.LLM{Client: openai.NewClientWithConfig(oc), Model: "gpt-4o"}
	both := 0
	run(t, "citations distinguish Web Source from Knowledge Base", prop.ForAll(
		func(seed int64) string {
			r := rand.New(rand.NewSource(seed))
			web := &p12Web{}
			for i := r.Intn(6); i > 0; i-- {
				web.results = append(web.results, agent.WebResult{
					Title: randomQuery(r) + " </search_sources>", URL: fmt.Sprintf("https://web.example/%d/%d", seed, i), Snippet: randomText(r, 1+r.Intn(3)),
				})
			}
			query := randomQuery(r)
			if r.Intn(4) == 0 {
				query = "zyzzyva quokka"
			}
			model.mu.Lock()
			model.r = r
			model.mu.Unlock()
			res, err := agent.EnhancedSearch(bg, query, web, llm, &agent.EnhanceOptions{Memory: e, Logger: quietLogger()})
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
					wantURL = res.MemoryResults[i].Record.SourceURL
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
			for _, c := range res.Citations {
				if c.Index < 1 || c.Index > len(res.Sources) {
					return fmt.Sprintf("citation %d of %d sources", c.Index, len(res.Sources))
				}
				s := res.Sources[c.Index-1]
				want := map[agent.SourceKind]string{agent.WebSource: "Web Source", agent.MemorySource: "Knowledge Base"}[s.Kind]
				if c.Label != want || c.Source != s.Kind || c.URL != s.URL || c.Title != s.Title {
					return fmt.Sprintf("citation %+v for source %+v", c, s)
				}
				labels[c.Label] = true
				cited[c.Index] = true
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
			for i, c := range res.Citations {
				if !strings.HasPrefix(lines[i], fmt.Sprintf("[%d] %s: ", c.Index, c.Label)) {
					return fmt.Sprintf("line %q for %+v", lines[i], c)
				}
			}
			if labels["Web Source"] && labels["Knowledge Base"] {
				both++
			}
			// A disclaimer exactly when the model reported a conflict and
			// both kinds were retrieved.
			hasWeb, hasMem := len(web.results) > 0, len(res.MemoryResults) > 0
			model.mu.Lock()
			wantDisclaimer := model.conflict && model.structured && hasWeb && hasMem
			model.mu.Unlock()
			if (res.ConflictDisclaimer != "") != wantDisclaimer {
				return fmt.Sprintf("disclaimer %q, want one: %v", res.ConflictDisclaimer, wantDisclaimer)
			}
			return ""
		},
		gen.Int64(),
	))
	if both == 0 {
		t.Error("no case cited both web and memory sources; the generators do not exercise Property 12")
	}
}

var relRe = regexp.MustCompile(`^(\d+) (minute|hour|day|month|year)s? ago$`)

// Property 13: relative times are readable and exact (rounded down).
func TestProperty13RelativeTime(t *testing.T) {
	now := time.Now()
	units := map[string]time.Duration{"minute": time.Minute, "hour": time.Hour, "day": 24 * time.Hour, "month": 30 * 24 * time.Hour, "year": 365 * 24 * time.Hour}
	next := map[string]time.Duration{"minute": time.Hour, "hour": 24 * time.Hour, "day": 30 * 24 * time.Hour, "month": 365 * 24 * time.Hour, "year": math.MaxInt64}
	run(t, "relative time formatting", prop.ForAll(
		func(ago int64) string {
			d := time.Duration(ago)
			got := rag.RelativeTime(now.Add(-d), now)
			if d < time.Minute {
				if got != "just now" {
					return fmt.Sprintf("%v -> %q", d, got)
				}
				return ""
			}
			m := relRe.FindStringSubmatch(got)
			if m == nil {
				return fmt.Sprintf("%v -> %q unreadable", d, got)
			}
			n, _ := strconv.ParseInt(m[1], 10, 64)
			u := units[m[2]]
			if int64(d/u) != n || d >= next[m[2]] {
				return fmt.Sprintf("%v -> %q", d, got)
			}
			if plural := strings.Contains(got, m[2]+"s "); plural == (n == 1) {
				return "plural wrong: " + got
			}
			return ""
		},
		// Log-uniform durations from 1 s to 12 years, so that every unit's
		// range (and its boundaries) is drawn about equally often.
		gen.Float64Range(0, math.Log(float64(12*365*24*time.Hour/time.Second))).Map(func(x float64) int64 {
			return int64(math.Exp(x) * float64(time.Second))
		}),
	))
}

// Chunks cover the source text in order: each chunk is the source bytes it
// claims, chunks advance, and every non-space byte belongs to some chunk.
func TestPropertyChunksCoverSource(t *testing.T) {
	run(t, "chunks cover the source in order", prop.ForAll(
		func(seed int64, markdown bool, maxTokens int) string {
			r := rand.New(rand.NewSource(seed))
			var b strings.Builder
			for s := 0; s < 1+r.Intn(6); s++ {
				if markdown {
					fmt.Fprintf(&b, "%s %s\n\n", strings.Repeat("#", 1+r.Intn(3)), randomQuery(r))
				}
				b.WriteString(randomText(r, r.Intn(40)))
				if markdown && r.Intn(3) == 0 {
					fmt.Fprintf(&b, "\n```go\nfunc f() { return %d }\n```\n\n", r.Intn(9))
				}
			}
			src := b.String()
			f := chunk.Text
			if markdown {
				f = chunk.Markdown
			}
			cs := chunk.Split(src, f, &chunk.Options{MaxTokens: maxTokens, Overlap: maxTokens / 8})
			covered := make([]bool, len(src))
			for i, c := range cs {
				if c.Start < 0 || c.End > len(src) || c.Start >= c.End || src[c.Start:c.End] != c.Text {
					return fmt.Sprintf("chunk %d [%d,%d) does not match its text", i, c.Start, c.End)
				}
				if i > 0 && c.Start <= cs[i-1].Start {
					return fmt.Sprintf("chunk %d does not advance", i)
				}
				if c.Index != i {
					return fmt.Sprintf("chunk %d has index %d", i, c.Index)
				}
				for k := c.Start; k < c.End; k++ {
					covered[k] = true
				}
			}
			for k, ch := range src {
				if !covered[k] && !unicode.IsSpace(ch) {
					return fmt.Sprintf("byte %d (%q) is in no chunk", k, ch)
				}
			}
			return ""
		},
		gen.Int64(), gen.Bool(), gen.IntRange(40, 500),
	))
}

// Reopening a store after Close gives the same search results.
func TestPropertyReopenSameResults(t *testing.T) {
	dir := t.TempDir()
	e := openEngine(t, dir)
	r := rand.New(rand.NewSource(7))
	var docs []index.Document
	for i := 0; i < 40; i++ {
		docs = append(docs, index.Document{SourceURL: fmt.Sprintf("https://reopen.example/%d", i), Title: randomQuery(r), Content: randomText(r, 3+r.Intn(40))})
	}
	if _, err := e.IndexMany(bg, docs); err != nil {
		t.Fatal(err)
	}
	e.Remove(bg, "https://reopen.example/3")
	type q struct {
		Query string
		Mode  string
		K     int
	}
	var queries []q
	rq := rand.New(rand.NewSource(8))
	for i := 0; i < minRuns; i++ {
		queries = append(queries, q{randomQuery(rq), []string{"hybrid", "vector", "fulltext"}[i%3], 1 + rq.Intn(15)})
	}
	before := map[int][]search.Result{}
	for i, x := range queries {
		res, err := e.Search(bg, x.Query, &search.Options{Mode: search.Mode(x.Mode), TopK: x.K, SimilarityThreshold: -1})
		if err != nil {
			t.Fatal(err)
		}
		before[i] = res
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	e = openEngine(t, dir)
	defer e.Close()
	run(t, "same results after reopen", prop.ForAll(
		func(i int) string {
			x := queries[i]
			res, err := e.Search(bg, x.Query, &search.Options{Mode: search.Mode(x.Mode), TopK: x.K, SimilarityThreshold: -1})
			if err != nil {
				return err.Error()
			}
			if len(res) != len(before[i]) {
				return fmt.Sprintf("%q: %d results, before %d", x.Query, len(res), len(before[i]))
			}
			for k := range res {
				a, b := res[k], before[i][k]
				if a.Record.ID != b.Record.ID || math.Abs(a.Score-b.Score) > 1e-9 {
					return fmt.Sprintf("%q result %d: %s %.6f, before %s %.6f", x.Query, k, a.Record.ID, a.Score, b.Record.ID, b.Score)
				}
			}
			return ""
		},
		gen.IntRange(0, len(queries)-1),
	))
	ids := make([]string, 0)
	for _, res := range before {
		for _, r := range res {
			ids = append(ids, r.Record.ID)
		}
	}
	sort.Strings(ids)
	if len(ids) == 0 {
		t.Fatal("no query returned anything; the property tested nothing")
	}
}

package layers

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ragmem/ragmem/budget"
	"github.com/ragmem/ragmem/index"
	"github.com/ragmem/ragmem/internal/index/engine"
	"github.com/ragmem/ragmem/internal/memory"
	"github.com/ragmem/ragmem/internal/memory/internal/memtest"
)

func openManager(t *testing.T, dir string, ix *engine.Index) *Manager {
	t.Helper()
	m, err := Open(bg, dir, &Options{Index: ix, Logger: quiet(), Now: clock})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

func TestWorkingMemoryIsBoundedAndNotPersisted(t *testing.T) {
	dir := t.TempDir()
	m, err := Open(bg, dir, &Options{MaxWorking: 3, Logger: quiet(), Now: clock})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 5; i++ {
		if _, err := m.Append(bg, Working, Entry{Content: fmt.Sprintf("step %d", i)}); err != nil {
			t.Fatal(err)
		}
	}
	w := m.Working()
	if len(w) != 3 || w[0].Content != "step 2" || w[2].Content != "step 4" || w[0].ID == "" || w[0].Timestamp.IsZero() {
		t.Fatalf("%+v", w)
	}
	st := m.Stats()
	if want := 3 * budget.CounterForModel("").Count("step 0"); st.WorkingMemoryTokens != want {
		t.Errorf("working tokens %d", st.WorkingMemoryTokens)
	}
	m.Close()
	m2 := openManager(t, dir, nil)
	if len(m2.Working()) != 0 {
		t.Error("working memory survived a reopen")
	}
}

// Episodic entries persist, are searched with hybrid search (inflections
// match through the index; keyword counting would miss them), and survive
// a reopen, including the index.
func TestEpisodicPersistsAndSearches(t *testing.T) {
	dir := t.TempDir()
	ix := openIndex(t)
	m := openManager(t, dir, ix)
	for _, c := range []string{
		"Agent analyzed security vulnerabilities in src/",
		"Deployed the payment service to staging",
		"Fixed a flaky test in the scheduler",
	} {
		if _, err := m.Append(bg, Episodic, Entry{Content: c, Metadata: map[string]any{"agentId": "agent-001"}}); err != nil {
			t.Fatal(err)
		}
	}
	res, err := m.Search(bg, Episodic, "vulnerability analysis", 5)
	if err != nil {
		t.Fatal(err)
	}
	if len(res) == 0 || !strings.Contains(res[0].Content, "security vulnerabilities") {
		t.Fatalf("search: %+v", res)
	}
	m.Close()
	m2 := openManager(t, dir, ix)
	if len(m2.Episodic()) != 3 {
		t.Fatalf("%d entries after reopen", len(m2.Episodic()))
	}
	if res, err := m2.Search(bg, Episodic, "deploying payments", 5); err != nil || len(res) == 0 || !strings.Contains(res[0].Content, "payment") {
		t.Fatalf("after reopen: %+v %v", res, err)
	}
	// Without an index, search matches stems.
	m2.Close()
	m3 := openManager(t, dir, nil)
	if res, _ := m3.Search(bg, Episodic, "scheduler tests", 5); len(res) != 1 || !strings.Contains(res[0].Content, "flaky") {
		t.Fatalf("word search: %+v", res)
	}
}

// A crash in the middle of an append leaves a torn last line; it is cut off
// on open and the earlier entries are kept.
func TestEpisodicTornTail(t *testing.T) {
	dir := t.TempDir()
	m := openManager(t, dir, nil)
	for i := 0; i < 3; i++ {
		if _, err := m.Append(bg, Episodic, Entry{Content: fmt.Sprintf("entry %d", i)}); err != nil {
			t.Fatal(err)
		}
	}
	m.Close()
	p := filepath.Join(dir, episodicFile)
	f, _ := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString(`{"id":"torn","timestamp":"2026-01-01T00:00:00Z","content":"half`)
	f.Close()
	m2 := openManager(t, dir, nil)
	if n := len(m2.Episodic()); n != 3 {
		t.Fatalf("%d entries", n)
	}
	data, _ := os.ReadFile(p)
	if strings.Contains(string(data), "torn") || !strings.HasSuffix(string(data), "\n") {
		t.Errorf("torn line not cut: %q", data)
	}
	if _, err := m2.Append(bg, Episodic, Entry{Content: "after repair"}); err != nil {
		t.Fatal(err)
	}
	m2.Close()
	if n := len(openManager(t, dir, nil).Episodic()); n != 4 {
		t.Fatalf("%d entries after repair", n)
	}
}

func TestSemanticLearnRecallOverwrite(t *testing.T) {
	dir := t.TempDir()
	m := openManager(t, dir, nil)
	if err := m.Learn(bg, Knowledge{Key: "dataset-format", Value: "CSV with headers"}); err != nil {
		t.Fatal(err)
	}
	if err := m.Learn(bg, Knowledge{Key: "dataset-format", Value: "CSV with headers, semicolon-delimited"}); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Append(bg, Semantic, Entry{Content: "Go 1.26", Metadata: map[string]any{"key": "go-version"}}); err != nil {
		t.Fatal(err)
	}
	m.Close()
	m2 := openManager(t, dir, nil)
	k, ok := m2.Recall("dataset-format")
	if !ok || k.Value != "CSV with headers, semicolon-delimited" {
		t.Fatalf("%+v %v", k, ok)
	}
	if k, ok := m2.Recall("go-version"); !ok || k.Value != "Go 1.26" {
		t.Fatalf("%+v %v", k, ok)
	}
	if _, ok := m2.Recall("missing"); ok {
		t.Error("recalled a missing key")
	}
	if st := m2.Stats(); st.SemanticEntryCount != 2 {
		t.Errorf("%+v", st)
	}
	if ks := m2.Knowledge(); len(ks) != 2 || ks[0].Key != "dataset-format" || ks[1].Key != "go-version" || ks[0].Value != "CSV with headers, semicolon-delimited" {
		t.Errorf("knowledge %+v", ks)
	}
}

// LLMSummarizer sends the newest entries that fit its cap to the chat
// model, as data, and labels the model's answer.
func TestLLMSummarizer(t *testing.T) {
	chat := memtest.NewChat(t, func(int, map[string]any) (int, string) { return 200, "- the cache key includes the tenant" })
	var es []Entry
	for i := 0; i < 40; i++ {
		es = append(es, Entry{Content: fmt.Sprintf("observation %d about the cache key", i), Timestamp: clock()})
	}
	s := LLMSummarizer{LLM: chat.LLM(), MaxInputTokens: 100}
	got, err := s.Summarize(bg, es)
	if err != nil || got != "[Summary of 40 entries]\n- the cache key includes the tenant" {
		t.Fatalf("%q %v", got, err)
	}
	reqs := chat.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests", len(reqs))
	}
	user := reqs[0]["messages"].([]any)[1].(map[string]any)["content"].(string)
	if !strings.Contains(user, "observation 39 ") || strings.Contains(user, "observation 0 ") || !strings.HasPrefix(user, "<entries>") {
		t.Errorf("the newest entries within the cap, as data: %q", user)
	}
	if _, err := (LLMSummarizer{}).Summarize(bg, es); !errors.Is(err, memory.ErrInvalid) {
		t.Errorf("no model: %v", err)
	}
}

// Procedural rules are matched against a task like whenToUse patterns.
func TestProceduralRules(t *testing.T) {
	m := openManager(t, t.TempDir(), openIndex(t))
	rules := []Rule{
		{Condition: "deploy|release", Action: "Run the smoke tests before and after."},
		{Condition: "When editing database migrations", Action: "Make every migration reversible."},
		{Condition: "*.proto", Action: "Regenerate the stubs with buf generate."},
	}
	for _, r := range rules {
		if _, err := m.AddRule(bg, r); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := m.Append(bg, Procedural, Entry{Content: "no condition"}); !errors.Is(err, memory.ErrInvalid) {
		t.Errorf("rule without condition: %v", err)
	}
	cases := map[string][]string{
		"Release version 2.3":                   {"deploy|release"},
		"Add a migration for the orders table":  {"When editing database migrations"},
		"Change api/users.proto to add a field": {"*.proto"},
		"Write the README":                      nil,
	}
	for task, want := range cases {
		got, err := m.MatchRules(bg, task, 5, 0)
		if err != nil {
			t.Fatal(err)
		}
		var conds []string
		for _, r := range got {
			conds = append(conds, r.Condition)
		}
		if strings.Join(conds, ";") != strings.Join(want, ";") {
			t.Errorf("%q: rules %q, want %q", task, conds, want)
		}
	}
}

func TestCompact(t *testing.T) {
	dir := t.TempDir()
	ix := openIndex(t)
	m := openManager(t, dir, ix)
	for i := 0; i < 15; i++ {
		if _, err := m.Append(bg, Episodic, Entry{Content: fmt.Sprintf("observation number %d about caching", i), Metadata: map[string]any{"task": "analysis"}}); err != nil {
			t.Fatal(err)
		}
	}
	rep, err := m.Compact(bg, Episodic, &CompactOptions{KeepLast: 5})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Before != 15 || rep.After != 6 || rep.Summarized != 10 || rep.Summarizer != "local" {
		t.Fatalf("%+v", rep)
	}
	ep := m.Episodic()
	if !strings.HasPrefix(ep[0].Content, "[Summary of 10 entries]\n- observation number 0 about caching [task=analysis]") || ep[1].Content != "observation number 10 about caching" {
		t.Fatalf("%q / %q", ep[0].Content, ep[1].Content)
	}
	m.Close()
	m2 := openManager(t, dir, ix)
	if len(m2.Episodic()) != 6 {
		t.Fatalf("%d after reopen", len(m2.Episodic()))
	}
	recs, _ := ix.Records(bg, index.Filter{SourceURL: m2.src})
	if len(recs) != 6 {
		t.Errorf("%d index records after compaction, want 6", len(recs))
	}
	// Without summaries, older entries are dropped; procedural keeps the
	// newest rules; semantic is left alone.
	no := false
	if rep, _ := m2.Compact(bg, Episodic, &CompactOptions{KeepLast: 2, SummarizeOlder: &no}); rep.After != 2 || rep.Summarized != 0 {
		t.Errorf("%+v", rep)
	}
	for i := 0; i < 4; i++ {
		m2.AddRule(bg, Rule{Condition: fmt.Sprintf("c%d", i), Action: "a"})
	}
	if rep, _ := m2.Compact(bg, Procedural, &CompactOptions{KeepLast: 1}); rep.After != 1 || m2.Rules()[0].Condition != "c3" {
		t.Errorf("%+v %+v", rep, m2.Rules())
	}
}

type failingSummarizer struct{}

func (failingSummarizer) Summarize(context.Context, []Entry) (string, error) {
	return "", errors.New("model down")
}

func TestCompactFallsBackToLocalSummary(t *testing.T) {
	m, err := Open(bg, t.TempDir(), &Options{Summarizer: failingSummarizer{}, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	for i := 0; i < 4; i++ {
		m.Append(bg, Working, Entry{Content: fmt.Sprintf("w%d", i)})
	}
	rep, err := m.Compact(bg, Working, &CompactOptions{KeepLast: 1})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Fallback != "model down" || rep.Summarizer != "local" || !strings.HasPrefix(m.Working()[0].Content, "[Summary of 3 entries]") {
		t.Fatalf("%+v %+v", rep, m.Working())
	}
}

func TestStatsAndClear(t *testing.T) {
	dir := t.TempDir()
	ix := openIndex(t)
	m := openManager(t, dir, ix)
	m.Append(bg, Working, Entry{Content: "thinking about caching"})
	m.Append(bg, Episodic, Entry{Content: "ran the benchmark"})
	m.Learn(bg, Knowledge{Key: "k", Value: "v"})
	m.AddRule(bg, Rule{Condition: "bench", Action: "use -benchtime 2x"})
	st := m.Stats()
	if st.WorkingMemoryTokens != budget.CounterForModel("").Count("thinking about caching") || st.EpisodicEntryCount != 1 || st.SemanticEntryCount != 1 || st.ProceduralRuleCount != 1 || st.TotalStorageBytes < 100 {
		t.Fatalf("%+v", st)
	}
	if err := m.Clear(bg, Episodic); err != nil {
		t.Fatal(err)
	}
	if st := m.Stats(); st.EpisodicEntryCount != 0 || st.SemanticEntryCount != 1 {
		t.Fatalf("%+v", st)
	}
	if recs, _ := ix.Records(bg, index.Filter{SourceURL: m.src}); len(recs) != 0 {
		t.Error("episodic records left in the index")
	}
	if err := m.Clear(bg); err != nil {
		t.Fatal(err)
	}
	if st := m.Stats(); st != (Stats{TotalStorageBytes: st.TotalStorageBytes}) || st.TotalStorageBytes > 20 {
		t.Fatalf("%+v", st)
	}
	for _, f := range []string{episodicFile, semanticFile, proceduralFile} {
		if _, err := os.Stat(filepath.Join(dir, f)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s not removed", f)
		}
	}
}

func TestManagerLocksItsDirectory(t *testing.T) {
	dir := t.TempDir()
	m := openManager(t, dir, nil)
	if _, err := Open(bg, dir, &Options{Logger: quiet()}); !errors.Is(err, memory.ErrLocked) {
		t.Fatalf("second open: %v", err)
	}
	m.Close()
	if _, err := m.Append(bg, Working, Entry{Content: "x"}); !errors.Is(err, ErrClosed) {
		t.Errorf("append after close: %v", err)
	}
	m2, err := Open(bg, dir, &Options{Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	m2.Close()
}

var (
	bg        = context.Background()
	clock     = memtest.Now
	quiet     = memtest.Quiet
	openIndex = memtest.OpenIndex
)

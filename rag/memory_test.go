package rag_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ragmem/ragmem/index"
	"github.com/ragmem/ragmem/internal/server"
	"github.com/ragmem/ragmem/rag"
)

// The conformance suite of the contract (go-cloud's way): one table of
// cases, run through every implementation of rag.Memory. A case gets a
// fresh, empty memory; what it checks must hold for each.

// harness opens a fresh memory in a temporary directory.
type harness struct {
	name string
	open func(t *testing.T) rag.Memory
}

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// engineHarness is the engine in process.
func engineHarness(t *testing.T) rag.Memory {
	t.Helper()
	eng, err := rag.Open(context.Background(), t.TempDir(), &rag.Options{Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = eng.Close() })
	return eng
}

// clientHarness is the client over the real server's handler, on a local
// listener (the owner's socket is one; a loopback port here): the server
// opens its own engine in the directory.
func clientHarness(t *testing.T) rag.Memory {
	t.Helper()
	dir := t.TempDir()
	tok, _, err := server.EnsureToken(dir)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := server.New(context.Background(), dir, &server.Options{Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, server.Listener{Listener: ln, Local: true}) }()
	c, err := rag.Dial("http://"+ln.Addr().String(), tok, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = c.Close()
		cancel()
		if err := <-done; err != nil && !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("serve: %v", err)
		}
		if err := srv.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return c
}

var harnesses = []harness{{"engine", engineHarness}, {"client", clientHarness}}

// conformance is the table: each case runs on a fresh memory of every
// implementation.
var conformance = []struct {
	name string
	run  func(t *testing.T, ctx context.Context, m rag.Memory)
}{
	{"index, reindex unchanged, search, sources, page", func(t *testing.T, ctx context.Context, m rag.Memory) {
		doc := rag.DocumentRequest{URL: "https://example.com/otters", Title: "Otters", Content: "Sea otters hold hands while they sleep so that they do not drift apart."}
		r, err := m.Index(ctx, rag.DocumentsRequest{Documents: []rag.DocumentRequest{doc}})
		if err != nil || len(r.Results) != 1 || r.Results[0].URL != doc.URL || r.Results[0].Chunks == 0 || r.Results[0].Unchanged || r.Results[0].Err() != nil || r.Results[0].ContentHash == "" {
			t.Fatalf("Index = %+v, %v", r, err)
		}
		r, err = m.Index(ctx, rag.DocumentsRequest{Documents: []rag.DocumentRequest{doc}})
		if err != nil || !r.Results[0].Unchanged {
			t.Fatalf("Index again = %+v, %v; want unchanged", r, err)
		}
		s, err := m.Search(ctx, rag.SearchRequest{Query: "otters sleep holding hands", Mode: "fulltext"})
		if err != nil || len(s.Results) == 0 || s.Results[0].URL != doc.URL || s.Mode != "fulltext" {
			t.Fatalf("Search = %+v, %v", s, err)
		}
		src, err := m.Sources(ctx, rag.SourcesRequest{})
		if err != nil || src.Total != 1 || len(src.Sources) != 1 || src.Sources[0].URL != doc.URL || src.Limit != rag.DefaultListLimit {
			t.Fatalf("Sources = %+v, %v", src, err)
		}
		p, err := m.Page(ctx, doc.URL)
		if err != nil || p.Title != "Otters" || len(p.Chunks) == 0 || !strings.Contains(p.Chunks[0].Content, "otters") {
			t.Fatalf("Page = %+v, %v", p, err)
		}
		st, err := m.Stats(ctx)
		if err != nil || st.DocumentCount != 1 || st.ChunkCount == 0 {
			t.Fatalf("Stats = %+v, %v", st, err)
		}
	}},
	{"attributes set in place, sources removed by filter", func(t *testing.T, ctx context.Context, m rag.Memory) {
		var docs []rag.DocumentRequest
		for i, team := range []string{"search", "search", "storage"} {
			docs = append(docs, rag.DocumentRequest{URL: fmt.Sprintf("https://example.com/note-%d", i), Attrs: map[string]string{"team": team},
				Content: fmt.Sprintf("Note %d of the %s team: the index is rebuilt every night.", i, team)})
		}
		if r, err := m.Index(ctx, rag.DocumentsRequest{Documents: docs}); err != nil || len(r.Results) != 3 {
			t.Fatalf("Index = %+v, %v", r, err)
		}
		// note-0 moves to another team and loses nothing else; its text is
		// not embedded again, so its chunks keep their ids.
		red := "red"
		a, err := m.SetSourceAttrs(ctx, docs[0].URL, rag.SetAttrsRequest{Attrs: map[string]*string{"team": &red, "absent": nil}})
		if err != nil || a.URL != docs[0].URL || a.Changed == 0 {
			t.Fatalf("SetSourceAttrs = %+v, %v", a, err)
		}
		if _, err := m.SetSourceAttrs(ctx, "https://example.com/none", rag.SetAttrsRequest{Attrs: map[string]*string{"team": &red}}); !errors.Is(err, rag.ErrNotFound) {
			t.Errorf("SetSourceAttrs of no source: %v, want ErrNotFound", err)
		}
		// Sources lists by filter, type and page.
		if src, err := m.Sources(ctx, rag.SourcesRequest{Filter: "team = search"}); err != nil || src.Total != 1 || src.Sources[0].URL != docs[1].URL {
			t.Fatalf("Sources by filter = %+v, %v", src, err)
		}
		if src, err := m.Sources(ctx, rag.SourcesRequest{Types: []string{"preference"}}); err != nil || src.Total != 0 {
			t.Fatalf("Sources of preferences = %+v, %v", src, err)
		}
		if src, err := m.Sources(ctx, rag.SourcesRequest{Types: []string{"knowledge"}, Offset: 1, Limit: 1}); err != nil ||
			src.Total != 3 || src.Limit != 1 || src.Offset != 1 || len(src.Sources) != 1 || src.Sources[0].URL != docs[1].URL {
			t.Fatalf("Sources page 2 = %+v, %v", src, err)
		}
		// A dry run names what a removal would take, and takes nothing.
		d, err := m.DeleteSources(ctx, rag.DeleteSourcesRequest{Filter: "team = search", DryRun: true})
		if err != nil || !d.DryRun || d.Removed != 1 || len(d.Sources) != 1 || d.Sources[0].URL != docs[1].URL {
			t.Fatalf("DeleteSources dry run = %+v, %v", d, err)
		}
		if src, err := m.Sources(ctx, rag.SourcesRequest{}); err != nil || src.Total != 3 {
			t.Fatalf("after the dry run: %+v, %v", src, err)
		}
		d, err = m.DeleteSources(ctx, rag.DeleteSourcesRequest{Filter: "team IN [search, red]"})
		if err != nil || d.DryRun || d.Removed != 2 || d.Chunks == 0 || len(d.Sources) != 2 || d.Sources[0].URL != docs[0].URL || d.Sources[1].URL != docs[1].URL {
			t.Fatalf("DeleteSources = %+v, %v", d, err)
		}
		src, err := m.Sources(ctx, rag.SourcesRequest{})
		if err != nil || src.Total != 1 || src.Sources[0].URL != docs[2].URL {
			t.Fatalf("after the removal: %+v, %v", src, err)
		}
		// A filter that matches every source removes nothing without all.
		if _, err := m.DeleteSources(ctx, rag.DeleteSourcesRequest{Filter: "team = storage"}); !errors.Is(err, rag.ErrMatchesAll) {
			t.Errorf("a filter matching every source: %v, want ErrMatchesAll", err)
		}
		if _, err := m.DeleteSources(ctx, rag.DeleteSourcesRequest{}); !errors.Is(err, rag.ErrMatchesAll) {
			t.Errorf("no filter: %v, want ErrMatchesAll", err)
		}
		if d, err := m.DeleteSources(ctx, rag.DeleteSourcesRequest{All: true}); err != nil || d.Removed != 1 {
			t.Fatalf("DeleteSources all = %+v, %v", d, err)
		}
	}},
	{"a conversation searched by turn, round and session", func(t *testing.T, ctx context.Context, m rag.Memory) {
		turns := []struct{ role, text string }{
			{"user", "My sister's wedding is on the twelfth of June in Lisbon."},
			{"assistant", "Congratulations! June in Lisbon is lovely; book the flights early."},
			{"user", "Which suit colour suits a summer wedding?"},
			{"assistant", "Light grey or sand linen suits a summer wedding well."},
		}
		var docs []rag.DocumentRequest
		for i, tu := range turns {
			docs = append(docs, rag.DocumentRequest{URL: fmt.Sprintf("https://example.com/chat/%d", i), Content: tu.text,
				Attrs: map[string]string{"session": "1", "turn": fmt.Sprint(i), "role": tu.role, "speaker": tu.role}})
		}
		if _, err := m.Index(ctx, rag.DocumentsRequest{Documents: docs}); err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct {
			unit  string
			turns []int // of the first result
		}{{"", nil}, {"round", []int{0, 1}}, {"session", []int{0, 1, 2, 3}}} {
			s, err := m.Search(ctx, rag.SearchRequest{Query: "when is the wedding in Lisbon", Mode: "fulltext", Unit: c.unit})
			if err != nil || len(s.Results) == 0 {
				t.Fatalf("unit %q: %+v, %v", c.unit, s, err)
			}
			u := s.Results[0].Unit
			if c.turns == nil {
				if u != nil || s.Results[0].URL != docs[0].URL {
					t.Errorf("by turn: the first result is %s with unit %+v", s.Results[0].URL, u)
				}
				continue
			}
			var got []int
			if u != nil {
				for _, tu := range u.Turns {
					got = append(got, tu.Turn)
				}
			}
			if u == nil || u.Kind != c.unit || u.Session != "1" || !slices.Equal(got, c.turns) || !strings.Contains(s.Results[0].Content, "Lisbon is lovely") {
				t.Errorf("unit %q: first result %+v, its unit %+v", c.unit, s.Results[0].ChunkJSON, u)
			}
		}
		if _, err := m.Search(ctx, rag.SearchRequest{Query: "wedding", Unit: "paragraph"}); !errors.Is(err, rag.ErrBadRequest) {
			t.Errorf("an unknown unit: %v, want ErrBadRequest", err)
		}
	}},
	{"bad requests are ErrBadRequest with code bad_request", func(t *testing.T, ctx context.Context, m rag.Memory) {
		calls := map[string]error{}
		_, calls["empty index"] = m.Index(ctx, rag.DocumentsRequest{})
		_, calls["blank query"] = m.Search(ctx, rag.SearchRequest{Query: "  "})
		_, calls["unknown mode"] = m.Search(ctx, rag.SearchRequest{Query: "x", Mode: "telepathy"})
		_, calls["bad filter"] = m.Search(ctx, rag.SearchRequest{Query: "x", Filter: "title =="})
		_, calls["context without query"] = m.BuildContext(ctx, rag.ContextRequest{})
		_, calls["unknown type"] = m.Sources(ctx, rag.SourcesRequest{Types: []string{"gossip"}})
		_, calls["unknown preference type"] = m.AddPreference(ctx, rag.PreferenceRequest{Type: "mood", Content: "x"})
		_, calls["unknown job state"] = m.Jobs(ctx, rag.JobsRequest{States: []string{"sleeping"}})
		_, calls["page without content"] = m.IndexPage(ctx, rag.PageRequest{URL: "https://example.com/a", HTML: "<p>x</p>", Text: "x"})
		for name, err := range calls {
			if !errors.Is(err, rag.ErrBadRequest) || rag.ErrorCode(err) != "bad_request" {
				t.Errorf("%s: err = %v (code %q), want ErrBadRequest", name, err, rag.ErrorCode(err))
			}
			var e *rag.Error
			if !errors.As(err, &e) || e.Message == "" {
				t.Errorf("%s: %v is not an *rag.Error with a message", name, err)
			}
		}
	}},
	{"what is not there is ErrNotFound", func(t *testing.T, ctx context.Context, m rag.Memory) {
		calls := map[string]error{}
		_, calls["page"] = m.Page(ctx, "https://example.com/none")
		_, calls["forget"] = m.ForgetPage(ctx, "https://example.com/none")
		_, calls["job"] = m.Job(ctx, "nope")
		calls["preference"] = m.RemovePreference(ctx, "nope")
		for name, err := range calls {
			if !errors.Is(err, rag.ErrNotFound) || rag.ErrorCode(err) != "not_found" {
				t.Errorf("%s: err = %v (code %q), want ErrNotFound", name, err, rag.ErrorCode(err))
			}
		}
		_, err := m.RetryJob(ctx, "nope")
		if !errors.Is(err, rag.ErrNoJob) {
			t.Errorf("RetryJob: %v, want ErrNoJob", err)
		}
		if err := m.DropJob(ctx, "nope"); !errors.Is(err, rag.ErrNoJob) {
			t.Errorf("DropJob: %v, want ErrNoJob", err)
		}
		if n, err := m.Remove(ctx, "https://example.com/none"); n != 0 || err != nil {
			t.Errorf("Remove of nothing = %d, %v; want 0, nil", n, err)
		}
	}},
	{"reserved sources are refused with ErrReserved", func(t *testing.T, ctx context.Context, m rag.Memory) {
		_, err := m.Index(ctx, rag.DocumentsRequest{Documents: []rag.DocumentRequest{{URL: "file:///m.md", Content: "x", Type: index.DocMemory}}})
		if !errors.Is(err, rag.ErrReserved) || rag.ErrorCode(err) != "reserved" {
			t.Errorf("Index of a memory: %v, want ErrReserved", err)
		}
		_, err = m.IndexPage(ctx, rag.PageRequest{URL: "preference:p1", Text: "x"})
		if !errors.Is(err, rag.ErrReserved) || rag.ErrorCode(err) != "reserved" {
			t.Errorf("IndexPage of a preference's address: %v, want ErrReserved", err)
		}
		_, err = m.ForgetPage(ctx, "memory:notes.md")
		if !errors.Is(err, rag.ErrReserved) {
			t.Errorf("ForgetPage of a memory's address: %v, want ErrReserved", err)
		}
	}},
	{"forget and remove", func(t *testing.T, ctx context.Context, m rag.Memory) {
		docs := []rag.DocumentRequest{
			{URL: "https://example.com/a", Content: "Alpha text about granite quarries."},
			{URL: "file:///notes/b.txt", Content: "Beta text about marble quarries."},
		}
		if _, err := m.Index(ctx, rag.DocumentsRequest{Documents: docs}); err != nil {
			t.Fatal(err)
		}
		f, err := m.ForgetPage(ctx, "https://example.com/a")
		if err != nil || f.Removed == 0 || f.URL != "https://example.com/a" || f.CancelledJobs == nil {
			t.Fatalf("ForgetPage = %+v, %v", f, err)
		}
		n, err := m.Remove(ctx, "file:///notes/b.txt")
		if err != nil || n == 0 {
			t.Fatalf("Remove = %d, %v", n, err)
		}
		src, err := m.Sources(ctx, rag.SourcesRequest{})
		if err != nil || src.Total != 0 || len(src.Sources) != 0 {
			t.Fatalf("Sources after = %+v, %v", src, err)
		}
	}},
	{"preferences", func(t *testing.T, ctx context.Context, m rag.Memory) {
		ps, err := m.Preferences(ctx)
		if err != nil || ps == nil || len(ps) != 0 {
			t.Fatalf("Preferences of an empty memory = %#v, %v; want an empty list", ps, err)
		}
		p, err := m.AddPreference(ctx, rag.PreferenceRequest{Type: "expertise", Content: "User is a geologist"})
		if err != nil || p.ID == "" || p.Content != "User is a geologist" {
			t.Fatalf("AddPreference = %+v, %v", p, err)
		}
		d, err := m.DetectPreferences(ctx, rag.DetectRequest{Message: "I prefer short answers.", Save: true})
		if err != nil || !d.Detected || d.Saved == nil || len(d.SavedAll) != len(d.Intents) {
			t.Fatalf("DetectPreferences = %+v, %v", d, err)
		}
		if ps, err = m.Preferences(ctx); err != nil || len(ps) != 1+len(d.SavedAll) {
			t.Fatalf("Preferences = %+v, %v", ps, err)
		}
		if err := m.RemovePreference(ctx, p.ID); err != nil {
			t.Fatalf("RemovePreference: %v", err)
		}
		n, err := m.ClearPreferences(ctx)
		if err != nil || n != len(d.SavedAll) {
			t.Fatalf("ClearPreferences = %d, %v; want %d", n, err, len(d.SavedAll))
		}
		c, err := m.BuildContext(ctx, rag.ContextRequest{Query: "rocks"})
		if err != nil || !c.Empty || c.Profile != "" {
			t.Fatalf("BuildContext after clearing = %+v, %v; want an empty block", c, err)
		}
	}},
	{"background page, its job, the job list", func(t *testing.T, ctx context.Context, m rag.Memory) {
		a, err := m.IndexPage(ctx, rag.PageRequest{URL: "https://example.com/p", Title: "P", Text: "Basalt columns form as lava cools and contracts."})
		if err != nil || a.Status != "queued" || a.JobID == "" || a.Job == nil || a.Title != "P" {
			t.Fatalf("IndexPage = %+v, %v", a, err)
		}
		var j *rag.JobJSON
		for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			if j, err = m.Job(ctx, a.JobID); err != nil {
				t.Fatal(err)
			}
			if j.State == string(index.JobDone) || time.Now().After(deadline) {
				break
			}
		}
		if j.State != string(index.JobDone) || j.Chunks == 0 || j.URL != "https://example.com/p" {
			t.Fatalf("Job = %+v", j)
		}
		js, err := m.Jobs(ctx, rag.JobsRequest{States: []string{"done"}})
		if err != nil || len(js.Jobs) != 1 || js.Jobs[0].ID != a.JobID || js.Queue.Done != 1 {
			t.Fatalf("Jobs = %+v, %v", js, err)
		}
		again, err := m.IndexPage(ctx, rag.PageRequest{URL: "https://example.com/p", Title: "P", Text: "Basalt columns form as lava cools and contracts."})
		if err != nil || again.Status != "unchanged" || again.Chunks != j.Chunks {
			t.Fatalf("IndexPage again = %+v, %v; want unchanged", again, err)
		}
	}},
	{"a context without a model gets the engine's budgets", func(t *testing.T, ctx context.Context, m rag.Memory) {
		if _, err := m.Index(ctx, rag.DocumentsRequest{Documents: []rag.DocumentRequest{{URL: "https://example.com/g", Content: "Gneiss is a metamorphic rock with bands."}}}); err != nil {
			t.Fatal(err)
		}
		c, err := m.BuildContext(ctx, rag.ContextRequest{Query: "what is gneiss?"})
		if err != nil {
			t.Fatal(err)
		}
		// The window of no model (ContextLimitForModel("")) less the
		// default response reserve (1024) and the query.
		if want := rag.ContextLimitForModel("") - 1024 - c.Tokens.UserQuery; c.Budgets.TotalAvailable != want || c.Tokens.UserQuery == 0 {
			t.Fatalf("budgets = %+v (query %d tokens), want %d tokens available", c.Budgets, c.Tokens.UserQuery, want)
		}
		if c.Empty || len(c.Sources) == 0 || !strings.HasPrefix(c.Message.Content, rag.UntrustedPrefix) {
			t.Fatalf("context = %+v", c)
		}
	}},
}

func TestMemoryConformance(t *testing.T) {
	for _, h := range harnesses {
		t.Run(h.name, func(t *testing.T) {
			for _, c := range conformance {
				t.Run(c.name, func(t *testing.T) {
					ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
					defer cancel()
					c.run(t, ctx, h.open(t))
				})
			}
		})
	}
}

// The httptest server is what other tests of the client use; here the
// client must fail cleanly when the API is not there.
func TestClientRefusesABadBase(t *testing.T) {
	for _, base := range []string{"", "localhost:7070", "ftp://x", "http://"} {
		if _, err := rag.Dial(base, "t", nil); err == nil {
			t.Errorf("Dial(%q) accepted", base)
		}
	}
	hs := httptest.NewServer(http.NotFoundHandler())
	defer hs.Close()
	c, err := rag.Dial(hs.URL, "t", nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Search(context.Background(), rag.SearchRequest{Query: "x"})
	if !errors.Is(err, rag.ErrNotFound) {
		t.Errorf("a server without the API: %v, want ErrNotFound", err)
	}
}

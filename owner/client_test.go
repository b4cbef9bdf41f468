package owner_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"testing"
	"time"

	"github.com/ragmem/ragmem/chunk"
	"github.com/ragmem/ragmem/index"
	"github.com/ragmem/ragmem/owner"
	"github.com/ragmem/ragmem/prefs"
	"github.com/ragmem/ragmem/rag"
	"github.com/ragmem/ragmem/search"
	"github.com/ragmem/ragmem/server"
)

// ownerOf makes this test the owner of a new data directory: the API on
// the owner's socket, over the engine it returns.
func ownerOf(t *testing.T) (dir string, eng *rag.Engine, info owner.Info, stop func()) {
	t.Helper()
	dir = t.TempDir()
	claim, err := owner.TryClaim(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := server.EnsureToken(dir); err != nil {
		t.Fatal(err)
	}
	srv, err := server.New(context.Background(), dir, &server.Options{Logger: quiet(), Open: func(ctx context.Context, d string) (*rag.Engine, error) {
		e, err := rag.Open(ctx, d, &rag.Options{Logger: quiet()})
		if d == dir {
			eng = e
		}
		return e, err
	}})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := claim.Listen(owner.Info{Kind: owner.KindServe})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, server.Listener{Listener: ln, Local: true}) }()
	stopped := false
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		claim.Withdraw()
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
		claim.Release()
	}
	t.Cleanup(stop)
	return dir, eng, claim.Info(), stop
}

// norm makes records comparable: times in UTC without monotonic readings.
func norm[T any](v T) T {
	rv := reflect.ValueOf(&v).Elem()
	normValue(rv)
	return v
}

func normValue(v reflect.Value) {
	switch v.Kind() {
	case reflect.Struct:
		if v.Type() == reflect.TypeOf(time.Time{}) {
			if v.CanSet() {
				v.Set(reflect.ValueOf(v.Interface().(time.Time).UTC().Round(0)))
			}
			return
		}
		for i := range v.NumField() {
			if v.Field(i).CanSet() {
				normValue(v.Field(i))
			}
		}
	case reflect.Slice:
		for i := range v.Len() {
			normValue(v.Index(i))
		}
	case reflect.Pointer:
		if !v.IsNil() {
			normValue(v.Elem())
		}
	}
}

// TestClientMatchesEngine runs each operation through the client and on
// the engine it reaches, and compares: the client is the local engine seen
// through the API, field for field.
func TestClientMatchesEngine(t *testing.T) {
	dir, eng, info, _ := ownerOf(t)
	ctx := context.Background()
	c, err := owner.NewClient(dir, info, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()

	docs := []index.Document{
		{SourceURL: "file:///notes/otters.md", Title: "Otters", Content: "# Otters\n\n## Sleep\n\nOtters hold hands while they sleep so they do not drift apart.\n\n## Food\n\nThey eat sea urchins.", Format: chunk.Markdown},
		{SourceURL: "https://zoo.example/zebra", Content: "<html><head><title>Zebras</title></head><body><h1>Zebras</h1><p>Zebras have stripes that confuse flies.</p></body></html>", Format: chunk.HTML},
		{SourceURL: "memo://tapir", Content: "Tapirs snorkel with their trunks.", Attrs: map[string]string{"agent": "tester"}},
	}
	for i := range 1005 { // more sources than one page of GET /v1/sources
		docs = append(docs, index.Document{SourceURL: fmt.Sprintf("file:///bulk/%04d.txt", i), Content: fmt.Sprintf("Bulk note %d about capybaras and water.", i)})
	}
	rs, err := c.IndexMany(ctx, docs)
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != len(docs) || rs[0].Chunks < 2 || rs[0].ContentHash == "" || rs[0].Err != nil || rs[0].SourceURL != docs[0].SourceURL {
		t.Fatalf("IndexMany: %d results, first %+v", len(rs), rs[0])
	}
	again, err := c.IndexMany(ctx, docs[:3])
	if err != nil || !again[0].Unchanged || !again[2].Unchanged {
		t.Fatalf("IndexMany again: %+v %v", again, err)
	}

	for _, q := range []struct {
		query string
		o     *search.Options
	}{
		{"otters sleep", nil},
		{"stripes flies", &search.Options{Mode: search.FullText, TopK: 3}},
		{"capybaras", &search.Options{Mode: search.Vector, TopK: 7, SimilarityThreshold: -1}},
		{"tapirs", &search.Options{DocTypes: []string{index.DocKnowledge}, Attrs: map[string]string{"agent": "tester"}}},
		{"otters", &search.Options{SourceURL: "file:///notes/otters.md", Fusion: search.RRF}},
		{"   ", nil},
	} {
		want, wrep, err := eng.RetrieveReport(ctx, q.query, q.o)
		if err != nil {
			t.Fatal(err)
		}
		got, grep, err := c.SearchReport(ctx, q.query, q.o)
		if err != nil {
			t.Fatalf("%q: %v", q.query, err)
		}
		if !reflect.DeepEqual(norm(got), norm(want)) {
			t.Errorf("Search %q %+v:\n got  %+v\n want %+v", q.query, q.o, got, want)
		}
		if grep.Mode != wrep.Mode || grep.Degraded != wrep.Degraded {
			t.Errorf("Search %q report %+v, want %+v", q.query, grep, wrep)
		}
	}

	for _, f := range []struct {
		types         []string
		offset, limit int
	}{{nil, 0, 0}, {[]string{index.DocKnowledge}, 0, 0}, {[]string{index.DocMemory, index.DocKnowledge}, 3, 10}, {nil, 1000, 3}} {
		want, wtotal, err := eng.Store().Sources(ctx, index.Filter{DocTypes: f.types}, f.offset, f.limit)
		if err != nil {
			t.Fatal(err)
		}
		got, gtotal, err := c.Sources(ctx, index.Filter{DocTypes: f.types}, f.offset, f.limit)
		if err != nil {
			t.Fatal(err)
		}
		if gtotal != wtotal || !reflect.DeepEqual(norm(got), norm(want)) {
			t.Errorf("Sources %+v: %d of %d, want %d of %d", f, len(got), gtotal, len(want), wtotal)
		}
	}

	p, err := c.AddPreference(ctx, prefs.Style, "Concise answers with code")
	if err != nil {
		t.Fatal(err)
	}
	want, _ := eng.PreferenceStore().List(ctx)
	got, err := c.ListPreferences(ctx)
	if err != nil || !reflect.DeepEqual(norm(got), norm(want)) || len(got) != 1 || got[0].ID != p.ID {
		t.Errorf("ListPreferences %+v, want %+v (%v)", got, want, err)
	}
	if _, err := c.AddPreference(ctx, prefs.Style, "   "); err == nil {
		t.Error("an empty preference was accepted")
	}

	co := owner.ContextOptions{ContextOptions: rag.ContextOptions{Model: "gpt-4o", SystemPrompt: "You are helpful."}, Mode: search.FullText, TopK: 2, KnowledgeBudget: 300}
	cfg := eng.Config()
	cfg.SearchMode, cfg.TopK, cfg.KnowledgeBudget = co.Mode, co.TopK, co.KnowledgeBudget
	req := co.ContextOptions
	req.Config = &cfg
	wc, err := eng.ContextFor(ctx, "otters and zebras", req)
	if err != nil {
		t.Fatal(err)
	}
	gc, err := c.BuildContext(ctx, "otters and zebras", co)
	if err != nil {
		t.Fatal(err)
	}
	for i := range wc.Block.Sources {
		wc.Block.Sources[i].Content = "" // the API sends the rendered block, not each source's text
	}
	wc.Block.Retrieval.Err = nil // it may name servers: it stays with the owner
	if !reflect.DeepEqual(norm(gc), norm(wc)) {
		t.Errorf("BuildContext:\n got  %+v\n want %+v", gc, wc)
	}

	wst, _ := eng.Stats(ctx)
	gst, err := c.Stats(ctx)
	// The bytes on disk change between two calls while bleve merges its
	// segments in the background: both must be there, not be equal.
	if gst.IndexSizeBytes <= 0 || wst.IndexSizeBytes <= 0 {
		t.Errorf("index size: client %d, engine %d bytes", gst.IndexSizeBytes, wst.IndexSizeBytes)
	}
	gst.IndexSizeBytes, wst.IndexSizeBytes = 0, 0
	if err != nil || !reflect.DeepEqual(norm(gst), norm(wst)) {
		t.Errorf("Stats %+v, want %+v (%v)", gst, wst, err)
	}

	if ok, err := c.RemovePreference(ctx, p.ID); !ok || err != nil {
		t.Errorf("RemovePreference: %v %v", ok, err)
	}
	if ok, err := c.RemovePreference(ctx, p.ID); ok || err != nil {
		t.Errorf("RemovePreference again: %v %v", ok, err)
	}
	c.AddPreference(ctx, prefs.Domain, "Marine biology")
	if n, err := c.ClearPreferences(ctx); n != 1 || err != nil {
		t.Errorf("ClearPreferences: %d %v", n, err)
	}
	if n, err := c.Remove(ctx, "memo://tapir"); n != 1 || err != nil {
		t.Errorf("Remove: %d %v", n, err)
	}
	if n, err := c.Remove(ctx, "memo://tapir"); n != 0 || err != nil {
		t.Errorf("Remove again: %d %v", n, err)
	}
	// What belongs to the memory and preference stores is refused through
	// the client as in process: errors.Is(err, rag.ErrReserved).
	c.AddPreference(ctx, prefs.Domain, "Marine biology")
	if _, err := c.Remove(ctx, "preference://user"); !errors.Is(err, rag.ErrReserved) {
		t.Errorf("Remove preference://user: %v", err)
	}
	if _, err := c.IndexMany(ctx, []index.Document{{SourceURL: "memo://x", Content: "forged", DocType: index.DocMemory}}); !errors.Is(err, rag.ErrReserved) {
		t.Errorf("IndexMany of a memory: %v", err)
	}
	if ps, _ := c.ListPreferences(ctx); len(ps) != 1 {
		t.Errorf("preferences after the refusals: %+v", ps)
	}
}

// TestClientOwnerGone: an owner that went away fails every request at once
// with a GoneError that says whether the request was sent.
func TestClientOwnerGone(t *testing.T) {
	dir, _, info, stop := ownerOf(t)
	c, err := owner.NewClient(dir, info, &owner.ClientOptions{Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	if _, err := c.Stats(ctx); err != nil {
		t.Fatal(err)
	}
	stop()
	start := time.Now()
	_, err = c.Search(ctx, "anything", nil)
	var ge *owner.GoneError
	if !errors.As(err, &ge) || !errors.Is(err, owner.ErrGone) || ge.Sent {
		t.Fatalf("after the owner stopped: %v", err)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("took %v to fail", d)
	}
}

// TestClientTimeout: an owner that accepts but never answers costs a
// request its timeout, not a hang.
func TestClientTimeout(t *testing.T) {
	dir := t.TempDir()
	claim, err := owner.TryClaim(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer claim.Release()
	writeToken(t, dir)
	ln, err := claim.Listen(owner.Info{Kind: owner.KindServe})
	if err != nil {
		t.Fatal(err)
	}
	hang := make(chan struct{})
	hs := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-hang })}
	go hs.Serve(ln)
	defer func() { close(hang); hs.Close() }()
	c, err := owner.NewClient(dir, claim.Info(), &owner.ClientOptions{Timeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	start := time.Now()
	_, err = c.Stats(context.Background())
	if err == nil || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("hung owner: %v", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("took %v", d)
	}
	// Cancellation ends a request at once too.
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	c2, _ := owner.NewClient(dir, claim.Info(), &owner.ClientOptions{Timeout: time.Minute})
	defer c2.Close()
	if _, err := c2.Stats(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
}

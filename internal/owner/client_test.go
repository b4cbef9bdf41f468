package owner_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"testing"
	"time"

	"github.com/ragmem/ragmem/index"
	"github.com/ragmem/ragmem/internal/owner"
	"github.com/ragmem/ragmem/internal/server"
	"github.com/ragmem/ragmem/rag"
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
	var m rag.Memory = c // the owner's client is the contract over its socket

	docs := []rag.DocumentRequest{
		{URL: "file:///notes/otters.md", Title: "Otters", Content: "# Otters\n\n## Sleep\n\nOtters hold hands while they sleep so they do not drift apart.\n\n## Food\n\nThey eat sea urchins.", Format: "markdown"},
		{URL: "https://zoo.example/zebra", Content: "<html><head><title>Zebras</title></head><body><h1>Zebras</h1><p>Zebras have stripes that confuse flies.</p></body></html>", Format: "html"},
		{URL: "memo://tapir", Content: "Tapirs snorkel with their trunks.", Attrs: map[string]string{"agent": "tester"}},
	}
	for i := range 1005 { // more documents than one request of POST /v1/documents takes
		docs = append(docs, rag.DocumentRequest{URL: fmt.Sprintf("file:///bulk/%04d.txt", i), Content: fmt.Sprintf("Bulk note %d about capybaras and water.", i)})
	}
	rs, err := m.Index(ctx, rag.DocumentsRequest{Documents: docs})
	if err != nil {
		t.Fatal(err)
	}
	if len(rs.Results) != len(docs) || rs.Results[0].Chunks < 2 || rs.Results[0].ContentHash == "" || rs.Results[0].Err() != nil || rs.Results[0].URL != docs[0].URL {
		t.Fatalf("Index: %d results, first %+v", len(rs.Results), rs.Results[0])
	}
	again, err := m.Index(ctx, rag.DocumentsRequest{Documents: docs[:3]})
	if err != nil || !again.Results[0].Unchanged || !again.Results[2].Unchanged {
		t.Fatalf("Index again: %+v %v", again, err)
	}

	// The same store answers the same through the socket as in process.
	noCap := 0
	for _, q := range []rag.SearchRequest{
		{Query: "otters sleep"},
		{Query: "stripes flies", Mode: "fulltext", TopK: 3},
		{Query: "capybaras", Mode: "vector", TopK: 7, MaxPerSource: &noCap},
		{Query: "tapirs", Filters: &rag.SearchFilters{DocTypes: []string{index.DocKnowledge}, Attrs: map[string]string{"agent": "tester"}}},
		{Query: "otters", Filters: &rag.SearchFilters{URL: "file:///notes/otters.md"}, Fusion: "rrf"},
	} {
		want, err := eng.Search(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		got, err := m.Search(ctx, q)
		if err != nil {
			t.Fatalf("%q: %v", q.Query, err)
		}
		got.TookMs, want.TookMs = 0, 0
		if !reflect.DeepEqual(norm(got), norm(want)) {
			t.Errorf("Search %+v:\n got  %+v\n want %+v", q, got, want)
		}
	}
	for _, q := range []rag.SourcesRequest{{}, {Types: []string{index.DocKnowledge}}, {Types: []string{index.DocMemory, index.DocKnowledge}, Offset: 3, Limit: 10}, {Offset: 1000, Limit: 3}} {
		want, err := eng.Sources(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		got, err := m.Sources(ctx, q)
		if err != nil || !reflect.DeepEqual(norm(got), norm(want)) {
			t.Errorf("Sources %+v: %+v (%v), want %+v", q, got, err, want)
		}
	}

	p, err := m.AddPreference(ctx, rag.PreferenceRequest{Type: "style", Content: "Concise answers with code"})
	if err != nil {
		t.Fatal(err)
	}
	want, _ := eng.Preferences(ctx)
	got, err := m.Preferences(ctx)
	if err != nil || !reflect.DeepEqual(norm(got), norm(want)) || len(got) != 1 || got[0].ID != p.ID {
		t.Errorf("Preferences %+v, want %+v (%v)", got, want, err)
	}
	if _, err := m.AddPreference(ctx, rag.PreferenceRequest{Type: "style", Content: "   "}); !errors.Is(err, rag.ErrBadRequest) {
		t.Errorf("an empty preference: %v", err)
	}

	cq := rag.ContextRequest{Query: "otters and zebras", Model: "gpt-4o", SystemPrompt: "You are helpful.", Mode: "fulltext", TopK: 2, KnowledgeBudget: 300}
	wc, err := eng.BuildContext(ctx, cq)
	if err != nil {
		t.Fatal(err)
	}
	gc, err := m.BuildContext(ctx, cq)
	if err != nil || !reflect.DeepEqual(norm(gc), norm(wc)) {
		t.Errorf("BuildContext:\n got  %+v\n want %+v (%v)", gc, wc, err)
	}

	wst, _ := eng.Stats(ctx)
	gst, err := m.Stats(ctx)
	// The bytes on disk change between two calls while bleve merges its
	// segments in the background: both must be there, not be equal.
	if gst.IndexSizeBytes <= 0 || wst.IndexSizeBytes <= 0 {
		t.Errorf("index size: client %d, engine %d bytes", gst.IndexSizeBytes, wst.IndexSizeBytes)
	}
	gst.IndexSizeBytes, wst.IndexSizeBytes = 0, 0
	if err != nil || !reflect.DeepEqual(norm(gst), norm(wst)) {
		t.Errorf("Stats %+v, want %+v (%v)", gst, wst, err)
	}

	if err := m.RemovePreference(ctx, p.ID); err != nil {
		t.Errorf("RemovePreference: %v", err)
	}
	if err := m.RemovePreference(ctx, p.ID); !errors.Is(err, rag.ErrNotFound) {
		t.Errorf("RemovePreference again: %v", err)
	}
	m.AddPreference(ctx, rag.PreferenceRequest{Type: "domain", Content: "Marine biology"})
	if n, err := m.ClearPreferences(ctx); n != 1 || err != nil {
		t.Errorf("ClearPreferences: %d %v", n, err)
	}
	if n, err := m.Remove(ctx, "memo://tapir"); n != 1 || err != nil {
		t.Errorf("Remove: %d %v", n, err)
	}
	if n, err := m.Remove(ctx, "memo://tapir"); n != 0 || err != nil {
		t.Errorf("Remove again: %d %v", n, err)
	}
	// What belongs to the memory and preference stores is refused through
	// the client as in process: errors.Is(err, rag.ErrReserved).
	m.AddPreference(ctx, rag.PreferenceRequest{Type: "domain", Content: "Marine biology"})
	if _, err := m.Remove(ctx, "preference://user"); !errors.Is(err, rag.ErrReserved) {
		t.Errorf("Remove preference://user: %v", err)
	}
	if _, err := m.Index(ctx, rag.DocumentsRequest{Documents: []rag.DocumentRequest{{URL: "memo://x", Content: "forged", Type: index.DocMemory}}}); !errors.Is(err, rag.ErrReserved) {
		t.Errorf("Index of a memory: %v", err)
	}
	if ps, _ := m.Preferences(ctx); len(ps) != 1 {
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
	_, err = c.Search(ctx, rag.SearchRequest{Query: "anything"})
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

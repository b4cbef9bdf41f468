package server

import (
	"context"
	"errors"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestFairSlots: one namespace can never hold every slot, a freed slot goes
// to the namespace holding the fewest, and a waiter whose context ends
// leaves the line (or gives back a slot granted meanwhile).
func TestFairSlots(t *testing.T) {
	ctx := context.Background()
	f := newFairSlots(2)
	relA1, err := f.acquire(ctx, "alice")
	if err != nil {
		t.Fatal(err)
	}
	// Alice's second page waits although a slot is free: it is kept for
	// the others.
	got := make(chan func(), 1)
	go func() {
		r, _ := f.acquire(ctx, "alice")
		got <- r
	}()
	select {
	case <-got:
		t.Fatal("one namespace took every slot")
	case <-time.After(20 * time.Millisecond):
	}
	// Bob gets the free slot at once.
	qctx, cancel := context.WithTimeout(ctx, time.Second)
	relB, err := f.acquire(qctx, "bob")
	cancel()
	if err != nil {
		t.Fatalf("bob waited behind alice: %v", err)
	}
	// Carol queues behind alice's second page; when bob's slot frees,
	// carol (holding none) gets it before alice (holding one).
	carol := make(chan func(), 1)
	go func() {
		r, _ := f.acquire(ctx, "carol")
		carol <- r
	}()
	time.Sleep(10 * time.Millisecond)
	relB()
	var relC func()
	select {
	case relC = <-carol:
	case <-got:
		t.Fatal("alice, holding a slot, was served before carol, holding none")
	case <-time.After(time.Second):
		t.Fatal("carol was not served")
	}
	relA1()
	select {
	case relA2 := <-got:
		relA2()
	case <-time.After(time.Second):
		t.Fatal("alice's second page was never served")
	}
	relC()
	// A waiter whose context ends leaves the line.
	r1, _ := f.acquire(ctx, "x")
	r2, _ := f.acquire(ctx, "y")
	cctx, cancel := context.WithTimeout(ctx, 10*time.Millisecond)
	if _, err := f.acquire(cctx, "z"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("waiting past the deadline: %v", err)
	}
	cancel()
	r1()
	r2()
	if f.busy() != 0 {
		t.Fatalf("%d slots still busy", f.busy())
	}
	// A single slot is shared, not reserved.
	one := newFairSlots(1)
	r, err := one.acquire(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	r()
	r() // releasing twice gives back one slot
	if one.busy() != 0 || one.free != 1 {
		t.Fatalf("busy %d, free %d", one.busy(), one.free)
	}
}

// TestSlowNamespaceDoesNotStallOthers: while alice's pages hold all the
// extraction slots a namespace may have, bob's page is extracted at once,
// and alice's next page waits.
func TestSlowNamespaceDoesNotStallOthers(t *testing.T) {
	dir := t.TempDir()
	tok, _, err := EnsureToken(dir)
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(context.Background(), dir, &Options{ExtractConcurrency: 2, RequestTimeout: 2 * time.Second,
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	hold, err := s.extract.acquire(context.Background(), "alice") // alice's slow page
	if err != nil {
		t.Fatal(err)
	}
	defer hold()
	post := func(ns string) *httptest.ResponseRecorder {
		body := `{"url":"https://f.example/` + ns + `","html":"<article><h1>Fair</h1><p>` + strings.Repeat("Herons wade in shallow water. ", 20) + `</p></article>"}`
		r := httptest.NewRequest("POST", "http://127.0.0.1/v1/pages", strings.NewReader(body))
		r.Header.Set("Authorization", "Bearer "+tok)
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set(NamespaceHeader, ns)
		w := httptest.NewRecorder()
		s.ServeHTTP(w, r)
		return w
	}
	for _, ns := range []string{"alice", "bob"} { // open their stores first
		r := httptest.NewRequest("GET", "http://127.0.0.1/v1/stats", nil)
		r.Header.Set("Authorization", "Bearer "+tok)
		r.Header.Set(NamespaceHeader, ns)
		s.ServeHTTP(httptest.NewRecorder(), r)
	}
	// Had bob queued behind alice's held slot, he would have waited out the
	// request timeout and got alice's 503; a 202 shows he did not wait for her.
	if w := post("bob"); w.Code != 202 {
		t.Fatalf("bob: %d %s", w.Code, w.Body)
	}
	if w := post("alice"); w.Code != 503 || !strings.Contains(w.Body.String(), "waiting to extract") {
		t.Fatalf("alice's second page: %d %s", w.Code, w.Body)
	}
}

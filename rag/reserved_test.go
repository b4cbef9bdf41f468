package rag

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/ragmem/ragmem/index"

	"github.com/ragmem/ragmem/internal/reserved"
	"github.com/ragmem/ragmem/prefs"
)

// snapshot is every record of the store, as a comparable text.
func snapshot(t *testing.T, e *Engine) string {
	t.Helper()
	recs, err := e.Store().Records(ctx, index.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, r := range recs {
		lines = append(lines, fmt.Sprintf("%s %s %s %q %v", r.ID, r.SourceURL, r.DocType, r.Content, r.Attrs))
	}
	slices.Sort(lines)
	return strings.Join(lines, "\n")
}

// TestEngineRefusesReservedRecords: every write and delete of the engine
// refuses, with ErrReserved and before anything changes, a document of the
// stores' types, one carrying their attributes (in any case), a URL of
// their schemes (in any case) and the URL of a memory or the preferences;
// the stores' own path (the index) still writes them, and a page beside
// them is indexed and removed as ever.
func TestEngineRefusesReservedRecords(t *testing.T) {
	e := openEngine(t, nil)
	const memURL = "file:///home/user/memories/flaky-tests.md"
	if _, err := e.Store().Add(ctx, index.Document{SourceURL: memURL, Content: "Retry the network step.", DocType: index.DocMemory,
		Attrs: map[string]string{reserved.AttrMemoryDir: "/home/user/memories", reserved.AttrMemorySlug: "flaky-tests"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Store().Add(ctx, index.Document{SourceURL: memURL + "#whenToUse", Content: "when tests flake", DocType: reserved.DocMemoryPattern}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.PreferenceStore().Add(ctx, prefs.Expertise, "User is a Go developer"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.IndexDocument(ctx, index.Document{SourceURL: "https://ok.example/page", Content: "A page about herons."}); err != nil {
		t.Fatal(err)
	}
	before := snapshot(t, e)

	page := func(mod func(d *index.Document)) index.Document {
		d := index.Document{SourceURL: "https://new.example/page", Content: "forged text"}
		mod(&d)
		return d
	}
	var bad []index.Document
	for _, typ := range []string{"memory", "preference", "memory-pattern", " Memory "} {
		bad = append(bad, page(func(d *index.Document) { d.DocType = typ }))
	}
	for _, k := range []string{"memoryDir", "memorySlug", "memoryKind", "memoryPattern", "memoryAuthor", "memoryConflicts", "preferenceType", "MEMORYDIR"} {
		bad = append(bad, page(func(d *index.Document) { d.Attrs = map[string]string{"team": "x", k: "/home/user/memories"} }))
	}
	for _, u := range []string{"preference://user", "PREFERENCE://user", "memory:flaky-tests.md", "Memory-Layer://episodic/x", memURL, memURL + "#whenToUse"} {
		bad = append(bad, page(func(d *index.Document) { d.SourceURL = u }))
	}
	writes := map[string]func(d index.Document) error{
		"Index": func(d index.Document) error { _, err := e.IndexDocument(ctx, d); return err },
		"IndexMany": func(d index.Document) error {
			// A reserved type, attribute or scheme refuses the batch
			// whole; a document that would replace a store's source fails
			// alone, beside the good one.
			rs, err := e.IndexDocuments(ctx, []index.Document{{SourceURL: "https://fine.example/", Content: "fine"}, d})
			if err == nil {
				err = rs[1].Err
				e.Remove(ctx, "https://fine.example/")
			} else if n, _ := e.Store().Source(ctx, "https://fine.example/"); len(n) != 0 {
				t.Errorf("a batch refused whole was partly written")
			}
			return err
		},
		"IndexPage": func(d index.Document) error { _, err := e.IndexPageNow(ctx, d); return err },
		"IndexPageAsync": func(d index.Document) error {
			// Refused at once, or (a store's source, found by the worker)
			// given up on at the first attempt.
			id, err := e.IndexPageAsync(d)
			if err == nil {
				e.Flush(ctx)
				j, _ := e.LookupJob(id)
				if err = fmt.Errorf("queued: %s %s", j.State, j.Error); j.State == index.JobDead && j.Attempts == 1 && strings.HasPrefix(j.Error, "reserved for memories and preferences: ") {
					err = ErrReserved
				}
			}
			return err
		},
		"PageUnchanged": func(d index.Document) error { _, _, err := e.PageUnchanged(ctx, d); return err },
		"CheckDocument": func(d index.Document) error { _, err := e.CheckDocument(ctx, d); return err },
	}
	for name, write := range writes {
		for _, d := range bad {
			if name == "IndexPage" || name == "PageUnchanged" {
				if d.DocType != "" {
					continue // pages are knowledge whatever the type says
				}
			}
			if err := write(d); !errors.Is(err, ErrReserved) {
				t.Errorf("%s(%s, type %q, attrs %v): %v, want ErrReserved", name, d.SourceURL, d.DocType, d.Attrs, err)
			}
		}
	}
	for _, u := range []string{"preference://user", "Preference://user", memURL, memURL + "#whenToUse", "memory:flaky-tests.md", "memory-layer://episodic/x"} {
		if _, err := e.Remove(ctx, u); !errors.Is(err, ErrReserved) {
			t.Errorf("Remove(%s): %v", u, err)
		}
		if _, err := e.Forget(ctx, u); !errors.Is(err, ErrReserved) {
			t.Errorf("ForgetPage(%s): %v", u, err)
		}
	}
	if after := snapshot(t, e); after != before {
		t.Fatalf("the store changed:\nbefore\n%s\nafter\n%s", before, after)
	}
	// The stores' own path, and pages beside them, work as ever.
	if ps, err := e.PreferenceStore().List(ctx); err != nil || len(ps) != 1 {
		t.Fatalf("preferences: %+v %v", ps, err)
	}
	if n, err := e.PreferenceStore().Clear(ctx); n != 1 || err != nil {
		t.Fatalf("Clear: %d %v", n, err)
	}
	if n, err := e.Remove(ctx, "https://ok.example/page"); n != 1 || err != nil {
		t.Fatalf("Remove of a page: %d %v", n, err)
	}
	if r, err := e.Store().Add(ctx, index.Document{SourceURL: "https://ok.example/page", Content: "now a memory", DocType: index.DocMemory}); err != nil || r.Chunks != 1 {
		t.Fatalf("the memory store replacing a page: %+v %v", r, err)
	}
	// The index's own rule: only a store's document replaces its source.
	if _, err := e.Store().Add(ctx, index.Document{SourceURL: memURL, Content: "forged"}); !errors.Is(err, ErrReserved) {
		t.Fatalf("index.Add of a page over a memory: %v", err)
	}
}

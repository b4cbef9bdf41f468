package prefs

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/ragmem/ragmem/budget"
	"github.com/ragmem/ragmem/index"
	"github.com/ragmem/ragmem/internal/index/engine"
	"github.com/ragmem/ragmem/internal/index/local"
)

// memIndex opens an index over an in-memory local store, closed with the
// test unless the test closes it first.
func memIndex(t *testing.T) *engine.Index {
	t.Helper()
	ctx := context.Background()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	lb, err := local.Open(ctx, "prefs", &local.Options{InMemory: true, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	ix, err := engine.Open(ctx, "", &engine.Options{Backend: lb, Logger: quiet})
	if err != nil {
		_ = lb.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ix.Close() })
	return ix
}

// clockStore is a Store whose clock stands still at a fixed time unless the
// test moves it.
func clockStore(t *testing.T, ix *engine.Index) (*Store, *time.Time) {
	now := time.Date(2025, 3, 1, 9, 0, 0, 0, time.FixedZone("CET", 3600))
	s := NewStore(ix)
	s.now = func() time.Time { return now }
	return s, &now
}

func TestStoreAdd(t *testing.T) {
	ctx := context.Background()
	s, now := clockStore(t, memIndex(t))
	if _, ok := s.Cached(); ok {
		t.Fatal("a new store has a cached list")
	}
	if _, err := s.Add(ctx, "mood", "Happy"); !errors.Is(err, ErrUnknownType) {
		t.Errorf("Add of an unknown type: %v", err)
	}
	if _, err := s.Add(ctx, Style, " \t\n "); !errors.Is(err, ErrEmpty) {
		t.Errorf("Add of white space: %v", err)
	}
	if _, err := s.Add(ctx, Style, strings.Repeat("x", MaxContentLen+1)); !errors.Is(err, ErrTooLong) {
		t.Errorf("Add of %d bytes: %v", MaxContentLen+1, err)
	}
	if ps, _ := s.List(ctx); len(ps) != 0 {
		t.Fatalf("refused additions stored %d preferences", len(ps))
	}

	exact := strings.Repeat("x", MaxContentLen)
	long, err := s.Add(ctx, Custom, exact)
	if err != nil || long.Content != exact {
		t.Fatalf("Add of exactly %d bytes: %v", MaxContentLen, err)
	}
	*now = now.Add(time.Minute)
	p, err := s.Add(ctx, Expertise, "  User is   a nurse ")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(p.ID, "pref_") || len(p.ID) != len("pref_")+16 || p.ID == long.ID {
		t.Errorf("id %q (the first was %q)", p.ID, long.ID)
	}
	if p.Type != Expertise || p.Content != "User is a nurse" {
		t.Errorf("stored %+v", p)
	}
	if want := now.UTC(); !p.CreatedAt.Equal(want) || p.CreatedAt.Location() != time.UTC || !p.UpdatedAt.Equal(want) {
		t.Errorf("times %v, %v; want %v in UTC", p.CreatedAt, p.UpdatedAt, want)
	}

	// The same statement in another case and spacing: the stored one.
	*now = now.Add(time.Minute)
	again, err := s.Add(ctx, Expertise, "user IS a  NURSE")
	if err != nil || again != p {
		t.Errorf("Add of the same statement: %+v, %v; want %+v", again, err, p)
	}
	// The same words under another type: another preference.
	other, err := s.Add(ctx, Custom, "User is a nurse")
	if err != nil || other.ID == p.ID || other.Type != Custom {
		t.Errorf("the same words as custom: %+v, %v", other, err)
	}

	ps, err := s.List(ctx)
	if err != nil || len(ps) != 3 || ps[0].ID != long.ID || ps[1].ID != p.ID || ps[2].ID != other.ID {
		t.Fatalf("List = %+v, %v", ps, err)
	}
	if cached, ok := s.Cached(); !ok || len(cached) != 3 || cached[1] != ps[1] {
		t.Errorf("cached %+v, %v", cached, ok)
	}
	// The cache is a copy: changing what Cached returned changes nothing.
	cached, _ := s.Cached()
	cached[0].Content = "changed"
	if again, _ := s.Cached(); again[0].Content != exact {
		t.Error("Cached returned the store's own slice")
	}

	// The record in the index, as others read it.
	recs, err := s.ix.Records(ctx, index.Filter{DocTypes: []string{index.DocPreference}})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		if r.ID != p.ID {
			continue
		}
		if r.SourceURL != SourceURL || r.Title != "User Preference: Expertise" || r.Content != p.Content ||
			r.Attrs["preferenceType"] != "expertise" || r.Attrs["updatedAt"] != p.UpdatedAt.Format(time.RFC3339Nano) ||
			r.End != len(p.Content) || r.Tokens != budget.CounterForModel("").Count(p.Content) ||
			len(r.HeadingPath) != 2 || r.HeadingPath[1] != "expertise" {
			t.Errorf("record %+v", r)
		}
	}
}

func TestStoreRemoveAndClear(t *testing.T) {
	ctx := context.Background()
	s, now := clockStore(t, memIndex(t))
	var ids []string
	for _, c := range []string{"Likes tea", "Likes coffee", "Likes water"} {
		p, err := s.Add(ctx, Custom, c)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, p.ID)
		*now = now.Add(time.Second)
	}
	if ok, err := s.Remove(ctx, "pref_unknown"); ok || err != nil {
		t.Errorf("Remove of an unknown id = %v, %v", ok, err)
	}
	if ok, err := s.Remove(ctx, ids[1]); !ok || err != nil {
		t.Errorf("Remove = %v, %v", ok, err)
	}
	ps, _ := s.List(ctx)
	if len(ps) != 2 || ps[0].ID != ids[0] || ps[1].ID != ids[2] {
		t.Errorf("after Remove: %+v", ps)
	}
	if c, _ := s.Cached(); len(c) != 2 || c[1].ID != ids[2] {
		t.Errorf("cached after Remove: %+v", c)
	}
	if ok, _ := s.Remove(ctx, ids[1]); ok {
		t.Error("a preference was removed twice")
	}
	if n, err := s.Clear(ctx); n != 2 || err != nil {
		t.Errorf("Clear = %d, %v", n, err)
	}
	if c, ok := s.Cached(); !ok || len(c) != 0 {
		t.Errorf("cached after Clear: %+v, %v", c, ok)
	}
	if ps, _ := s.List(ctx); len(ps) != 0 {
		t.Errorf("after Clear: %+v", ps)
	}
}

// Records written by others: an unknown or missing type reads as custom,
// the update time is the record's when it parses (the creation time
// otherwise), and records created at the same instant are listed by id.
func TestStoreReadsRecordsOfOthers(t *testing.T) {
	ctx := context.Background()
	ix := memIndex(t)
	at := time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)
	later := at.Add(time.Hour)
	rec := func(id, typ, updated string, created time.Time) index.Record {
		attrs := map[string]string{"preferenceType": typ}
		if updated != "" {
			attrs["updatedAt"] = updated
		}
		return index.Record{ID: id, SourceURL: SourceURL, Title: "User Preference", Content: "Statement " + id,
			DocType: index.DocPreference, CreatedAt: created, End: 12, Attrs: attrs}
	}
	if err := ix.Put(ctx, []index.Record{
		rec("pref_c", "mood", "yesterday", at),
		rec("pref_a", "", later.Format(time.RFC3339Nano), at),
		rec("pref_b", "style", "", at),
		rec("pref_0", "domain", "", later),
	}); err != nil {
		t.Fatal(err)
	}
	ps, err := NewStore(ix).List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := []Preference{
		{ID: "pref_a", Type: Custom, Content: "Statement pref_a", CreatedAt: at, UpdatedAt: later},
		{ID: "pref_b", Type: Style, Content: "Statement pref_b", CreatedAt: at, UpdatedAt: at},
		{ID: "pref_c", Type: Custom, Content: "Statement pref_c", CreatedAt: at, UpdatedAt: at},
		{ID: "pref_0", Type: Domain, Content: "Statement pref_0", CreatedAt: later, UpdatedAt: later},
	}
	if len(ps) != len(want) {
		t.Fatalf("listed %+v", ps)
	}
	for i, w := range want {
		g := ps[i]
		if g.ID != w.ID || g.Type != w.Type || g.Content != w.Content || !g.CreatedAt.Equal(w.CreatedAt) || !g.UpdatedAt.Equal(w.UpdatedAt) {
			t.Errorf("preference %d: %+v, want %+v", i, g, w)
		}
	}
}

func TestStoreIndexClosed(t *testing.T) {
	ctx := context.Background()
	c := budget.CounterForModel("")

	// Never read: no fallback, the error.
	ix := memIndex(t)
	s := NewStore(ix)
	_ = ix.Close()
	if text, err := s.FormatForContext(ctx, 100, c); text != "" || err == nil {
		t.Errorf("closed index, nothing cached: %q, %v", text, err)
	}
	if _, err := s.Add(ctx, Style, "Prefers tables"); err == nil {
		t.Error("Add on a closed index succeeded")
	}
	if _, err := s.Remove(ctx, "pref_x"); err == nil {
		t.Error("Remove on a closed index succeeded")
	}
	if _, err := s.Clear(ctx); err == nil {
		t.Error("Clear on a closed index succeeded")
	}
	if _, ok := s.Cached(); ok {
		t.Error("failed operations filled the cache")
	}

	// Read once: the last list, with the error.
	ix = memIndex(t)
	s = NewStore(ix)
	if _, err := s.Add(ctx, Style, "Prefers tables"); err != nil {
		t.Fatal(err)
	}
	if text, err := s.FormatForContext(ctx, 100, c); text != "Style: Prefers tables." || err != nil {
		t.Errorf("open index: %q, %v", text, err)
	}
	_ = ix.Close()
	if text, err := s.FormatForContext(ctx, 100, c); text != "Style: Prefers tables." || err == nil {
		t.Errorf("closed index: %q, %v; want the cached profile and an error", text, err)
	}
}

func TestFormat(t *testing.T) {
	c := budget.CounterForModel("")
	ps := []Preference{
		{Type: Custom, Content: "Always answer in French"},
		{Type: Style, Content: "User prefers short answers!"},
		{Type: Domain, Content: "User works in genomics"},
		{Type: Expertise, Content: "User is a nurse"},
		{Type: Style, Content: " \n "},
		{Type: Expertise, Content: "User is a  chef…"},
		{Type: "", Content: "User is tall?"},
		{Type: "mood", Content: "Happy"},
		{Type: Domain, Content: "User works on compilers"},
	}
	want := "Expertise: User is a nurse.\nExpertise: User is a chef…\nDomain: User works in genomics.\n" +
		"Domain: User works on compilers.\nStyle: User prefers short answers!\nCustom: Always answer in French.\n" +
		"Custom: User is tall?\nMood: Happy."
	if got := Format(ps, 1000, c); got != want {
		t.Errorf("Format = %q, want %q", got, want)
	}
	if got := Format(ps, 0, c); got != "" {
		t.Errorf("Format with no budget = %q", got)
	}
	if got := Format(nil, 100, c); got != "" {
		t.Errorf("Format of nothing = %q", got)
	}
	// A budget that holds the first line only.
	first := "Expertise: User is a nurse."
	if got := Format(ps, c.Count(first), c); got != first {
		t.Errorf("Format within %d tokens = %q, want %q", c.Count(first), got, first)
	}
	if got := Format(ps[:1], 1, c); got != "" {
		t.Errorf("Format within 1 token = %q", got)
	}
	if typeTitle("") != "Custom" || typeTitle(Domain) != "Domain" {
		t.Error("typeTitle")
	}
}

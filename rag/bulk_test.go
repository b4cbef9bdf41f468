package rag

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/ragmem/ragmem/index"

	"github.com/leanovate/gopter"
	"github.com/leanovate/gopter/gen"
	"github.com/leanovate/gopter/prop"

	"github.com/ragmem/ragmem/internal/embed"
	"github.com/ragmem/ragmem/internal/proptest"
	"github.com/ragmem/ragmem/internal/reserved"
	"github.com/ragmem/ragmem/prefs"
)

// countingEmbedder counts the texts it embeds.
type countingEmbedder struct {
	embed.Embedder
	texts atomic.Int64
}

func (c *countingEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	c.texts.Add(int64(len(texts)))
	return c.Embedder.Embed(ctx, texts)
}

func sourceURLs(ss []index.SourceInfo) []string {
	var out []string
	for _, s := range ss {
		out = append(out, s.SourceURL)
	}
	return out
}

func allSources(t *testing.T, e *Engine) []string {
	t.Helper()
	ss, _, err := e.ListSources(ctx, index.Filter{}, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	return sourceURLs(ss)
}

// TestRemoveWhere: a dry run lists exactly what the removal then removes
// (and removes nothing itself); sources of the memory and preference stores
// that pass the filter are kept and reported; a filter that passes only
// those is refused with ErrReserved; no filter needs all, and all removes
// every knowledge source but keeps the stores'.
func TestRemoveWhere(t *testing.T) {
	e := openEngine(t, nil)
	for i := range 6 {
		team := []string{"red", "blue"}[i%2]
		if _, err := e.IndexDocument(ctx, index.Document{SourceURL: fmt.Sprintf("https://ex.example/%d", i), Content: fmt.Sprintf("Page %d about herons and team %s.", i, team),
			Attrs: map[string]string{"team": team}}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := e.Store().Add(ctx, index.Document{SourceURL: "file:///m/notes.md", Content: "A memory about herons.", DocType: index.DocMemory,
		Attrs: map[string]string{"team": "red", reserved.AttrMemoryDir: "/m"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.PreferenceStore().Add(ctx, prefs.Expertise, "User is a Go developer"); err != nil {
		t.Fatal(err)
	}
	before := snapshot(t, e)
	where, err := index.ParseFilter(`team = "red"`)
	if err != nil {
		t.Fatal(err)
	}
	dry, err := e.RemoveWhere(ctx, where, false, true)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"https://ex.example/0", "https://ex.example/2", "https://ex.example/4"}
	if got := sourceURLs(dry.Sources); !slices.Equal(got, want) {
		t.Fatalf("dry run lists %v, want %v", got, want)
	}
	if got := sourceURLs(dry.Kept); !slices.Equal(got, []string{"file:///m/notes.md"}) {
		t.Fatalf("dry run keeps %v, want the memory", got)
	}
	if snapshot(t, e) != before {
		t.Fatal("the dry run changed the store")
	}
	done, err := e.RemoveWhere(ctx, where, false, false)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(sourceURLs(done.Sources), sourceURLs(dry.Sources)) || done.Chunks != dry.Chunks || done.Chunks == 0 {
		t.Fatalf("removed %v (%d chunks), the dry run listed %v (%d)", sourceURLs(done.Sources), done.Chunks, sourceURLs(dry.Sources), dry.Chunks)
	}
	left := allSources(t, e)
	for _, u := range want {
		if slices.Contains(left, u) {
			t.Fatalf("%s is still stored: %v", u, left)
		}
	}
	if !slices.Contains(left, "file:///m/notes.md") || !slices.Contains(left, "https://ex.example/1") || !slices.Contains(left, prefs.SourceURL) {
		t.Fatalf("the removal took more than it listed: %v left", left)
	}

	// Only reserved sources: refused, nothing changes.
	mem, _ := index.ParseFilter(`type = "memory"`)
	before = snapshot(t, e)
	if _, err := e.RemoveWhere(ctx, mem, false, false); !errors.Is(err, ErrReserved) {
		t.Fatalf("a filter matching only a memory: %v, want ErrReserved", err)
	}
	if snapshot(t, e) != before {
		t.Fatal("a refused removal changed the store")
	}
	// No filter, or one that matches every knowledge source: needs all,
	// in a dry run too.
	if _, err := e.RemoveWhere(ctx, nil, false, false); !errors.Is(err, ErrMatchesAll) {
		t.Fatalf("no filter without all: %v, want ErrMatchesAll", err)
	}
	every, _ := index.ParseFilter(`source STARTS WITH "https://ex.example/" OR type = "memory"`)
	before = snapshot(t, e)
	for _, dry := range []bool{true, false} {
		if _, err := e.RemoveWhere(ctx, every, false, dry); !errors.Is(err, ErrMatchesAll) {
			t.Fatalf("a filter matching every page (dry run %v): %v, want ErrMatchesAll", dry, err)
		}
	}
	if snapshot(t, e) != before {
		t.Fatal("a refused removal changed the store")
	}
	r, err := e.RemoveWhere(ctx, nil, true, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Sources) != 3 {
		t.Fatalf("all removed %v, want the 3 pages left", sourceURLs(r.Sources))
	}
	left = allSources(t, e)
	slices.Sort(left)
	if wantLeft := []string{"file:///m/notes.md", prefs.SourceURL}; !slices.Equal(left, wantLeft) {
		t.Fatalf("after removing all: %v left, want %v", left, wantLeft)
	}
}

// TestSetAttrs: attributes change on every chunk without a text embedded
// again, the ids and vectors stay, a search filtered by the new attribute
// finds the source, indexing the same document again keeps them, and
// reserved sources and keys, unknown sources and bad keys are refused.
func TestSetAttrs(t *testing.T) {
	ce := &countingEmbedder{Embedder: embed.Default()}
	e := openEngine(t, &Options{Embedder: ce})
	doc := index.Document{SourceURL: "https://ex.example/heron", Title: "Herons", Content: "# Herons\n\nHerons wade.\n\n## Food\n\nThey eat fish and frogs.",
		Attrs: map[string]string{"team": "red", "old": "x"}}
	if _, err := e.IndexDocument(ctx, doc); err != nil {
		t.Fatal(err)
	}
	recs0, err := e.Store().Records(ctx, index.Filter{SourceURL: doc.SourceURL})
	if err != nil || len(recs0) == 0 {
		t.Fatal(recs0, err)
	}
	embedded := ce.texts.Load()
	n, err := e.SetAttrs(ctx, doc.SourceURL, map[string]string{"team": "blue", "lang": "en"}, []string{"old"})
	if err != nil {
		t.Fatal(err)
	}
	if n != len(recs0) {
		t.Fatalf("changed %d chunks, want %d", n, len(recs0))
	}
	if ce.texts.Load() != embedded {
		t.Fatalf("setting attributes embedded %d texts", ce.texts.Load()-embedded)
	}
	recs1, err := e.Store().Records(ctx, index.Filter{SourceURL: doc.SourceURL})
	if err != nil || len(recs1) != len(recs0) {
		t.Fatal(len(recs1), err)
	}
	for i := range recs1 {
		if recs1[i].ID != recs0[i].ID || !slices.Equal(recs1[i].Vector, recs0[i].Vector) || recs1[i].Content != recs0[i].Content {
			t.Fatalf("chunk %d changed beyond its attributes", i)
		}
		if want := map[string]string{"team": "blue", "lang": "en"}; fmt.Sprint(recs1[i].Attrs) != fmt.Sprint(want) {
			t.Fatalf("chunk %d attrs %v, want %v", i, recs1[i].Attrs, want)
		}
	}
	where, _ := index.ParseFilter(`team = "blue"`)
	ss, _, err := e.ListSources(ctx, index.Filter{Where: where}, 0, 0)
	if err != nil || len(ss) != 1 {
		t.Fatalf("sources with team=blue: %v %v", ss, err)
	}
	res, err := e.Retrieve(ctx, "herons fish", nil)
	if err != nil || len(res) == 0 || res[0].Record.Attrs["team"] != "blue" {
		t.Fatalf("search after setting attrs: %v %v", res, err)
	}
	// The same document again is unchanged: the attributes set stay.
	r, err := e.IndexDocument(ctx, doc)
	if err != nil || !r.Unchanged {
		t.Fatalf("indexing the same document again: %+v %v", r, err)
	}
	if recs, _ := e.Store().Records(ctx, index.Filter{SourceURL: doc.SourceURL}); recs[0].Attrs["team"] != "blue" {
		t.Fatalf("attrs after an unchanged re-index: %v", recs[0].Attrs)
	}
	// Setting what is there changes nothing.
	if n, err := e.SetAttrs(ctx, doc.SourceURL, map[string]string{"team": "blue"}, nil); err != nil || n != 0 {
		t.Fatalf("setting the same value: %d %v", n, err)
	}

	if _, err := e.Store().Add(ctx, index.Document{SourceURL: "file:///m/notes.md", Content: "A memory.", DocType: index.DocMemory}); err != nil {
		t.Fatal(err)
	}
	before := snapshot(t, e)
	for name, c := range map[string]struct {
		url   string
		set   map[string]string
		unset []string
		want  error
	}{
		"memory source":  {"file:///m/notes.md", map[string]string{"team": "x"}, nil, ErrReserved},
		"preferences":    {prefs.SourceURL, map[string]string{"team": "x"}, nil, ErrReserved},
		"reserved key":   {doc.SourceURL, map[string]string{reserved.AttrMemoryDir: "/x"}, nil, ErrReserved},
		"reserved unset": {doc.SourceURL, nil, []string{reserved.AttrMemorySlug}, ErrReserved},
		"unknown":        {"https://ex.example/none", map[string]string{"team": "x"}, nil, ErrNotFound},
		"bad key":        {doc.SourceURL, map[string]string{"bad key": "x"}, nil, index.ErrBadAttrs},
		"set and unset":  {doc.SourceURL, map[string]string{"team": "x"}, []string{"team"}, index.ErrBadAttrs},
	} {
		if _, err := e.SetAttrs(ctx, c.url, c.set, c.unset); !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", name, err, c.want)
		}
	}
	if snapshot(t, e) != before {
		t.Fatal("a refused change of attributes changed the store")
	}
}

// TestRemoveWhereProperty: for random stores (sources with a team and a
// size attribute) and random filters over them, RemoveWhere removes
// exactly the sources whose records the filter matches (the filter's own
// Match), its dry run lists the same, and every other source stays.
func TestRemoveWhereProperty(t *testing.T) {
	if testing.Short() {
		t.Skip("opens a store per case")
	}
	teams := []string{"red", "blue", "green"}
	ps := gopter.NewProperties(proptest.Params(t, 100))
	ps.Property("removes what the filter matches", prop.ForAll(func(assign []int, team int, size int, op int) bool {
		e := openEngine(t, nil)
		for i, a := range assign {
			d := index.Document{SourceURL: fmt.Sprintf("https://p.example/%d", i), Content: fmt.Sprintf("source %d text", i),
				Attrs: map[string]string{"team": teams[a%3], "size": fmt.Sprint(a % 5)}}
			if _, err := e.IndexDocument(ctx, d); err != nil {
				t.Log(err)
				return false
			}
		}
		expr := []string{
			fmt.Sprintf(`team = %q`, teams[team%3]),
			fmt.Sprintf(`team = %q or size = "%d"`, teams[team%3], size%5),
			fmt.Sprintf(`not team = %q and size != "%d"`, teams[team%3], size%5),
		}[op%3]
		where, err := index.ParseFilter(expr)
		if err != nil {
			t.Log(err)
			return false
		}
		recs, _ := e.Store().Records(ctx, index.Filter{})
		var want, keep []string
		for _, r := range recs {
			f := index.Filter{Where: where}
			if f.Match(&r) {
				want = append(want, r.SourceURL)
			} else {
				keep = append(keep, r.SourceURL)
			}
		}
		slices.Sort(want)
		want = slices.Compact(want)
		// A filter that matches every source needs all, dry run or not.
		all := len(want) == len(assign)
		if all {
			for _, dry := range []bool{true, false} {
				if _, err := e.RemoveWhere(ctx, where, false, dry); !errors.Is(err, ErrMatchesAll) {
					t.Logf("%s matches all: %v", expr, err)
					return false
				}
			}
		}
		dry, err := e.RemoveWhere(ctx, where, all, true)
		if err != nil {
			t.Log(err)
			return false
		}
		done, err := e.RemoveWhere(ctx, where, all, false)
		if err != nil {
			t.Log(err)
			return false
		}
		left := allSources(t, e)
		for _, u := range want {
			if slices.Contains(left, u) {
				return false
			}
		}
		for _, u := range keep {
			if !slices.Contains(left, u) {
				return false
			}
		}
		got := sourceURLs(done.Sources)
		slices.Sort(got)
		return slices.Equal(sourceURLs(dry.Sources), sourceURLs(done.Sources)) && slices.Equal(got, want)
	}, gen.SliceOfN(8, gen.IntRange(0, 14)), gen.IntRange(0, 2), gen.IntRange(0, 4), gen.IntRange(0, 2)))
	ps.TestingRun(t)
}

package export_test

import (
	"bytes"
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ragmem/ragmem/chunk"
	"github.com/ragmem/ragmem/index"
	"github.com/ragmem/ragmem/internal/embed"
	"github.com/ragmem/ragmem/internal/export"
	"github.com/ragmem/ragmem/prefs"
	"github.com/ragmem/ragmem/rag"
	"github.com/ragmem/ragmem/search"
)

var queries = []string{
	"bm25 saturation of term frequency",
	"how do goroutines share memory",
	"install on linux",
	"sourdough starter feeding",
	"token budget for the context window",
	"vector database nearest neighbour",
	"reciprocal rank fusion",
	"the user prefers short answers",
	"zzzz nothing matches this",
}

func openEngine(t *testing.T, dir string, emb embed.Embedder) *rag.Engine {
	t.Helper()
	eng, err := rag.Open(context.Background(), dir, &rag.Options{Embedder: emb})
	if err != nil {
		t.Fatal(err)
	}
	return eng
}

// fill indexes the repository's test corpus, with attributes, a
// preference and a memory, into eng.
func fill(t *testing.T, eng *rag.Engine) {
	t.Helper()
	ctx := context.Background()
	files, err := filepath.Glob("../sample/corpus/*")
	if err != nil || len(files) == 0 {
		t.Fatalf("corpus: %v %d", err, len(files))
	}
	for i, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		format := chunk.Markdown
		switch filepath.Ext(f) {
		case ".html":
			format = chunk.HTML
		case ".txt":
			format = chunk.Text
		}
		d := index.Document{SourceURL: "file:///corpus/" + filepath.Base(f), Title: filepath.Base(f), Content: string(b), Format: format}
		if i%2 == 0 {
			d.Attrs = map[string]string{"team": "search", "n": filepath.Ext(f)}
		}
		if _, err := eng.IndexDocument(ctx, d); err != nil {
			t.Fatalf("index %s: %v", f, err)
		}
	}
	if _, err := eng.PreferenceStore().Add(ctx, prefs.Type("style"), "The user prefers short answers with code examples."); err != nil {
		t.Fatal(err)
	}
	if err := eng.Store().Put(ctx, []index.Record{{ID: "mem-1", SourceURL: "memory://notes/1", Title: "note", DocType: index.DocMemory,
		Content: "We decided to use reciprocal rank fusion for hybrid search."}}); err != nil {
		t.Fatal(err)
	}
}

type answer struct {
	ids    []string
	scores []float64
}

// answers runs every query in every mode, and builds a context for each.
func answers(t *testing.T, eng *rag.Engine) map[string]answer {
	t.Helper()
	ctx := context.Background()
	out := map[string]answer{}
	for _, q := range queries {
		for _, m := range []search.Mode{search.Hybrid, search.Vector, search.FullText} {
			for _, types := range [][]string{nil, {index.DocKnowledge, index.DocMemory, index.DocPreference}} {
				res, err := eng.Retrieve(ctx, q, &search.Options{Mode: m, TopK: 20, SimilarityThreshold: -1, DocTypes: types})
				if err != nil {
					t.Fatalf("%s %q: %v", m, q, err)
				}
				var a answer
				for _, r := range res {
					a.ids = append(a.ids, r.Record.ID)
					a.scores = append(a.scores, r.Score)
				}
				out[string(m)+"|"+strings.Join(types, ",")+"|"+q] = a
			}
		}
		c, err := eng.ContextFor(ctx, q, rag.ContextOptions{Model: "gpt-4o"})
		if err != nil {
			t.Fatal(err)
		}
		out["context|"+q] = answer{ids: []string{c.Text}}
	}
	return out
}

func sameAnswers(t *testing.T, want, got map[string]answer) {
	t.Helper()
	hits := 0
	for k, w := range want {
		g := got[k]
		if strings.Join(w.ids, "\n") != strings.Join(g.ids, "\n") {
			t.Errorf("%s: ids\n got %q\nwant %q", k, g.ids, w.ids)
			continue
		}
		for i := range w.scores {
			if math.Abs(w.scores[i]-g.scores[i]) > 1e-9 {
				t.Errorf("%s: score %d = %v, want %v", k, i, g.scores[i], w.scores[i])
			}
		}
		hits += len(w.ids)
	}
	if hits < 100 {
		t.Fatalf("only %d results compared; the corpus did not index", hits)
	}
}

func TestRoundTrip(t *testing.T) {
	ctx := context.Background()
	key := bytes.Repeat([]byte{7}, export.KeySize)
	for _, tc := range []struct {
		name string
		emb  func() embed.Embedder
		opts export.WriteOptions
	}{
		{"lexical-gzip", func() embed.Embedder { return embed.NewLexical(nil) }, export.WriteOptions{}},
		{"randproj-aes", func() embed.Embedder { return embed.NewRandProj(&embed.RandProjOptions{Dimension: 64}) }, export.WriteOptions{Key: key}},
		{"randproj-plain", func() embed.Embedder { return embed.NewRandProj(&embed.RandProjOptions{Dimension: 64}) }, export.WriteOptions{NoCompress: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := openEngine(t, t.TempDir(), tc.emb())
			fill(t, src)
			want := answers(t, src)
			snap, err := src.Export(ctx)
			if err != nil {
				t.Fatal(err)
			}
			file := filepath.Join(t.TempDir(), "mem.export")
			if err := snap.WriteFile(ctx, file, &tc.opts); err != nil {
				t.Fatal(err)
			}
			// The source is still open and serving: the snapshot was online.
			if err := src.Close(); err != nil {
				t.Fatal(err)
			}
			read, err := export.ReadFile(ctx, file, &export.ReadOptions{Key: tc.opts.Key})
			if err != nil {
				t.Fatal(err)
			}
			if len(read.Records) != len(snap.Records) || read.Embedder != snap.Embedder || read.Dimension != snap.Dimension {
				t.Fatalf("read %d records of %s/%d, wrote %d of %s/%d", len(read.Records), read.Embedder, read.Dimension,
					len(snap.Records), snap.Embedder, snap.Dimension)
			}
			dst := openEngine(t, t.TempDir(), tc.emb())
			defer dst.Close()
			rep, err := dst.Import(ctx, read, nil)
			if err != nil {
				t.Fatal(err)
			}
			if rep.Records != len(snap.Records) || rep.Sources[index.DocKnowledge] != 8 || rep.Sources[index.DocMemory] != 1 || rep.Sources[index.DocPreference] != 1 {
				t.Fatalf("report %+v", rep)
			}
			sameAnswers(t, want, answers(t, dst))
			st, err := dst.Stats(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if st.ChunkCount != len(snap.Records) || st.Embedder != snap.Embedder {
				t.Fatalf("stats %+v", st)
			}
			// The records are bit for bit what was exported.
			got, err := dst.Store().Records(ctx, index.Filter{})
			if err != nil {
				t.Fatal(err)
			}
			for i := range got {
				w := &snap.Records[i]
				g := &got[i]
				if g.ID != w.ID || g.Content != w.Content || g.SourceURL != w.SourceURL || !g.CreatedAt.Equal(w.CreatedAt) ||
					strings.Join(g.HeadingPath, "|") != strings.Join(w.HeadingPath, "|") || len(g.Attrs) != len(w.Attrs) ||
					g.Position != w.Position || g.Start != w.Start || g.End != w.End || g.Tokens != w.Tokens || g.ContentHash != w.ContentHash ||
					g.DocType != w.DocType || g.Title != w.Title {
					t.Fatalf("record %d:\n got %+v\nwant %+v", i, g, w)
				}
				for k, v := range w.Attrs {
					if g.Attrs[k] != v {
						t.Fatalf("record %s attr %s = %q, want %q", g.ID, k, g.Attrs[k], v)
					}
				}
				for j := range w.Vector {
					if math.Float32bits(g.Vector[j]) != math.Float32bits(w.Vector[j]) {
						t.Fatalf("record %s vector[%d] = %v, want %v", g.ID, j, g.Vector[j], w.Vector[j])
					}
				}
			}
		})
	}
}

// A vector that is not of unit length survives although chromem-go
// renormalises the embeddings it stores.
func TestExactVectors(t *testing.T) {
	ctx := context.Background()
	s := &export.Snapshot{Embedder: "test/d3", Dimension: 3, Records: []index.Record{
		{ID: "a", SourceURL: "s", DocType: index.DocKnowledge, Content: "a", Vector: []float32{0.1, 0.2, 0.3}},
		{ID: "b", SourceURL: "s", DocType: index.DocKnowledge, Position: 1, Content: "", Vector: []float32{0, 0, 0}},
		{ID: "c", SourceURL: "t", DocType: index.DocKnowledge, Content: "c", Vector: []float32{0.6, 0.8, 0}},
	}}
	var buf bytes.Buffer
	if err := s.Write(ctx, &buf, nil); err != nil {
		t.Fatal(err)
	}
	got, err := export.Read(ctx, bytes.NewReader(buf.Bytes()), nil)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range got.Records {
		if !sameBits(r.Vector, s.Records[i].Vector) {
			t.Errorf("%s: vector %v, want %v", r.ID, r.Vector, s.Records[i].Vector)
		}
	}
}

func sameBits(a, b []float32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
			return false
		}
	}
	return true
}

func TestImportRefuses(t *testing.T) {
	ctx := context.Background()
	src := openEngine(t, t.TempDir(), embed.NewLexical(nil))
	fill(t, src)
	snap, err := src.Export(ctx)
	if err != nil {
		t.Fatal(err)
	}
	src.Close()

	other := openEngine(t, t.TempDir(), embed.NewRandProj(nil))
	defer other.Close()
	if _, err := other.Import(ctx, snap, nil); !errors.Is(err, export.ErrEmbedderMismatch) {
		t.Fatalf("other embedder: %v", err)
	}
	if st, _ := other.Stats(ctx); st.ChunkCount != 0 {
		t.Fatalf("a refused import wrote %d records", st.ChunkCount)
	}

	dst := openEngine(t, t.TempDir(), embed.NewLexical(nil))
	defer dst.Close()
	if _, err := dst.IndexDocument(ctx, index.Document{SourceURL: "file:///mine.md", Content: "# Mine\n\nSomething of my own.", Format: chunk.Markdown}); err != nil {
		t.Fatal(err)
	}
	// Another version of one of the file's sources: merge replaces it whole.
	stale := snap.Records[0].SourceURL
	long := strings.Repeat("# Old\n\nAn older version of this page, long enough for several chunks of its own.\n\n", 200)
	if r, err := dst.IndexDocument(ctx, index.Document{SourceURL: stale, Content: long, Format: chunk.Markdown}); err != nil || r.Chunks < 2 {
		t.Fatalf("stale version: %v %+v", err, r)
	}
	if _, err := dst.Import(ctx, snap, nil); !errors.Is(err, export.ErrNotEmpty) {
		t.Fatalf("non-empty store: %v", err)
	}
	rep, err := dst.Import(ctx, snap, &export.ImportOptions{Mode: export.Merge})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Removed != 0 {
		t.Fatalf("merge removed %d", rep.Removed)
	}
	if rs, _ := dst.Store().Source(ctx, "file:///mine.md"); len(rs) == 0 {
		t.Fatal("merge lost the store's own source")
	}
	want := 0
	for _, r := range snap.Records {
		if r.SourceURL == stale {
			want++
		}
	}
	if rs, _ := dst.Store().Source(ctx, stale); len(rs) != want {
		t.Fatalf("after merge %s has %d chunks, want the file's %d", stale, len(rs), want)
	}
	// Merging again changes nothing: sources are replaced, not doubled.
	if _, err := dst.Import(ctx, snap, &export.ImportOptions{Mode: export.Merge}); err != nil {
		t.Fatal(err)
	}
	if st, _ := dst.Stats(ctx); st.ChunkCount != len(snap.Records)+1 {
		t.Fatalf("after two merges %d chunks, want %d", st.ChunkCount, len(snap.Records)+1)
	}
	rep, err = dst.Import(ctx, snap, &export.ImportOptions{Mode: export.Replace})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Removed != 1 {
		t.Fatalf("replace removed %d sources, want 1", rep.Removed)
	}
	if st, _ := dst.Stats(ctx); st.ChunkCount != len(snap.Records) {
		t.Fatalf("after replace %d chunks, want %d", st.ChunkCount, len(snap.Records))
	}
}

func exportBytes(t *testing.T, opts *export.WriteOptions) []byte {
	t.Helper()
	s := &export.Snapshot{Embedder: "test/d2", Dimension: 2, Settings: map[string]string{"search.fusion": "{}"}, Records: []index.Record{
		{ID: "a", SourceURL: "s", DocType: index.DocKnowledge, Content: "alpha", Vector: []float32{0.6, 0.8}, Attrs: map[string]string{"k": "v"}, HeadingPath: []string{"H"}},
		{ID: "b", SourceURL: "s", DocType: index.DocKnowledge, Position: 1, Content: "beta", Vector: []float32{1, 0}},
	}}
	var buf bytes.Buffer
	if err := s.Write(context.Background(), &buf, opts); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestReadErrors(t *testing.T) {
	ctx := context.Background()
	key := bytes.Repeat([]byte{1}, export.KeySize)
	wrong := bytes.Repeat([]byte{2}, export.KeySize)
	gz := exportBytes(t, nil)
	plain := exportBytes(t, &export.WriteOptions{NoCompress: true})
	enc := exportBytes(t, &export.WriteOptions{Key: key})
	flip := func(b []byte, i int) []byte { c := bytes.Clone(b); c[i] ^= 0x40; return c }
	for _, tc := range []struct {
		name string
		data []byte
		opts *export.ReadOptions
		want error
		say  string
	}{
		{"empty", nil, nil, export.ErrFormat, "empty or truncated"},
		{"not an export", []byte("hello, this is a text file\n"), nil, export.ErrFormat, "damaged"},
		{"truncated gzip", gz[:len(gz)/2], nil, export.ErrFormat, "truncated"},
		{"corrupt gzip", flip(gz, len(gz)/2), nil, export.ErrFormat, "damaged"},
		{"truncated gob", plain[:len(plain)-10], nil, export.ErrFormat, ""},
		{"corrupt gob", flip(plain, 0), nil, export.ErrFormat, ""}, // plain gob has no checksum: a flipped byte inside a string goes unnoticed (gzip and AES-GCM catch it)
		{"wrong key", enc, &export.ReadOptions{Key: wrong}, export.ErrKey, "does not open"},
		{"short key", enc, &export.ReadOptions{Key: key[:16]}, export.ErrKey, "32"},
		{"no key", enc, nil, export.ErrFormat, "encrypted"},
		{"key for a plain file", gz, &export.ReadOptions{Key: key}, export.ErrKey, ""},
		{"truncated encrypted", enc[:len(enc)-5], &export.ReadOptions{Key: key}, export.ErrKey, ""},
		{"too large", gz, &export.ReadOptions{MaxBytes: 16}, export.ErrTooLarge, "limit"},
		{"decompresses too large", gz, &export.ReadOptions{MaxBytes: int64(len(gz)) + 1}, export.ErrTooLarge, "decompresses"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := export.Read(ctx, bytes.NewReader(tc.data), tc.opts)
			if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.say) {
				t.Fatalf("err = %v, want %v saying %q", err, tc.want, tc.say)
			}
		})
	}
	for _, b := range [][]byte{gz, plain} {
		s, err := export.Read(ctx, bytes.NewReader(b), nil)
		if err != nil || len(s.Records) != 2 || s.Settings["search.fusion"] != "{}" || s.Records[0].Attrs["k"] != "v" {
			t.Fatalf("good file: %v %+v", err, s)
		}
	}
	if s, err := export.Read(ctx, bytes.NewReader(enc), &export.ReadOptions{Key: key}); err != nil || len(s.Records) != 2 {
		t.Fatalf("encrypted file: %v", err)
	}
}

// A damaged plain export whose gob declares a map of 107 million entries
// in 447 bytes (found by FuzzRead: encoding/gob would allocate the map
// before reading an entry, which took seconds and gigabytes) is refused
// before chromem-go decodes it.
func TestReadRefusesDeclaredHugeMap(t *testing.T) {
	data, err := os.ReadFile("testdata/hugemap.gob")
	if err != nil {
		t.Fatal(err)
	}
	_, err = export.Read(context.Background(), bytes.NewReader(data), nil)
	if !errors.Is(err, export.ErrFormat) || !strings.Contains(err.Error(), "a map of 107504993") {
		t.Fatalf("err = %v", err)
	}
}

// FuzzRead feeds the reader damaged exports: it must return a snapshot or an
// error of this package, never panic, within bounded memory.
func FuzzRead(f *testing.F) {
	var t testing.T
	f.Add(exportBytes(&t, nil))
	f.Add(exportBytes(&t, &export.WriteOptions{NoCompress: true}))
	f.Add([]byte{0x1f, 0x8b})
	f.Add([]byte("not an export"))
	if huge, err := os.ReadFile("testdata/hugemap.gob"); err == nil {
		f.Add(huge)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 1<<16 {
			return
		}
		s, err := export.Read(context.Background(), bytes.NewReader(data), &export.ReadOptions{MaxBytes: 1 << 20})
		if err != nil {
			if !errors.Is(err, export.ErrFormat) && !errors.Is(err, export.ErrTooLarge) {
				t.Fatalf("unexpected error kind: %v", err)
			}
			return
		}
		for _, r := range s.Records {
			if r.ID == "" || r.SourceURL == "" || len(r.Vector) > 0 && len(r.Vector) != s.Dimension {
				t.Fatalf("accepted a bad record %+v", r)
			}
		}
	})
}

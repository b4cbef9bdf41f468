package bench

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/maphash"
	"math"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/ragmem/ragmem/chunk"
	"github.com/ragmem/ragmem/index"
	"github.com/ragmem/ragmem/index/driver"
	"github.com/ragmem/ragmem/internal/embed"
)

// The embedders of `ragmem bench`: each entry of --embedders is an embedder
// spec, or "loopback:SPEC", which serves SPEC's vectors from an in-process
// OpenAI-compatible server on 127.0.0.1 (POST /v1/embeddings, the real
// protocol) and measures ragmem through its normal openai embedder: HTTP,
// JSON, batching and all.

// Embedder is one embedder a bench run measures.
type Embedder struct {
	Name     string // as given in --embedders
	Embedder embed.Embedder
	Close    func()
}

// ParseEmbedders builds the embedders of a comma-separated --embedders
// list (empty entries skipped; nil for an empty list). On error the ones
// already built are closed.
func ParseEmbedders(list string, build *embed.BuildOptions) ([]Embedder, error) {
	var out []Embedder
	for _, s := range strings.Split(list, ",") {
		if s = strings.TrimSpace(s); s == "" {
			continue
		}
		be, err := NewEmbedder(s, build)
		if err != nil {
			CloseEmbedders(out)
			return nil, fmt.Errorf("bench: embedder %q: %w", s, err)
		}
		out = append(out, be)
	}
	return out, nil
}

// CloseEmbedders closes what ParseEmbedders built (a loopback embedder's
// server).
func CloseEmbedders(es []Embedder) {
	for _, e := range es {
		if e.Close != nil {
			e.Close()
		}
	}
}

// NewEmbedder builds one --embedders entry.
func NewEmbedder(spec string, build *embed.BuildOptions) (Embedder, error) {
	spec = strings.TrimSpace(spec)
	inner, ok := strings.CutPrefix(spec, "loopback:")
	if !ok {
		s, err := embed.ParseSpec(spec)
		if err != nil {
			return Embedder{}, err
		}
		e, err := embed.New(s, build)
		if err != nil {
			return Embedder{}, err
		}
		return Embedder{Name: spec, Embedder: e, Close: func() {}}, nil
	}
	s, err := embed.ParseSpec(inner)
	if err != nil {
		return Embedder{}, err
	}
	if s.Kind == embed.KindOpenAI {
		return Embedder{}, fmt.Errorf("bench: loopback serves an offline embedder, not %q", inner)
	}
	served, err := embed.New(s, nil)
	if err != nil {
		return Embedder{}, err
	}
	srv, url, err := startEmbeddingServer(served)
	if err != nil {
		return Embedder{}, err
	}
	model := "loopback-" + strings.NewReplacer(":", "-", ",", "-", "=", "-").Replace(inner)
	e, err := embed.New(embed.Spec{Kind: embed.KindOpenAI, Model: model, BaseURL: url}, &embed.BuildOptions{APIKey: "bench"})
	if err != nil {
		srv.Close()
		return Embedder{}, err
	}
	return Embedder{Name: spec, Embedder: e, Close: func() { srv.Close() }}, nil
}

// startEmbeddingServer serves emb's vectors as an OpenAI-compatible
// /v1/embeddings endpoint on a loopback port and returns its API root.
func startEmbeddingServer(emb embed.Embedder) (*http.Server, string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, "", err
	}
	srv := &http.Server{Handler: embeddingHandler(emb), ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln) //nolint:errcheck // returns ErrServerClosed on Close
	return srv, "http://" + ln.Addr().String() + "/v1", nil
}

// embeddingHandler answers POST /v1/embeddings as OpenAI does: input is a
// string or an array of strings; data[i].embedding is a float array (the
// "float" encoding; "base64" is refused).
func embeddingHandler(emb embed.Embedder) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/embeddings", func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Model          string          `json:"model"`
			Input          json.RawMessage `json:"input"`
			EncodingFormat string          `json:"encoding_format"`
		}
		fail := func(code int, msg string) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(code)
			json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"message": msg, "type": "invalid_request_error"}})
		}
		if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 64<<20)).Decode(&req); err != nil {
			fail(http.StatusBadRequest, "bad JSON: "+err.Error())
			return
		}
		if req.EncodingFormat != "" && req.EncodingFormat != "float" {
			fail(http.StatusBadRequest, "only the float encoding is served")
			return
		}
		var texts []string
		if err := json.Unmarshal(req.Input, &texts); err != nil {
			var one string
			if err := json.Unmarshal(req.Input, &one); err != nil {
				fail(http.StatusBadRequest, "input must be a string or an array of strings")
				return
			}
			texts = []string{one}
		}
		if len(texts) == 0 || len(texts) > 2048 {
			fail(http.StatusBadRequest, fmt.Sprintf("%d inputs (1 to 2048)", len(texts)))
			return
		}
		vecs, err := emb.Embed(r.Context(), texts)
		if err != nil {
			fail(http.StatusInternalServerError, err.Error())
			return
		}
		resp := openai.EmbeddingResponse{Object: "list", Model: openai.EmbeddingModel(req.Model)}
		for i, v := range vecs {
			resp.Data = append(resp.Data, openai.Embedding{Object: "embedding", Index: i, Embedding: v})
			n := len(strings.Fields(texts[i]))
			resp.Usage.PromptTokens += n
			resp.Usage.TotalTokens += n
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(resp)
	})
	return mux
}

// memoEmbedder answers Embed from vectors computed beforehand (preEmbed),
// so that indexing is measured without the embedder's own time; a text it
// was not given beforehand (a query) goes to the embedder. It reports the
// embedder's identity and unwraps to it, so the store records the real
// embedder. Safe for concurrent use.
type memoEmbedder struct {
	inner  embed.Embedder
	seed   maphash.Seed
	rows   map[uint64]int64 // text hash -> row in the file
	f      *os.File
	dim    int
	misses atomic.Int64
}

func (m *memoEmbedder) Identity() string       { return m.inner.Identity() }
func (m *memoEmbedder) Dimension() int         { return m.inner.Dimension() }
func (m *memoEmbedder) Unwrap() embed.Embedder { return m.inner }

func (m *memoEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	var missing []int
	buf := make([]byte, 4*m.dim)
	for i, t := range texts {
		row, ok := m.rows[maphash.String(m.seed, t)]
		if !ok {
			missing = append(missing, i)
			continue
		}
		if _, err := m.f.ReadAt(buf, row*int64(len(buf))); err != nil {
			return nil, err
		}
		v := make([]float32, m.dim)
		for j := range v {
			v[j] = math.Float32frombits(binary.LittleEndian.Uint32(buf[4*j:]))
		}
		out[i] = v
	}
	if len(missing) > 0 {
		m.misses.Add(int64(len(missing)))
		ts := make([]string, len(missing))
		for j, i := range missing {
			ts[j] = texts[i]
		}
		vs, err := m.inner.Embed(ctx, ts)
		if err != nil {
			return nil, err
		}
		if len(vs) != len(ts) {
			return nil, errors.New("bench: embedder returned a wrong number of vectors")
		}
		for j, i := range missing {
			out[i] = vs[j]
		}
	}
	return out, nil
}

func (m *memoEmbedder) close() {
	m.f.Close()
	os.Remove(m.f.Name())
}

// preEmbed chunks the corpus as the index does and embeds every chunk's
// text with emb (writers calls in flight), into a file in dir. It returns
// the memo and the wall time the embedding took.
func preEmbed(ctx context.Context, c *corpus, emb embed.Embedder, dir string, o Options) (*memoEmbedder, time.Duration, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, 0, err
	}
	f, err := os.Create(filepath.Join(dir, "pre-embedded.f32"))
	if err != nil {
		return nil, 0, err
	}
	m := &memoEmbedder{inner: emb, seed: maphash.MakeSeed(), rows: map[uint64]int64{}, f: f}
	var mu sync.Mutex // rows, the file's next row
	next := int64(0)
	start := time.Now()
	sem := make(chan struct{}, max(1, o.Writers, embed.Concurrency(emb)))
	errc := make(chan error, 1)
	var wg sync.WaitGroup
	for lo := 0; lo < c.n; lo += o.Batch {
		hi := min(lo+o.Batch, c.n)
		select {
		case sem <- struct{}{}:
		case err := <-errc:
			wg.Wait()
			m.close()
			return nil, 0, err
		}
		wg.Add(1)
		go func(lo, hi int) {
			defer wg.Done()
			defer func() { <-sem }()
			var texts []string
			for _, d := range c.batch(lo, hi) {
				title := strings.TrimSpace(d.Title)
				if title == "" {
					title = sourceURL(d.ID)
				}
				for _, ch := range chunk.Split(d.Text, chunk.Text, &chunk.Options{}) {
					texts = append(texts, driver.SearchText(&index.Record{Title: title, HeadingPath: ch.HeadingPath, Content: ch.Text}))
				}
			}
			vecs, err := emb.Embed(ctx, texts)
			if err == nil && len(vecs) != len(texts) {
				err = errors.New("bench: embedder returned a wrong number of vectors")
			}
			if err != nil {
				select {
				case errc <- err:
				default:
				}
				return
			}
			mu.Lock()
			defer mu.Unlock()
			if m.dim == 0 && len(vecs) > 0 {
				m.dim = len(vecs[0])
			}
			buf := make([]byte, 0, 4*m.dim*len(vecs))
			for i, v := range vecs {
				if len(v) != m.dim {
					continue
				}
				for _, x := range v {
					buf = binary.LittleEndian.AppendUint32(buf, math.Float32bits(x))
				}
				m.rows[maphash.String(m.seed, texts[i])] = next
				next++
			}
			if _, err := f.Write(buf); err != nil {
				select {
				case errc <- err:
				default:
				}
			}
		}(lo, hi)
	}
	wg.Wait()
	select {
	case err := <-errc:
		m.close()
		return nil, 0, err
	default:
	}
	return m, time.Since(start), nil
}

package vecindex

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/ragmem/ragmem/internal/benchdata"
	"github.com/ragmem/ragmem/internal/embed"
)

// Data sets for the dense-vector experiments (experiment_test.go).
//
//	randproj-N-D  the synthetic corpus of `ragmem bench` (benchdata), N
//	              documents embedded with the randproj test embedder at D
//	              dimensions, and known-item queries embedded the same way.
//	              Embedding a million documents takes minutes, so sets are
//	              cached in $TMPDIR/ragmem-vecsets/.
//	uselite       real semantic vectors (Universal Sentence Encoder Lite, 512
//	              dimensions) from the use-lite server's cache
//	              ($RAGMEM_USELITE_CACHE, default ~/use-lite/cache.jsonl):
//	              the last 400 cached texts are the queries, the others the
//	              corpus.

type denseSet struct {
	name    string
	dim     int
	base    [][]float32 // unit vectors
	queries [][]float32
}

func loadDenseSet(tb testing.TB, name string) *denseSet {
	tb.Helper()
	if name == "uselite" {
		return useLiteSet(tb)
	}
	var n, dim int
	if _, err := fmt.Sscanf(strings.ReplaceAll(name, "-", " "), "randproj %d %d", &n, &dim); err != nil {
		tb.Fatalf("unknown data set %q (want randproj-N-D or uselite)", name)
	}
	return randprojSet(tb, n, dim, 300)
}

func randprojSet(tb testing.TB, n, dim, nq int) *denseSet {
	dir := filepath.Join(os.TempDir(), "ragmem-vecsets")
	_ = os.MkdirAll(dir, 0o755)
	path := filepath.Join(dir, fmt.Sprintf("randproj-%d-%d-%d.f32", n, dim, nq))
	s := &denseSet{name: fmt.Sprintf("randproj-%d-%d", n, dim), dim: dim}
	if all, err := readF32(path, (n+nq)*dim); err == nil {
		s.split(all, n)
		return s
	}
	emb := embed.NewRandProj(&embed.RandProjOptions{Dimension: dim})
	all := make([]float32, (n+nq)*dim)
	texts := func(lo, hi int) []string {
		out := make([]string, 0, hi-lo)
		for i := lo; i < hi; i++ {
			d := benchdata.NewSynthDoc(int64(i), i, 110)
			out = append(out, d.Title+"\n"+d.Text)
		}
		return out
	}
	var wg sync.WaitGroup
	const batch = 1000
	work := make(chan int)
	for w := 0; w < runtime.GOMAXPROCS(0); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for lo := range work {
				hi := min(n, lo+batch)
				vs, err := emb.Embed(context.Background(), texts(lo, hi))
				if err != nil {
					panic(err)
				}
				for i, v := range vs {
					copy(all[(lo+i)*dim:], v)
				}
			}
		}()
	}
	for lo := 0; lo < n; lo += batch {
		work <- lo
	}
	close(work)
	wg.Wait()
	qs := benchdata.NewSynth(int64(n))
	for i := 0; i < nq; i++ {
		j := int(int64(i) * int64(n) / int64(nq))
		d := benchdata.NewSynthDoc(int64(j), j, 110)
		vs, _ := emb.Embed(context.Background(), []string{qs.KnownItem("q", d).Text})
		copy(all[(n+i)*dim:], vs[0])
	}
	if err := writeF32(path, all); err != nil {
		tb.Logf("cache %s: %v", path, err)
	}
	s.split(all, n)
	return s
}

// split cuts all into vectors of s.dim: the first n are the base, the rest
// the queries.
func (s *denseSet) split(all []float32, n int) {
	dim := s.dim
	for i := 0; i < len(all)/dim; i++ {
		v := all[i*dim : (i+1)*dim : (i+1)*dim]
		if i < n {
			s.base = append(s.base, v)
		} else {
			s.queries = append(s.queries, v)
		}
	}
}

func readF32(path string, n int) ([]float32, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil || st.Size() != int64(4*n) {
		return nil, fmt.Errorf("size mismatch")
	}
	out := make([]float32, n)
	r := bufio.NewReaderSize(f, 1<<20)
	if err := binary.Read(r, binary.LittleEndian, out); err != nil {
		return nil, err
	}
	return out, nil
}

func writeF32(path string, v []float32) error {
	f, err := os.Create(path + ".tmp")
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	if err := binary.Write(w, binary.LittleEndian, v); err != nil {
		f.Close()
		return err
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(path+".tmp", path)
}

func useLiteSet(tb testing.TB) *denseSet {
	path := os.Getenv("RAGMEM_USELITE_CACHE")
	if path == "" {
		home, _ := os.UserHomeDir()
		path = filepath.Join(home, "use-lite", "cache.jsonl")
	}
	f, err := os.Open(path)
	if err != nil {
		tb.Skipf("use-lite cache not available: %v", err)
	}
	defer f.Close()
	var all [][]float32
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		var row []json.RawMessage
		if json.Unmarshal(sc.Bytes(), &row) != nil || len(row) != 2 {
			continue
		}
		var v []float32
		if json.Unmarshal(row[1], &v) != nil || len(v) == 0 {
			continue
		}
		all = append(all, unitCopy(v))
	}
	if len(all) < 1000 {
		tb.Skipf("use-lite cache has only %d vectors", len(all))
	}
	nq := 400
	return &denseSet{name: "uselite", dim: len(all[0]), base: all[:len(all)-nq], queries: all[len(all)-nq:]}
}

func unitCopy(v []float32) []float32 {
	var n float64
	for _, f := range v {
		n += float64(f) * float64(f)
	}
	out := make([]float32, len(v))
	inv := 1 / math.Sqrt(n)
	for i, f := range v {
		out[i] = float32(float64(f) * inv)
	}
	return out
}

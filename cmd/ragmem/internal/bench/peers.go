package bench

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"time"

	"github.com/blevesearch/bleve/v2"
	index_api "github.com/blevesearch/bleve_index_api"
	chromem "github.com/philippgille/chromem-go"

	"github.com/ragmem/ragmem/index"
	"github.com/ragmem/ragmem/internal/benchdata"
	"github.com/ragmem/ragmem/search"
)

// newChromem loads records into a chromem-go collection as the local
// backend used to: vectors given, doc type and source as metadata.
func newChromem(ctx context.Context, records []index.Record) (*chromem.Collection, error) {
	db := chromem.NewDB()
	coll, err := db.CreateCollection("bench", nil, func(context.Context, string) ([]float32, error) {
		return nil, errors.New("bench: no embedding function")
	})
	if err != nil {
		return nil, err
	}
	for i := range records {
		r := &records[i]
		if err := coll.AddDocument(ctx, chromem.Document{ID: r.ID, Embedding: r.Vector, Content: r.Content,
			Metadata: map[string]string{"docType": r.DocType, "source": r.SourceURL}}); err != nil {
			return nil, err
		}
	}
	return coll, nil
}

// benchChromem measures chromem-go's exhaustive QueryEmbedding for a hybrid
// candidate pool (top 100) filtered to knowledge, the query the local
// backend sent it before the vector index.
func benchChromem(ctx context.Context, records []index.Record, qvecs [][]float32) (Latency, error) {
	coll, err := newChromem(ctx, records)
	if err != nil {
		return Latency{}, err
	}
	n := min(len(qvecs), 50)
	var ds []time.Duration
	for _, q := range qvecs[:n] {
		t0 := time.Now()
		if _, err := coll.QueryEmbedding(ctx, q, min(search.MinCandidatePool, coll.Count()), map[string]string{"docType": index.DocKnowledge}, nil); err != nil {
			return Latency{}, err
		}
		ds = append(ds, time.Since(t0))
	}
	return summarise(ds), nil
}

// chromemAlone is chromem-go used directly: load the vectors, query top 10
// for each query vector, rank documents by their best chunk.
func chromemAlone(ctx context.Context, records []index.Record, qs []benchdata.Query, qvecs [][]float32) PeerResult {
	p := PeerResult{Name: "chromem-go (vector)", K: 10}
	start := time.Now()
	coll, err := newChromem(ctx, records)
	if err != nil {
		return p
	}
	p.IndexSeconds = time.Since(start).Seconds()
	p.PerSecond = float64(len(records)) / p.IndexSeconds
	var ds []time.Duration
	var ndcg float64
	for i, q := range qvecs {
		t0 := time.Now()
		rs, err := coll.QueryEmbedding(ctx, q, min(10, coll.Count()), nil, nil)
		ds = append(ds, time.Since(t0))
		if err != nil {
			continue
		}
		ranked := make([]string, len(rs))
		for j, r := range rs {
			ranked[j] = docOf(r.Metadata["source"])
		}
		ndcg += benchdata.NDCG10(ranked, qs[i].Relevant)
	}
	p.Query = summarise(ds)
	p.NDCG10 = ndcg / float64(max(1, len(qs)))
	return p
}

// bleveAlone is bleve used the way its documentation shows: the default
// index mapping (standard analyzer, stored fields and term vectors) with
// BM25 scoring, documents indexed in batches of 100, match queries.
func bleveAlone(ctx context.Context, dir string, records []index.Record, qs []benchdata.Query) (PeerResult, error) {
	p := PeerResult{Name: "bleve (BM25)", K: 10}
	_ = os.RemoveAll(dir)
	m := bleve.NewIndexMapping()
	m.ScoringModel = index_api.BM25Scoring
	bi, err := bleve.New(dir, m)
	if err != nil {
		return p, err
	}
	defer bi.Close()
	start := time.Now()
	b := bi.NewBatch()
	for i := range records {
		r := &records[i]
		if err := b.Index(r.ID, map[string]any{"title": r.Title, "text": r.Content, "source": r.SourceURL}); err != nil {
			return p, err
		}
		if b.Size() >= 100 || i == len(records)-1 {
			if err := bi.Batch(b); err != nil {
				return p, err
			}
			b = bi.NewBatch()
		}
	}
	p.IndexSeconds = time.Since(start).Seconds()
	p.PerSecond = float64(len(records)) / p.IndexSeconds
	var ds []time.Duration
	var ndcg float64
	for _, q := range qs {
		req := bleve.NewSearchRequestOptions(bleve.NewMatchQuery(q.Text), 10, 0, false)
		req.Fields = []string{"source"}
		t0 := time.Now()
		sr, err := bi.SearchInContext(ctx, req)
		ds = append(ds, time.Since(t0))
		if err != nil {
			return p, err
		}
		ranked := make([]string, 0, len(sr.Hits))
		for _, h := range sr.Hits {
			if s, ok := h.Fields["source"].(string); ok {
				ranked = append(ranked, docOf(s))
			}
		}
		ndcg += benchdata.NDCG10(ranked, q.Relevant)
	}
	p.Query = summarise(ds)
	p.NDCG10 = ndcg / float64(max(1, len(qs)))
	return p, nil
}

// exportCorpus writes what the Node peers need: chunks.jsonl (id, doc,
// title, text), chunk_vectors.f32 (little-endian float32, one row per
// chunk in file order), queries.jsonl (id, text, relevant, and exact10: the
// ids of the 10 chunks whose vectors are nearest to the query's, by ragmem's
// exact scan, for the peers' recall) and query_vectors.f32, and meta.json
// (counts and dimension).
func exportCorpus(dir string, records []index.Record, qs []benchdata.Query, qvecs [][]float32, truth [][]string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	write := func(name string, fn func(w *bufio.Writer) error) error {
		f, err := os.Create(filepath.Join(dir, name))
		if err != nil {
			return err
		}
		w := bufio.NewWriterSize(f, 1<<20)
		if err := fn(w); err != nil {
			f.Close()
			return err
		}
		if err := w.Flush(); err != nil {
			f.Close()
			return err
		}
		return f.Close()
	}
	dim := 0
	if len(records) > 0 {
		dim = len(records[0].Vector)
	}
	vecs := func(vs func(i int) []float32, n int) func(w *bufio.Writer) error {
		return func(w *bufio.Writer) error {
			buf := make([]byte, 4*dim)
			for i := 0; i < n; i++ {
				for j, f := range vs(i) {
					binary.LittleEndian.PutUint32(buf[4*j:], math.Float32bits(f))
				}
				if _, err := w.Write(buf); err != nil {
					return err
				}
			}
			return nil
		}
	}
	err := write("chunks.jsonl", func(w *bufio.Writer) error {
		enc := json.NewEncoder(w)
		for i := range records {
			r := &records[i]
			if err := enc.Encode(map[string]string{"id": r.ID, "doc": docOf(r.SourceURL), "title": r.Title, "text": r.Content}); err != nil {
				return err
			}
		}
		return nil
	})
	if err == nil {
		err = write("chunk_vectors.f32", vecs(func(i int) []float32 { return records[i].Vector }, len(records)))
	}
	if err == nil {
		err = write("queries.jsonl", func(w *bufio.Writer) error {
			enc := json.NewEncoder(w)
			for i, q := range qs {
				row := map[string]any{"id": q.ID, "text": q.Text, "relevant": q.Relevant}
				if i < len(truth) {
					row["exact10"] = truth[i]
				}
				if err := enc.Encode(row); err != nil {
					return err
				}
			}
			return nil
		})
	}
	if err == nil {
		err = write("query_vectors.f32", vecs(func(i int) []float32 { return qvecs[i] }, len(qvecs)))
	}
	if err == nil {
		err = write("meta.json", func(w *bufio.Writer) error {
			return json.NewEncoder(w).Encode(map[string]int{"chunks": len(records), "queries": len(qs), "dimension": dim, "k": 10})
		})
	}
	return err
}

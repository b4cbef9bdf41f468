// Package benchdata makes and loads the corpora of ragmem's benchmarks: a
// deterministic synthetic corpus of any size with known-item queries, and
// the SciFact test collection (BEIR format) with its relevance judgements.
//
// The synthetic text draws words from a Zipf distribution over a vocabulary
// whose most frequent words are English function words (which ragmem's
// analyzers drop, as in real text) followed by 40,000 made-up words, in
// sentences of 8 to 20 words. A known-item query is four content words of
// one document, drawn with a preference for its rarer words, the way a user
// recalls a page; that document is the query's one relevant answer.
//
// Everything here is deterministic for a given seed and safe for concurrent
// use across distinct values.
package benchdata

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math"
	"math/rand"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
)

// Doc is one benchmark document.
type Doc struct {
	ID    string
	Title string
	Text  string
}

// Query is one benchmark query with its relevant document ids (graded 1).
type Query struct {
	ID       string
	Text     string
	Relevant map[string]int
}

var functionWords = strings.Fields(`the of and to a in is that for it as was with be by on not he this are or
his from at which but have an they you were her she there been one all we their has would when if so no
will more can out up who them some into than its only other then these two may do such what about over`)

// Synth generates a synthetic corpus. It is not safe for concurrent use.
type Synth struct {
	vocab []string
	rank  map[string]int
	zipf  *rand.Zipf
	rng   *rand.Rand
}

var (
	vocabOnce sync.Once
	vocab     []string
	vocabRank map[string]int
)

// theVocabulary builds the one vocabulary every generator shares.
func theVocabulary() ([]string, map[string]int) {
	vocabOnce.Do(func() {
		vr := rand.New(rand.NewSource(42))
		v := append([]string(nil), functionWords...)
		seen := map[string]bool{}
		for _, w := range v {
			seen[w] = true
		}
		syll := strings.Fields("ka ro mi ta ne su lo vi pe da gu ri zo ban tel mor qui fen sa ly dro ex ix um or al in on ar")
		for len(v) < 40000+len(functionWords) {
			n := 2 + vr.Intn(3)
			var b strings.Builder
			for i := 0; i < n; i++ {
				b.WriteString(syll[vr.Intn(len(syll))])
			}
			if w := b.String(); !seen[w] {
				seen[w] = true
				v = append(v, w)
			}
		}
		vocabRank = make(map[string]int, len(v))
		for i, w := range v {
			vocabRank[w] = i
		}
		vocab = v
	})
	return vocab, vocabRank
}

// NewSynth returns a generator; equal seeds give equal corpora.
func NewSynth(seed int64) *Synth {
	v, rank := theVocabulary()
	rng := rand.New(rand.NewSource(seed))
	return &Synth{vocab: v, rank: rank, zipf: rand.NewZipf(rng, 1.07, 2, uint64(len(v)-1)), rng: rng}
}

// NewSynthDoc returns document i generated from its own seed, so that any
// document can be made without the ones before it.
func NewSynthDoc(seed int64, i, words int) Doc {
	return NewSynth(seed*7919+1).Doc(i, words)
}

func (s *Synth) sentence(b *strings.Builder) {
	n := 8 + s.rng.Intn(13)
	for i := 0; i < n; i++ {
		w := s.vocab[s.zipf.Uint64()]
		if i == 0 {
			w = strings.ToUpper(w[:1]) + w[1:]
		} else {
			b.WriteByte(' ')
		}
		b.WriteString(w)
	}
	b.WriteString(". ")
}

// Doc returns document i: a title and about words words of text, which at
// 200 words fits one 400-token chunk.
func (s *Synth) Doc(i, words int) Doc {
	var b strings.Builder
	for b.Len() < words*6 {
		s.sentence(&b)
	}
	var t strings.Builder
	s.sentence(&t)
	return Doc{ID: fmt.Sprintf("doc%07d", i), Title: strings.TrimSuffix(strings.TrimSpace(t.String()), "."), Text: strings.TrimSpace(b.String())}
}

// KnownItem returns a query for d: four distinct content words of its text,
// each drawn from its words weighted by rank (rarer words more likely).
func (s *Synth) KnownItem(id string, d Doc) Query {
	words := strings.Fields(strings.ToLower(strings.NewReplacer(".", " ").Replace(d.Text)))
	var cands []string
	var weights []float64
	seen := map[string]bool{}
	for _, w := range words {
		r, ok := s.rank[w]
		if !ok || r < len(functionWords) || seen[w] {
			continue
		}
		seen[w] = true
		cands = append(cands, w)
		weights = append(weights, float64(r))
	}
	var picked []string
	for len(picked) < 4 && len(cands) > 0 {
		var total float64
		for _, w := range weights {
			total += w
		}
		x := s.rng.Float64() * total
		j := 0
		for ; j < len(weights)-1 && x >= weights[j]; j++ {
			x -= weights[j]
		}
		picked = append(picked, cands[j])
		cands = append(cands[:j], cands[j+1:]...)
		weights = append(weights[:j], weights[j+1:]...)
	}
	return Query{ID: id, Text: strings.Join(picked, " "), Relevant: map[string]int{d.ID: 1}}
}

// FindUp looks for rel in the working directory and the directories above
// it; "" when it is nowhere.
func FindUp(rel string) string {
	dir, _ := os.Getwd()
	for range 8 {
		p := filepath.Join(dir, rel)
		if _, err := os.Stat(p); err == nil {
			return p
		}
		dir = filepath.Dir(dir)
	}
	return ""
}

// SciFactDir returns the SciFact directory: $RAGMEM_SCIFACT_DIR, else
// shared/eval/scifact above the working directory, else "".
func SciFactDir() string {
	if d := os.Getenv("RAGMEM_SCIFACT_DIR"); d != "" {
		return d
	}
	return FindUp(filepath.Join("shared", "eval", "scifact"))
}

// LoadBEIR reads a BEIR collection: corpus.jsonl, queries.jsonl and
// qrels/test.tsv. Only queries with judgements are returned, in id order.
func LoadBEIR(dir string) ([]Doc, []Query, error) {
	var docs []Doc
	err := eachJSON(filepath.Join(dir, "corpus.jsonl"), func(raw []byte) error {
		var d struct {
			ID    string `json:"_id"`
			Title string `json:"title"`
			Text  string `json:"text"`
		}
		if err := json.Unmarshal(raw, &d); err != nil {
			return err
		}
		docs = append(docs, Doc{ID: d.ID, Title: d.Title, Text: d.Text})
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	qrels := map[string]map[string]int{}
	f, err := os.Open(filepath.Join(dir, "qrels", "test.tsv"))
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		p := strings.Split(sc.Text(), "\t")
		if len(p) < 3 || p[0] == "query-id" {
			continue
		}
		var g int
		if _, err := fmt.Sscan(p[2], &g); err != nil || g <= 0 {
			continue
		}
		if qrels[p[0]] == nil {
			qrels[p[0]] = map[string]int{}
		}
		qrels[p[0]][p[1]] = g
	}
	var qs []Query
	err = eachJSON(filepath.Join(dir, "queries.jsonl"), func(raw []byte) error {
		var q struct {
			ID   string `json:"_id"`
			Text string `json:"text"`
		}
		if err := json.Unmarshal(raw, &q); err != nil {
			return err
		}
		if rel := qrels[q.ID]; rel != nil {
			qs = append(qs, Query{ID: q.ID, Text: q.Text, Relevant: rel})
		}
		return nil
	})
	sort.Slice(qs, func(i, j int) bool { return qs[i].ID < qs[j].ID })
	return docs, qs, err
}

func eachJSON(path string, fn func([]byte) error) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<26)
	for sc.Scan() {
		if len(strings.TrimSpace(sc.Text())) == 0 {
			continue
		}
		if err := fn(sc.Bytes()); err != nil {
			return fmt.Errorf("%s: %w", filepath.Base(path), err)
		}
	}
	return sc.Err()
}

// NDCG10 is nDCG@10 of a ranking of document ids against graded judgements
// (duplicates after their first occurrence are ignored).
func NDCG10(ranked []string, rel map[string]int) float64 {
	var dcg float64
	seen := map[string]bool{}
	pos := 0
	for _, id := range ranked {
		if seen[id] {
			continue
		}
		seen[id] = true
		pos++
		if pos > 10 {
			break
		}
		if g := rel[id]; g > 0 {
			dcg += (float64(int(1)<<g) - 1) / math.Log2(float64(pos+1))
		}
	}
	gains := make([]int, 0, len(rel))
	for _, g := range rel {
		gains = append(gains, g)
	}
	sort.Sort(sort.Reverse(sort.IntSlice(gains)))
	var idcg float64
	for i, g := range gains {
		if i >= 10 {
			break
		}
		idcg += (float64(int(1)<<g) - 1) / math.Log2(float64(i+2))
	}
	if idcg == 0 {
		return 0
	}
	return dcg / idcg
}

package eval

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/ragmem/ragmem/index"
)

// ErrBadDataset is returned (wrapped, with the file and line) when a data set
// folder is missing a file or a file is malformed.
var ErrBadDataset = errors.New("eval: bad data set")

// maxLine bounds one JSON line or TSV row. BEIR's largest corpora have
// documents of a few hundred KB; a longer line means a broken file.
const maxLine = 64 << 20

// Doc is one corpus document.
type Doc struct {
	ID    string
	Title string
	Text  string
	// Attrs are stored on the document's chunks (index.Document.Attrs):
	// a memory's speaker, when it happened and its context. Nil for BEIR.
	Attrs map[string]string
}

// Qrels are relevance judgements: query id -> document id -> grade. Grades
// above zero are relevant; a grade of zero or less is a judged non-relevant
// document.
type Qrels map[string]map[string]int

// Dataset is a BEIR-format data set: a corpus, queries and one split's
// relevance judgements. It is read-only once loaded and then safe for
// concurrent use.
type Dataset struct {
	Name   string // the folder's base name
	Split  string // the qrels split, e.g. "test"
	Corpus []Doc  // in file order
	// Queries holds the text of every query that has judgements in the
	// split, by id. Query ids of Order are its keys in file order.
	Queries map[string]string
	Order   []string
	Qrels   Qrels
	// DocType is the type the corpus is indexed and searched as:
	// index.DocKnowledge ("" means it: BEIR) or index.DocMemory (a
	// conversation's turns).
	DocType string
	// Categories, when set, labels queries (by id) with a category; the
	// report then also gives each category's metrics.
	Categories map[string]string
	// Memories describes how a conversation's turns were written as
	// memories (TurnOptions.String), for reports; "" for BEIR.
	Memories string
	// AskedAt is when the queries are asked: the reference of relative time
	// expressions in them ("last week"). Zero means the wall clock.
	AskedAt time.Time
}

func (ds *Dataset) docType() string {
	if ds.DocType == "" {
		return index.DocKnowledge
	}
	return ds.DocType
}

// LoadBEIR reads a BEIR folder: corpus.jsonl ({"_id","title","text"}),
// queries.jsonl ({"_id","text"}) and qrels/<split>.tsv ("query-id corpus-id
// score", an optional header line). Only queries judged in the split are
// kept; a judged query missing from queries.jsonl is an error.
func LoadBEIR(dir, split string) (*Dataset, error) {
	if split == "" {
		split = "test"
	}
	if strings.ContainsAny(split, `/\`) || split == "." || split == ".." {
		return nil, fmt.Errorf("%w: split %q is not a file name", ErrBadDataset, split)
	}
	ds := &Dataset{Name: filepath.Base(filepath.Clean(dir)), Split: split}
	var err error
	if ds.Qrels, err = readFile(filepath.Join(dir, "qrels", split+".tsv"), ReadQrels); err != nil {
		return nil, err
	}
	if ds.Corpus, err = readFile(filepath.Join(dir, "corpus.jsonl"), ReadCorpus); err != nil {
		return nil, err
	}
	queries, err := readFile(filepath.Join(dir, "queries.jsonl"), ReadQueries)
	if err != nil {
		return nil, err
	}
	ds.Queries = map[string]string{}
	for _, q := range queries {
		if _, judged := ds.Qrels[q.ID]; judged {
			ds.Queries[q.ID] = q.Text
			ds.Order = append(ds.Order, q.ID)
		}
	}
	if len(ds.Order) < len(ds.Qrels) {
		var missing []string
		for id := range ds.Qrels {
			if _, ok := ds.Queries[id]; !ok {
				missing = append(missing, id)
			}
		}
		sort.Strings(missing)
		return nil, fmt.Errorf("%w: qrels/%s.tsv judges %d queries that queries.jsonl lacks (first: %q)",
			ErrBadDataset, split, len(missing), clip(missing[0]))
	}
	return ds, nil
}

func readFile[T any](path string, read func(io.Reader) (T, error)) (T, error) {
	var zero T
	f, err := os.Open(path)
	if err != nil {
		return zero, fmt.Errorf("%w: %w", ErrBadDataset, err)
	}
	defer f.Close()
	v, err := read(f)
	if err != nil {
		return zero, fmt.Errorf("%s: %w", path, err)
	}
	return v, nil
}

// Query is one line of queries.jsonl.
type Query struct {
	ID   string
	Text string
}

// lines calls fn for each non-blank line of r with its 1-based number.
func lines(r io.Reader, fn func(n int, line []byte) error) error {
	br := bufio.NewReaderSize(r, 1<<16)
	var buf []byte
	for n := 1; ; n++ {
		buf = buf[:0]
		var err error
		for {
			var part []byte
			part, err = br.ReadSlice('\n')
			buf = append(buf, part...)
			if len(buf) > maxLine {
				return fmt.Errorf("%w: line %d is longer than %d bytes", ErrBadDataset, n, maxLine)
			}
			if err != bufio.ErrBufferFull {
				break
			}
		}
		if err != nil && err != io.EOF {
			return fmt.Errorf("%w: line %d: %w", ErrBadDataset, n, err)
		}
		line := bytes.TrimSpace(buf)
		if n == 1 {
			line = bytes.TrimPrefix(line, []byte("\xef\xbb\xbf")) // BOM
		}
		if len(line) > 0 {
			if ferr := fn(n, line); ferr != nil {
				return ferr
			}
		}
		if err == io.EOF {
			return nil
		}
	}
}

// jsonID accepts an id written as a JSON string or number.
type jsonID string

func (id *jsonID) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		*id = jsonID(s)
		return nil
	}
	var n json.Number
	if err := json.Unmarshal(b, &n); err != nil {
		return errors.New("_id is neither a string nor a number")
	}
	*id = jsonID(n.String())
	return nil
}

// ReadCorpus reads corpus.jsonl. Every line must have a non-empty, unique
// "_id"; "title" and "text" may be missing or empty. Invalid UTF-8 is
// replaced by U+FFFD.
func ReadCorpus(r io.Reader) ([]Doc, error) {
	var docs []Doc
	seen := map[string]int{}
	err := lines(r, func(n int, line []byte) error {
		var d struct {
			ID    *jsonID `json:"_id"`
			Title string  `json:"title"`
			Text  string  `json:"text"`
		}
		if err := json.Unmarshal(line, &d); err != nil {
			return fmt.Errorf("%w: line %d: %v", ErrBadDataset, n, err)
		}
		if d.ID == nil || *d.ID == "" {
			return fmt.Errorf("%w: line %d: document has no \"_id\"", ErrBadDataset, n)
		}
		id := cleanID(string(*d.ID))
		if first, dup := seen[id]; dup {
			return fmt.Errorf("%w: line %d: document id %q already on line %d", ErrBadDataset, n, clip(id), first)
		}
		seen[id] = n
		docs = append(docs, Doc{ID: id, Title: validUTF8(d.Title), Text: validUTF8(d.Text)})
		return nil
	})
	return docs, err
}

// ReadQueries reads queries.jsonl. Every line must have a non-empty, unique
// "_id"; a query with empty text is kept (it retrieves nothing).
func ReadQueries(r io.Reader) ([]Query, error) {
	var qs []Query
	seen := map[string]int{}
	err := lines(r, func(n int, line []byte) error {
		var q struct {
			ID   *jsonID `json:"_id"`
			Text string  `json:"text"`
		}
		if err := json.Unmarshal(line, &q); err != nil {
			return fmt.Errorf("%w: line %d: %v", ErrBadDataset, n, err)
		}
		if q.ID == nil || *q.ID == "" {
			return fmt.Errorf("%w: line %d: query has no \"_id\"", ErrBadDataset, n)
		}
		id := cleanID(string(*q.ID))
		if first, dup := seen[id]; dup {
			return fmt.Errorf("%w: line %d: query id %q already on line %d", ErrBadDataset, n, clip(id), first)
		}
		seen[id] = n
		qs = append(qs, Query{ID: id, Text: validUTF8(q.Text)})
		return nil
	})
	return qs, err
}

// ReadQrels reads a qrels TSV file: "query-id<TAB>corpus-id<TAB>score" per
// line, with an optional header line whose score column is not a number.
// Four columns ("query-id 0 corpus-id score", the TREC layout) are accepted
// too. A pair judged twice keeps its last grade.
func ReadQrels(r io.Reader) (Qrels, error) {
	q := Qrels{}
	err := lines(r, func(n int, line []byte) error {
		f := strings.Fields(string(line))
		switch len(f) {
		case 3:
		case 4:
			f = []string{f[0], f[2], f[3]}
		default:
			return fmt.Errorf("%w: line %d: want \"query-id corpus-id score\", got %d columns", ErrBadDataset, n, len(f))
		}
		grade, err := strconv.Atoi(f[2])
		if err != nil {
			if n == 1 && len(q) == 0 {
				return nil // header
			}
			return fmt.Errorf("%w: line %d: score %q is not an integer", ErrBadDataset, n, clip(f[2]))
		}
		qid, did := cleanID(f[0]), cleanID(f[1])
		if q[qid] == nil {
			q[qid] = map[string]int{}
		}
		q[qid][did] = grade
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(q) == 0 {
		return nil, fmt.Errorf("%w: no judgements", ErrBadDataset)
	}
	return q, nil
}

func validUTF8(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	return strings.ToValidUTF8(s, "\uFFFD")
}

func cleanID(s string) string { return validUTF8(strings.TrimSpace(s)) }

// clip keeps user data in error messages short.
func clip(s string) string {
	const n = 60
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

package local

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/analysis/analyzer/keyword"
	"github.com/blevesearch/bleve/v2/analysis/lang/en"
	"github.com/blevesearch/bleve/v2/mapping"
	"github.com/blevesearch/bleve/v2/search/query"
	index "github.com/blevesearch/bleve_index_api"

	"github.com/ragmem/ragmem/index/driver"
)

// The BM25 side: a bleve (scorch) index whose documents carry only what
// queries read. Nothing is stored in bleve (hits are resolved against the
// in-memory records) and no term vectors or doc values are kept.

const (
	fieldBody    = "body"
	fieldSource  = "source"
	fieldDocType = "docType"
	seqKey       = "ragmem.seq" // bleve internal key: last applied journal sequence
)

func newMapping() mapping.IndexMapping {
	im := bleve.NewIndexMapping()
	im.ScoringModel = index.BM25Scoring
	im.DefaultAnalyzer = en.AnalyzerName
	im.StoreDynamic = false
	im.IndexDynamic = false
	im.DocValuesDynamic = false

	body := bleve.NewTextFieldMapping()
	body.Analyzer = en.AnalyzerName
	body.Store = false
	body.IncludeTermVectors = false
	body.IncludeInAll = false
	body.DocValues = false

	kw := bleve.NewTextFieldMapping()
	kw.Analyzer = keyword.Name
	kw.Store = false
	kw.IncludeTermVectors = false
	kw.IncludeInAll = false
	kw.DocValues = false

	doc := bleve.NewDocumentStaticMapping()
	doc.AddFieldMappingsAt(fieldBody, body)
	doc.AddFieldMappingsAt(fieldSource, kw)
	doc.AddFieldMappingsAt(fieldDocType, kw)
	im.DefaultMapping = doc
	return im
}

// bleveDoc is what a record looks like to bleve: the title and heading path
// are searched together with the text (one field, as Lucene baselines do).
func bleveDoc(r *driver.Record) map[string]any {
	var b strings.Builder
	b.Grow(len(r.Title) + len(r.Content) + 64)
	if r.Title != "" {
		b.WriteString(r.Title)
		b.WriteString("\n")
	}
	for _, h := range r.HeadingPath {
		if h != r.Title {
			b.WriteString(h)
			b.WriteString("\n")
		}
	}
	b.WriteString(r.Content)
	return map[string]any{
		fieldBody:    b.String(),
		fieldSource:  r.SourceURL,
		fieldDocType: r.DocType,
	}
}

func openBleve(path string) (bleve.Index, bool, error) {
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		bi, err := bleve.New(path, newMapping())
		return bi, true, err
	}
	bi, err := bleve.Open(path)
	return bi, false, err
}

func bleveSeq(bi bleve.Index) (uint64, error) {
	v, err := bi.GetInternal([]byte(seqKey))
	if err != nil {
		return 0, err
	}
	if len(v) == 0 {
		return 0, nil
	}
	return strconv.ParseUint(string(v), 10, 64)
}

// filterQuery turns the parts of f bleve can evaluate into a query; attribute
// filters are applied by the caller against the records.
func filterQuery(f *driver.Filter) []query.Query {
	var qs []query.Query
	if len(f.DocTypes) == 1 {
		t := bleve.NewTermQuery(f.DocTypes[0])
		t.SetField(fieldDocType)
		qs = append(qs, t)
	} else if len(f.DocTypes) > 1 {
		var alts []query.Query
		for _, dt := range f.DocTypes {
			t := bleve.NewTermQuery(dt)
			t.SetField(fieldDocType)
			alts = append(alts, t)
		}
		qs = append(qs, bleve.NewDisjunctionQuery(alts...))
	}
	if f.SourceURL != "" {
		t := bleve.NewTermQuery(f.SourceURL)
		t.SetField(fieldSource)
		qs = append(qs, t)
	}
	return qs
}

// searchBleve returns (id, score) pairs for the best k matches of text.
func searchBleve(ctx context.Context, bi bleve.Index, text string, k int, f *driver.Filter) ([]string, []float64, error) {
	mq := bleve.NewMatchQuery(text)
	mq.SetField(fieldBody)
	mq.Analyzer = en.AnalyzerName
	var q query.Query = mq
	if fq := filterQuery(f); len(fq) > 0 {
		// A boolean filter restricts matches without adding to their scores.
		bq := bleve.NewBooleanQuery()
		bq.AddMust(mq)
		if len(fq) == 1 {
			bq.AddFilter(fq[0])
		} else {
			bq.AddFilter(bleve.NewConjunctionQuery(fq...))
		}
		q = bq
	}
	req := bleve.NewSearchRequestOptions(q, k, 0, false)
	res, err := bi.SearchInContext(ctx, req)
	if err != nil {
		return nil, nil, fmt.Errorf("index: full-text search: %w", err)
	}
	ids := make([]string, len(res.Hits))
	scores := make([]float64, len(res.Hits))
	for i, h := range res.Hits {
		ids[i] = h.ID
		scores[i] = h.Score
	}
	return ids, scores, nil
}

package weaviate

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/blevesearch/bleve/v2/analysis"
	"github.com/blevesearch/bleve/v2/analysis/lang/en"
	"github.com/blevesearch/bleve/v2/mapping"
	"github.com/weaviate/weaviate-go-client/v5/weaviate/filters"
	"github.com/weaviate/weaviate-go-client/v5/weaviate/graphql"
	"github.com/weaviate/weaviate/entities/models"

	"github.com/ragmem/ragmem/index/driver"
)

// key hashes a value that filters compare, so that no user-supplied string
// is ever spliced into a query.
func key(parts ...string) string {
	h := sha256.New()
	for i, p := range parts {
		if i > 0 {
			h.Write([]byte{0})
		}
		h.Write([]byte(p))
	}
	return hex.EncodeToString(h.Sum(nil)[:16])
}

var (
	analyzerOnce sync.Once
	analyzer     analysis.Analyzer
)

// terms analyses text as the local backend's bleve index does (English:
// unicode words, possessives, lower case, stop words, Porter stems) and
// returns the terms separated by spaces. Terms holding a character that is
// not printable are dropped: they cannot travel in a GraphQL string and no
// query could match them.
func terms(text string) string {
	analyzerOnce.Do(func() {
		analyzer = mapping.NewIndexMapping().AnalyzerNamed(en.AnalyzerName)
	})
	toks := analyzer.Analyze([]byte(text))
	var b strings.Builder
	b.Grow(len(text))
	for _, t := range toks {
		term := string(t.Term)
		if term == "" || strings.IndexFunc(term, func(r rune) bool { return !unicode.IsPrint(r) || unicode.IsSpace(r) }) >= 0 {
			continue
		}
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(term)
	}
	return b.String()
}

// object converts a record to a Weaviate object.
func (b *Backend) object(r *driver.Record) *models.Object {
	props := map[string]any{
		pRecordID:    r.ID,
		pSourceURL:   r.SourceURL,
		pSourceKey:   key(r.SourceURL),
		pTitle:       r.Title,
		pContent:     r.Content,
		pTerms:       terms(driver.SearchText(r)),
		pDocType:     r.DocType,
		pDocKey:      key(r.DocType),
		pPosition:    r.Position,
		pStart:       r.Start,
		pEnd:         r.End,
		pTokens:      r.Tokens,
		pCreatedAt:   r.CreatedAt.UTC().Format(time.RFC3339Nano),
		pContentHash: r.ContentHash,
	}
	if len(r.HeadingPath) > 0 {
		props[pHeadingPath] = append([]string(nil), r.HeadingPath...)
	}
	if len(r.Attrs) > 0 {
		props[pAttrs] = encodeAttrs(r.Attrs)
		ks := make([]string, 0, len(r.Attrs))
		for k, v := range r.Attrs {
			ks = append(ks, key(k, v))
		}
		sort.Strings(ks)
		props[pAttrKeys] = ks
	}
	return &models.Object{
		Class:      b.class,
		ID:         strfmtUUID(b.objectID(r.ID)),
		Properties: props,
		Vector:     r.Vector,
	}
}

// encodeAttrs writes attributes as a JSON object whose keys and values are
// Go-quoted strings, so that any bytes, valid UTF-8 or not, come back
// exactly (JSON alone would replace invalid UTF-8).
func encodeAttrs(a map[string]string) string {
	q := make(map[string]string, len(a))
	for k, v := range a {
		q[strconv.QuoteToASCII(k)] = strconv.QuoteToASCII(v)
	}
	js, _ := json.Marshal(q) // ASCII strings always marshal
	return string(js)
}

func decodeAttrs(s string) (map[string]string, error) {
	var q map[string]string
	if err := json.Unmarshal([]byte(s), &q); err != nil {
		return nil, err
	}
	a := make(map[string]string, len(q))
	for qk, qv := range q {
		k, err := strconv.Unquote(qk)
		if err != nil {
			return nil, err
		}
		v, err := strconv.Unquote(qv)
		if err != nil {
			return nil, err
		}
		a[k] = v
	}
	return a, nil
}

// gqlRecord is a record object as GraphQL returns it.
type gqlRecord struct {
	RecordID    string   `json:"recordId"`
	SourceURL   string   `json:"sourceUrl"`
	Title       string   `json:"title"`
	HeadingPath []string `json:"headingPath"`
	Content     string   `json:"content"`
	DocType     string   `json:"docType"`
	Position    int      `json:"position"`
	Start       int      `json:"start"`
	End         int      `json:"end"`
	Tokens      int      `json:"tokens"`
	CreatedAt   string   `json:"createdAt"`
	ContentHash string   `json:"contentHash"`
	Attrs       string   `json:"attrs"`
	Additional  struct {
		ID           string    `json:"id"`
		Vector       []float32 `json:"vector"`
		Score        any       `json:"score"` // GraphQL returns it as a string
		Distance     *float64  `json:"distance"`
		ExplainScore string    `json:"explainScore"`
	} `json:"_additional"`
}

func (g *gqlRecord) record() (driver.Record, error) {
	r := driver.Record{
		ID:          g.RecordID,
		SourceURL:   g.SourceURL,
		Title:       g.Title,
		HeadingPath: g.HeadingPath,
		Content:     g.Content,
		DocType:     g.DocType,
		Position:    g.Position,
		Start:       g.Start,
		End:         g.End,
		Tokens:      g.Tokens,
		ContentHash: g.ContentHash,
		Vector:      g.Additional.Vector,
	}
	if g.CreatedAt != "" {
		t, err := time.Parse(time.RFC3339Nano, g.CreatedAt)
		if err != nil {
			return r, fmt.Errorf("%w: record %q has createdAt %q: %w", driver.ErrCorrupt, g.RecordID, g.CreatedAt, err)
		}
		r.CreatedAt = t.UTC()
	}
	if g.Attrs != "" {
		a, err := decodeAttrs(g.Attrs)
		if err != nil {
			return r, fmt.Errorf("%w: record %q has attrs %q: %w", driver.ErrCorrupt, g.RecordID, g.Attrs, err)
		}
		r.Attrs = a
	}
	if r.ID == "" {
		return r, fmt.Errorf("%w: object %s has no recordId", driver.ErrCorrupt, g.Additional.ID)
	}
	return r, nil
}

func (g *gqlRecord) score() float64 {
	switch s := g.Additional.Score.(type) {
	case string:
		f, _ := strconv.ParseFloat(s, 64)
		return f
	case float64:
		return s
	}
	return 0
}

// recordFields are the GraphQL fields of a record, plus _additional ones.
func recordFields(additional ...string) []graphql.Field {
	names := []string{pRecordID, pSourceURL, pTitle, pHeadingPath, pContent, pDocType, pPosition, pStart, pEnd, pTokens, pCreatedAt, pContentHash, pAttrs}
	fs := make([]graphql.Field, 0, len(names)+1)
	for _, n := range names {
		fs = append(fs, graphql.Field{Name: n})
	}
	add := []graphql.Field{{Name: "id"}}
	for _, a := range additional {
		add = append(add, graphql.Field{Name: a})
	}
	return append(fs, graphql.Field{Name: "_additional", Fields: add})
}

// where builds the filter clause for f: nil when f matches everything.
// exact reports whether the clause is all of f; when it is not, the clause
// selects a superset of f's records (possibly all: nil) and the caller
// checks the rest with f.Match.
//
// Of a filter expression (driver.Filter.Where), Weaviate evaluates =, IN
// and, when the prefix holds no * or ?, STARTS WITH on source, type and
// attributes, and AND and OR of these. NOT, !=, EXISTS, title and created
// comparisons are checked here: the schema keeps titles and creation times
// unfiltered, and a negation of a superset is no superset.
func where(f driver.Filter) (w *filters.WhereBuilder, exact bool) {
	var ops []*filters.WhereBuilder
	exact = true
	if len(f.DocTypes) > 0 {
		ks := make([]string, len(f.DocTypes))
		for i, t := range f.DocTypes {
			ks[i] = key(t)
		}
		ops = append(ops, filters.Where().WithPath([]string{pDocKey}).WithOperator(filters.ContainsAny).WithValueText(ks...))
	}
	if f.SourceURL != "" {
		ops = append(ops, whereEq(pSourceKey, key(f.SourceURL)))
	}
	if len(f.Attrs) > 0 {
		ks := make([]string, 0, len(f.Attrs))
		for k, v := range f.Attrs {
			ks = append(ks, key(k, v))
		}
		sort.Strings(ks)
		ops = append(ops, filters.Where().WithPath([]string{pAttrKeys}).WithOperator(filters.ContainsAll).WithValueText(ks...))
	}
	if f.Where != nil {
		ew, ee := whereExpr(f.Where)
		if ew != nil {
			ops = append(ops, ew)
		}
		exact = ee
	}
	return and(ops...), exact
}

// whereExpr translates a filter expression; see where.
func whereExpr(e *driver.Expr) (*filters.WhereBuilder, bool) {
	switch e.Op {
	case driver.OpAnd:
		var ops []*filters.WhereBuilder
		exact := true
		for _, a := range e.Args {
			w, ok := whereExpr(a)
			if w != nil {
				ops = append(ops, w)
			}
			exact = exact && ok
		}
		return and(ops...), exact
	case driver.OpOr:
		ops := make([]*filters.WhereBuilder, 0, len(e.Args))
		exact := true
		for _, a := range e.Args {
			w, ok := whereExpr(a)
			if w == nil {
				return nil, false // one side may match anything
			}
			ops = append(ops, w)
			exact = exact && ok
		}
		return filters.Where().WithOperator(filters.Or).WithOperands(ops), exact
	case driver.OpEq, driver.OpIn:
		if len(e.Values) == 0 {
			return nil, false
		}
		if k, ok := e.Attr(); ok {
			ks := make([]string, len(e.Values))
			for i, v := range e.Values {
				ks[i] = key(k, v)
			}
			return filters.Where().WithPath([]string{pAttrKeys}).WithOperator(filters.ContainsAny).WithValueText(ks...), true
		}
		path := ""
		switch e.Field {
		case driver.FieldSource:
			path = pSourceKey
		case driver.FieldType:
			path = pDocKey
		default:
			return nil, false
		}
		ops := make([]*filters.WhereBuilder, len(e.Values))
		for i, v := range e.Values {
			ops[i] = whereEq(path, key(v))
		}
		if len(ops) == 1 {
			return ops[0], true
		}
		return filters.Where().WithOperator(filters.Or).WithOperands(ops), true
	case driver.OpPrefix:
		if e.Field != driver.FieldSource || len(e.Values) != 1 {
			return nil, false
		}
		p := e.Values[0]
		// Like's wildcards cannot be escaped: with one in the prefix, the
		// clause matches more than the prefix and the rest is checked.
		return filters.Where().WithPath([]string{pSourceURL}).WithOperator(filters.Like).WithValueText(p + "*"),
			!strings.ContainsAny(p, "*?")
	}
	return nil, false
}

func whereEq(path, value string) *filters.WhereBuilder {
	return filters.Where().WithPath([]string{path}).WithOperator(filters.Equal).WithValueText(value)
}

func whereIDs(ids []string) *filters.WhereBuilder {
	return filters.Where().WithPath([]string{"id"}).WithOperator(filters.ContainsAny).WithValueText(ids...)
}

func and(ops ...*filters.WhereBuilder) *filters.WhereBuilder {
	switch len(ops) {
	case 0:
		return nil
	case 1:
		return ops[0]
	}
	return filters.Where().WithOperator(filters.And).WithOperands(ops)
}

// checkVector reports whether v is usable: finite, and of the store's
// dimension when known (dim > 0).
func checkVector(v []float32, dim int) error {
	if len(v) == 0 {
		return fmt.Errorf("no vector")
	}
	if dim > 0 && len(v) != dim {
		return fmt.Errorf("a %d-dimensional vector, the store holds %d-dimensional ones", len(v), dim)
	}
	for _, x := range v {
		if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
			return fmt.Errorf("a non-finite vector")
		}
	}
	return nil
}

func isZero(v []float32) bool {
	for _, x := range v {
		if x != 0 {
			return false
		}
	}
	return true
}

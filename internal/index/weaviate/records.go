package weaviate

import (
	"crypto/sha256"
	"encoding/binary"
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
	pb "github.com/weaviate/weaviate/grpc/generated/protocol/v1"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/ragmem/ragmem/index"
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
// not printable or a space are dropped: the "terms" property is tokenised
// on whitespace, and no query could match them.
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

// object converts a record to a Weaviate object for a gRPC batch write.
func (b *Backend) object(r *index.Record) *pb.BatchObject {
	fields := map[string]*structpb.Value{
		pRecordID:    structpb.NewStringValue(r.ID),
		pSourceURL:   structpb.NewStringValue(r.SourceURL),
		pSourceKey:   structpb.NewStringValue(key(r.SourceURL)),
		pTitle:       structpb.NewStringValue(r.Title),
		pContent:     structpb.NewStringValue(r.Content),
		pTerms:       structpb.NewStringValue(terms(driver.SearchText(r))),
		pDocType:     structpb.NewStringValue(r.DocType),
		pDocKey:      structpb.NewStringValue(key(r.DocType)),
		pPosition:    structpb.NewNumberValue(float64(r.Position)),
		pStart:       structpb.NewNumberValue(float64(r.Start)),
		pEnd:         structpb.NewNumberValue(float64(r.End)),
		pTokens:      structpb.NewNumberValue(float64(r.Tokens)),
		pCreatedAt:   structpb.NewStringValue(r.CreatedAt.UTC().Format(time.RFC3339Nano)),
		pContentHash: structpb.NewStringValue(r.ContentHash),
	}
	props := &pb.BatchObject_Properties{NonRefProperties: &structpb.Struct{Fields: fields}}
	if len(r.HeadingPath) > 0 {
		props.TextArrayProperties = append(props.TextArrayProperties,
			&pb.TextArrayProperties{PropName: pHeadingPath, Values: append([]string(nil), r.HeadingPath...)})
	}
	if len(r.Attrs) > 0 {
		fields[pAttrs] = structpb.NewStringValue(encodeAttrs(r.Attrs))
		ks := make([]string, 0, len(r.Attrs))
		for k, v := range r.Attrs {
			ks = append(ks, key(k, v))
		}
		sort.Strings(ks)
		props.TextArrayProperties = append(props.TextArrayProperties, &pb.TextArrayProperties{PropName: pAttrKeys, Values: ks})
	}
	return &pb.BatchObject{
		Uuid:        b.objectID(r.ID),
		Collection:  b.class,
		Properties:  props,
		VectorBytes: vectorBytes(r.Vector),
	}
}

// vectorBytes encodes a vector as gRPC carries it: float32s, little endian.
func vectorBytes(v []float32) []byte {
	out := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(out[4*i:], math.Float32bits(x))
	}
	return out
}

// bytesVector decodes vectorBytes' encoding; a length that is not a
// multiple of 4 is corrupt.
func bytesVector(p []byte) ([]float32, bool) {
	if len(p)%4 != 0 {
		return nil, false
	}
	if len(p) == 0 {
		return nil, true
	}
	v := make([]float32, len(p)/4)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(p[4*i:]))
	}
	return v, true
}

// queryVector is a query vector as Search's NearVector and Hybrid take it.
func queryVector(v []float32) []*pb.Vectors {
	return []*pb.Vectors{{VectorBytes: vectorBytes(v), Type: pb.Vectors_VECTOR_TYPE_SINGLE_FP32}}
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

// recordFields are the properties a record is read back from.
var recordFields = []string{pRecordID, pSourceURL, pTitle, pHeadingPath, pContent, pDocType, pPosition, pStart, pEnd, pTokens, pCreatedAt, pContentHash, pAttrs}

// result is one object of a Search answer.
type result struct {
	id      string // the object's id
	props   map[string]*pb.Value
	vector  []float32
	score   float64
	dist    float64
	hasDist bool
	explain string
}

// decode reads a Search result; the vector, score and distance are there
// when the request asked for them.
func decode(r *pb.SearchResult) (result, error) {
	md := r.GetMetadata()
	out := result{
		id:      md.GetId(),
		props:   r.GetProperties().GetNonRefProps().GetFields(),
		score:   float64(md.GetScore()),
		dist:    float64(md.GetDistance()),
		hasDist: md.GetDistancePresent(),
		explain: md.GetExplainScore(),
	}
	if vb := md.GetVectorBytes(); len(vb) > 0 {
		v, ok := bytesVector(vb)
		if !ok {
			return out, fmt.Errorf("%w: object %s has a vector of %d bytes", driver.ErrCorrupt, out.id, len(vb))
		}
		out.vector = v
	}
	return out, nil
}

func (r *result) text(name string) string { return r.props[name].GetTextValue() }

func (r *result) int(name string) int { return int(r.props[name].GetIntValue()) }

func (r *result) texts(name string) []string {
	vs := r.props[name].GetListValue().GetTextValues().GetValues()
	if len(vs) == 0 {
		return nil
	}
	return vs
}

// record converts a result to a record.
func (r *result) record() (index.Record, error) {
	rec := index.Record{
		ID:          r.text(pRecordID),
		SourceURL:   r.text(pSourceURL),
		Title:       r.text(pTitle),
		HeadingPath: r.texts(pHeadingPath),
		Content:     r.text(pContent),
		DocType:     r.text(pDocType),
		Position:    r.int(pPosition),
		Start:       r.int(pStart),
		End:         r.int(pEnd),
		Tokens:      r.int(pTokens),
		ContentHash: r.text(pContentHash),
		Vector:      r.vector,
	}
	if c := r.props[pCreatedAt].GetDateValue(); c != "" {
		t, err := time.Parse(time.RFC3339Nano, c)
		if err != nil {
			return rec, fmt.Errorf("%w: record %q has createdAt %q: %w", driver.ErrCorrupt, rec.ID, c, err)
		}
		rec.CreatedAt = t.UTC()
	}
	if a := r.text(pAttrs); a != "" {
		m, err := decodeAttrs(a)
		if err != nil {
			return rec, fmt.Errorf("%w: record %q has attrs %q: %w", driver.ErrCorrupt, rec.ID, a, err)
		}
		rec.Attrs = m
	}
	if rec.ID == "" {
		return rec, fmt.Errorf("%w: object %s has no recordId", driver.ErrCorrupt, r.id)
	}
	return rec, nil
}

// where builds the filter for f: nil when f matches everything. exact
// reports whether the filter is all of f; when it is not, the filter selects
// a superset of f's records (possibly all: nil) and the caller checks the
// rest with f.Match.
//
// Of a filter expression (index.Filter.Where), Weaviate evaluates =, IN
// and, when the prefix holds no * or ?, STARTS WITH on source, type and
// attributes, and AND and OR of these. NOT, !=, EXISTS, title and created
// comparisons are checked here: the schema keeps titles and creation times
// unfiltered, and a negation of a superset is no superset.
func where(f index.Filter) (w *pb.Filters, exact bool) {
	var ops []*pb.Filters
	exact = true
	if len(f.DocTypes) > 0 {
		ks := make([]string, len(f.DocTypes))
		for i, t := range f.DocTypes {
			ks[i] = key(t)
		}
		ops = append(ops, fTexts(pDocKey, pb.Filters_OPERATOR_CONTAINS_ANY, ks))
	}
	if f.SourceURL != "" {
		ops = append(ops, fEq(pSourceKey, key(f.SourceURL)))
	}
	if len(f.Attrs) > 0 {
		ks := make([]string, 0, len(f.Attrs))
		for k, v := range f.Attrs {
			ks = append(ks, key(k, v))
		}
		sort.Strings(ks)
		ops = append(ops, fTexts(pAttrKeys, pb.Filters_OPERATOR_CONTAINS_ALL, ks))
	}
	if f.Where != nil {
		ew, ee := whereExpr(f.Where)
		if ew != nil {
			ops = append(ops, ew)
		}
		exact = ee
	}
	return fAnd(ops...), exact
}

// whereExpr translates a filter expression; see where.
func whereExpr(e *index.Expr) (*pb.Filters, bool) {
	switch e.Op {
	case index.OpAnd:
		var ops []*pb.Filters
		exact := true
		for _, a := range e.Args {
			w, ok := whereExpr(a)
			if w != nil {
				ops = append(ops, w)
			}
			exact = exact && ok
		}
		return fAnd(ops...), exact
	case index.OpOr:
		ops := make([]*pb.Filters, 0, len(e.Args))
		exact := true
		for _, a := range e.Args {
			w, ok := whereExpr(a)
			if w == nil {
				return nil, false // one side may match anything
			}
			ops = append(ops, w)
			exact = exact && ok
		}
		return &pb.Filters{Operator: pb.Filters_OPERATOR_OR, Filters: ops}, exact
	case index.OpEq, index.OpIn:
		if len(e.Values) == 0 {
			return nil, false
		}
		if k, ok := e.Attr(); ok {
			ks := make([]string, len(e.Values))
			for i, v := range e.Values {
				ks[i] = key(k, v)
			}
			return fTexts(pAttrKeys, pb.Filters_OPERATOR_CONTAINS_ANY, ks), true
		}
		path := ""
		switch e.Field {
		case index.FieldSource:
			path = pSourceKey
		case index.FieldType:
			path = pDocKey
		default:
			return nil, false
		}
		ops := make([]*pb.Filters, len(e.Values))
		for i, v := range e.Values {
			ops[i] = fEq(path, key(v))
		}
		if len(ops) == 1 {
			return ops[0], true
		}
		return &pb.Filters{Operator: pb.Filters_OPERATOR_OR, Filters: ops}, true
	case index.OpPrefix:
		if e.Field != index.FieldSource || len(e.Values) != 1 {
			return nil, false
		}
		p := e.Values[0]
		// Like's wildcards cannot be escaped: with one in the prefix, the
		// filter matches more than the prefix and the rest is checked.
		return &pb.Filters{Operator: pb.Filters_OPERATOR_LIKE, Target: target(pSourceURL),
				TestValue: &pb.Filters_ValueText{ValueText: p + "*"}},
			!strings.ContainsAny(p, "*?")
	}
	return nil, false
}

func target(prop string) *pb.FilterTarget {
	return &pb.FilterTarget{Target: &pb.FilterTarget_Property{Property: prop}}
}

// fEq: the text property prop equals value.
func fEq(prop, value string) *pb.Filters {
	return &pb.Filters{Operator: pb.Filters_OPERATOR_EQUAL, Target: target(prop), TestValue: &pb.Filters_ValueText{ValueText: value}}
}

// fTexts compares the text (or text array) property prop with values
// (ContainsAny, ContainsAll).
func fTexts(prop string, op pb.Filters_Operator, values []string) *pb.Filters {
	return &pb.Filters{Operator: op, Target: target(prop), TestValue: &pb.Filters_ValueTextArray{ValueTextArray: &pb.TextArray{Values: values}}}
}

// fIDs: the object's id is one of ids.
func fIDs(ids []string) *pb.Filters {
	return fTexts("_id", pb.Filters_OPERATOR_CONTAINS_ANY, ids)
}

func fAnd(ops ...*pb.Filters) *pb.Filters {
	switch len(ops) {
	case 0:
		return nil
	case 1:
		return ops[0]
	}
	return &pb.Filters{Operator: pb.Filters_OPERATOR_AND, Filters: ops}
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

package local

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/analysis"
	"github.com/blevesearch/bleve/v2/analysis/analyzer/custom"
	"github.com/blevesearch/bleve/v2/analysis/analyzer/keyword"
	"github.com/blevesearch/bleve/v2/analysis/lang/en"
	"github.com/blevesearch/bleve/v2/analysis/token/lowercase"
	"github.com/blevesearch/bleve/v2/analysis/token/porter"
	"github.com/blevesearch/bleve/v2/analysis/token/stop"
	"github.com/blevesearch/bleve/v2/analysis/tokenizer/unicode"
	"github.com/blevesearch/bleve/v2/analysis/tokenmap"
	"github.com/blevesearch/bleve/v2/mapping"
	"github.com/blevesearch/bleve/v2/registry"

	"github.com/ragmem/ragmem/index"
	"github.com/ragmem/ragmem/index/driver"
)

// The BM25 side: a bleve (scorch) index whose documents carry only what
// queries read. Nothing is stored in bleve (hits are resolved against the
// in-memory records) and no term vectors or doc values are kept.
//
// bleve is used for analysis, the inverted index and its persistence, but
// not for scoring: bleve's BM25 takes the square root of the term frequency,
// estimates the average document length from the number of distinct terms,
// multiplies by a query norm, and fixes k1 = 1.2, b = 0.75. ragmem scores
// BM25 itself (fulltext_score.go) the way Lucene does, from bleve's postings
// (term frequencies, and field lengths recovered from the norms) and
// collection statistics read from a length marker (see markerTerm).

const (
	fieldBody    = "body"
	fieldTitle   = "title"
	fieldContext = "context"
	fieldMemory  = "memory" // the body of memories: their own length statistics and parameters
	fieldSource  = "source"
	fieldDocType = "docType"
	seqKey       = "ragmem.seq"      // bleve internal key: last applied journal sequence
	analysisKey  = "ragmem.analysis" // bleve internal key: FullTextOptions.analysisVersion of the index

	analyzerIndex = "ragmem_index" // analysis of documents: the query chain plus the length marker
	analyzerQuery = "ragmem_query"

	// markerTerm is added to every analysed field once per distinct term
	// of its text (at least once). No tokenizer emits a space inside a
	// token, so no text can produce it. Its postings list every document
	// that has the field, with the number of distinct terms as the
	// frequency and the field length (the text's tokens plus the markers) in
	// the norm: that gives BM25 the document count, each document's length
	// and verbosity, and their totals, which bleve does not keep.
	markerTerm   = " "
	markerFilter = "ragmem_length_marker"
)

// Choices of FullTextOptions.Stemmer and StopWords.
const (
	StemPorter   = "porter"   // Porter (1980), as Lucene's PorterStemFilter
	StemSnowball = "snowball" // Snowball English (Porter2)
	StemPlural   = "plural"   // English plurals only
	StemNone     = "none"

	StopLucene  = "lucene"  // Lucene's 33 English stop words (EnglishAnalyzer, Anserini)
	StopEnglish = "english" // bleve's longer English list (about 170 words)
	StopNone    = "none"
)

// FullTextOptions configure the BM25 index of a local backend. A nil
// *FullTextOptions, and each zero field, means the default. The defaults
// were chosen by measurement on SciFact's training queries and checked on
// Cranfield (docs/evaluation.md): Lucene's BM25 parameters, Porter stemming,
// a longer English stop list than Lucene's, and a light title boost.
// {K1: 0.9, B: 0.4, StopWords: "lucene", TitleWeight: -1} reproduces
// Anserini's BM25 baseline.
//
// Stemmer, StopWords and TitleWeight > 0 change what is indexed: opening a
// store whose full-text index was built with other values rebuilds it from
// the records (the vectors and records are untouched). The other fields
// apply at query time only.
type FullTextOptions struct {
	// K1 is BM25's term-frequency saturation. Default 1.2.
	K1 float64
	// B is BM25's document-length normalisation of the text and title, in
	// [0, 1]. Default 0: automatic, from the store's own statistics (the
	// verbosity-aware normalisation of BM25-VA, see fulltext_score.go: no
	// constant is tuned to a collection, and it stays current as the store
	// changes). A value in (0, 1] is Lucene's b, the same for every
	// document; a negative value means no length normalisation.
	B float64
	// Stemmer is "porter", "snowball", "plural" or "none". Default "porter".
	Stemmer string
	// StopWords is "lucene" (33 words), "english" (about 170) or "none".
	// Default "english".
	StopWords string
	// TitleWeight, when positive, indexes each record's title and headings
	// in a field of their own as well (they are always part of the text
	// too) and adds TitleWeight times that field's BM25 score. Default 0.3;
	// a negative value searches the title only as part of the text (one
	// field, as Lucene baselines do).
	TitleWeight float64
	// MemoryB is B for memories (records of DocMemory). Memories are
	// indexed in a field of their own, so that their statistics are not
	// those of knowledge chunks (a conversation turn is a few dozen words, a
	// chunk a few hundred). Default 0: automatic, as B; a value in (0, 1]
	// is Lucene's b; a negative value means no length normalisation.
	MemoryB float64
	// ContextWeight, when positive, indexes each record's context
	// (Attrs[index.AttrContext]: for a conversation memory, the turns
	// around it) in a field of its own, never in the text, and adds
	// ContextWeight times that field's BM25 score, without length
	// normalisation (a context's length is that of its neighbours, clipped
	// by the writer: it says nothing of the memory's). Default
	// DefaultContextWeight; a negative value turns it off (the context is
	// then not indexed).
	ContextWeight float64
	// Proximity, when positive, adds Proximity times a proximity score to
	// each of the best ProximityDepth matches: for each pair of query terms
	// adjacent in the query, how often they occur within a small window of
	// each other in the chunk (BM25-saturated, weighted by the smaller idf).
	// Default 0, off.
	Proximity float64
	// ProximityDepth is how many of the best matches are rescored for
	// proximity. Default 100.
	ProximityDepth int
	// Feedback, when non-nil, expands each query by RM3 pseudo-relevance
	// feedback before the final ranking. Default nil, off.
	Feedback *Feedback
}

// Feedback configures RM3 pseudo-relevance feedback: the query is run once,
// a relevance model is estimated from the terms of its best Docs matches
// (each weighted by its score), its Terms heaviest terms are mixed with the
// query's own with weight OriginalWeight, and the expanded, weighted query
// is run again. Zero fields take the defaults (Anserini's).
type Feedback struct {
	// Docs is the number of feedback documents. Default 10.
	Docs int
	// Terms is the number of expansion terms. Default 10.
	Terms int
	// OriginalWeight is the weight of the original query in (0, 1].
	// Default 0.5.
	OriginalWeight float64
}

// Defaults of FullTextOptions.
const (
	DefaultK1             = 1.2
	DefaultStopWords      = StopEnglish
	DefaultStemmer        = StemPorter
	DefaultTitleWeight    = 0.3
	DefaultContextWeight  = 0.7
	DefaultProximityDepth = 100
)

// fullText is the resolved configuration and the query-time state of the
// BM25 side. It is safe for concurrent use.
type fullText struct {
	k1, b       float64
	mb          float64 // b of memories
	stemmer     string
	stop        string
	titleWeight float64
	ctxWeight   float64
	proximity   float64
	proxDepth   int
	fb          *Feedback

	statsMu  sync.Mutex
	stats    collectionStats    // cached for one index snapshot
	segStats map[segKey]segStat // per segment of that snapshot
}

func newFullText(o *FullTextOptions) *fullText {
	var opt FullTextOptions
	if o != nil {
		opt = *o
	}
	ft := &fullText{
		k1: opt.K1, b: opt.B, mb: opt.MemoryB, stemmer: strings.ToLower(opt.Stemmer), stop: strings.ToLower(opt.StopWords),
		titleWeight: opt.TitleWeight, ctxWeight: opt.ContextWeight, proximity: opt.Proximity, proxDepth: opt.ProximityDepth,
	}
	if !(ft.k1 > 0) || math.IsInf(ft.k1, 0) {
		ft.k1 = DefaultK1
	}
	ft.b = clampB(ft.b)
	ft.mb = clampB(ft.mb)
	switch ft.stemmer {
	case StemPorter, StemSnowball, StemPlural, StemNone:
	default:
		ft.stemmer = DefaultStemmer
	}
	switch ft.stop {
	case StopLucene, StopEnglish, StopNone:
	default:
		ft.stop = DefaultStopWords
	}
	switch {
	case ft.titleWeight == 0 || math.IsNaN(ft.titleWeight):
		ft.titleWeight = DefaultTitleWeight
	case ft.titleWeight < 0 || math.IsInf(ft.titleWeight, 0):
		ft.titleWeight = 0
	}
	switch {
	case ft.ctxWeight == 0 || math.IsNaN(ft.ctxWeight):
		ft.ctxWeight = DefaultContextWeight
	case ft.ctxWeight < 0 || math.IsInf(ft.ctxWeight, 0):
		ft.ctxWeight = 0
	}
	if !(ft.proximity > 0) || math.IsInf(ft.proximity, 0) {
		ft.proximity = 0
	}
	if ft.proxDepth <= 0 {
		ft.proxDepth = DefaultProximityDepth
	}
	if opt.Feedback != nil {
		f := *opt.Feedback
		if f.Docs <= 0 {
			f.Docs = 10
		}
		if f.Terms <= 0 {
			f.Terms = 10
		}
		if !(f.OriginalWeight > 0 && f.OriginalWeight <= 1) {
			f.OriginalWeight = 0.5
		}
		ft.fb = &f
	}
	return ft
}

// bAuto is the resolved b of a field normalised from the store's own
// statistics (BM25-VA).
const bAuto = -1

// clampB resolves a B option: 0 (or NaN) is automatic (bAuto), a negative
// value 0, and values above 1 are 1.
func clampB(b float64) float64 {
	switch {
	case b == 0 || math.IsNaN(b):
		return bAuto
	case b < 0:
		return 0
	case b > 1:
		return 1
	}
	return b
}

// analysisVersion names everything that decides what the index holds. A
// store whose index was built under another name is rebuilt on open.
func (ft *fullText) analysisVersion() string {
	v := "bm25-v2/unicode/possessive/lower/stop=" + ft.stop + "/stem=" + ft.stemmer + "/memory"
	if ft.titleWeight > 0 {
		v += "/title"
	}
	if ft.ctxWeight > 0 {
		v += "/context"
	}
	return v
}

// String describes the whole configuration (for reports).
func (ft *fullText) String() string {
	s := fmt.Sprintf("%s k1=%g b=%s memory.b=%s", ft.analysisVersion(), ft.k1, bString(ft.b), bString(ft.mb))
	if ft.titleWeight > 0 {
		s += fmt.Sprintf(" title=%g", ft.titleWeight)
	}
	if ft.ctxWeight > 0 {
		s += fmt.Sprintf(" context=%g", ft.ctxWeight)
	}
	if ft.proximity > 0 {
		s += fmt.Sprintf(" proximity=%g@%d", ft.proximity, ft.proxDepth)
	}
	if ft.fb != nil {
		s += fmt.Sprintf(" rm3(docs=%d,terms=%d,orig=%g)", ft.fb.Docs, ft.fb.Terms, ft.fb.OriginalWeight)
	}
	return s
}

// bString shows a resolved b: "auto" for bAuto.
func bString(b float64) string {
	if b == bAuto {
		return "auto"
	}
	return strconv.FormatFloat(b, 'g', -1, 64)
}

// FullTextConfig describes the BM25 configuration of the backend, e.g.
// "bm25-v1/unicode/possessive/lower/stop=lucene/stem=porter k1=0.9 b=0.4".
func (b *Backend) FullTextConfig() string { return b.ft.String() }

// luceneStopWords is Lucene's EnglishAnalyzer.ENGLISH_STOP_WORDS_SET, the
// stop list of Anserini's default English analyzer.
var luceneStopWords = []string{
	"a", "an", "and", "are", "as", "at", "be", "but", "by", "for", "if", "in", "into", "is", "it",
	"no", "not", "of", "on", "or", "such", "that", "the", "their", "then", "there", "these",
	"they", "this", "to", "was", "will", "with",
}

// filters returns the token filters of the query analysis chain.
func (ft *fullText) filters(im *mapping.IndexMappingImpl) ([]string, error) {
	fs := []string{en.PossessiveName, lowercase.Name}
	switch ft.stop {
	case StopLucene:
		toks := make([]any, len(luceneStopWords))
		for i, w := range luceneStopWords {
			toks[i] = w
		}
		if err := im.AddCustomTokenMap("ragmem_stop_lucene", map[string]any{"type": tokenmap.Name, "tokens": toks}); err != nil {
			return nil, err
		}
		if err := im.AddCustomTokenFilter("ragmem_stop", map[string]any{"type": stop.Name, "stop_token_map": "ragmem_stop_lucene"}); err != nil {
			return nil, err
		}
		fs = append(fs, "ragmem_stop")
	case StopEnglish:
		fs = append(fs, en.StopName)
	}
	switch ft.stemmer {
	case StemPorter:
		fs = append(fs, porter.Name)
	case StemSnowball:
		fs = append(fs, en.SnowballStemmerName)
	case StemPlural:
		fs = append(fs, en.PluralStemmerName)
	}
	return fs, nil
}

func (ft *fullText) mapping() (mapping.IndexMapping, error) {
	im := bleve.NewIndexMapping()
	im.StoreDynamic = false
	im.IndexDynamic = false
	im.DocValuesDynamic = false
	fs, err := ft.filters(im)
	if err != nil {
		return nil, err
	}
	if err := im.AddCustomAnalyzer(analyzerQuery, map[string]any{
		"type": custom.Name, "tokenizer": unicode.Name, "token_filters": toAny(fs),
	}); err != nil {
		return nil, err
	}
	if err := im.AddCustomAnalyzer(analyzerIndex, map[string]any{
		"type": custom.Name, "tokenizer": unicode.Name, "token_filters": toAny(append(fs, markerFilter)),
	}); err != nil {
		return nil, err
	}
	im.DefaultAnalyzer = analyzerIndex

	text := func() *mapping.FieldMapping {
		f := bleve.NewTextFieldMapping()
		f.Analyzer = analyzerIndex
		f.Store = false
		f.IncludeTermVectors = false
		f.IncludeInAll = false
		f.DocValues = false
		return f
	}
	kw := keywordField()

	doc := bleve.NewDocumentStaticMapping()
	doc.AddFieldMappingsAt(fieldBody, text())
	doc.AddFieldMappingsAt(fieldMemory, text())
	if ft.titleWeight > 0 {
		doc.AddFieldMappingsAt(fieldTitle, text())
	}
	if ft.ctxWeight > 0 {
		doc.AddFieldMappingsAt(fieldContext, text())
	}
	doc.AddFieldMappingsAt(fieldSource, kw)
	doc.AddFieldMappingsAt(fieldDocType, kw)
	im.DefaultMapping = doc
	return im, im.Validate()
}

func toAny(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

// lengthMarker appends markerTerm to a token stream once per distinct term
// of the stream (at least once); see markerTerm.
type lengthMarker struct{}

func (lengthMarker) Filter(in analysis.TokenStream) analysis.TokenStream {
	pos, end := 1, 0
	if n := len(in); n > 0 {
		pos, end = in[n-1].Position+1, in[n-1].End
	}
	distinct := make(map[string]struct{}, len(in))
	for _, t := range in {
		distinct[string(t.Term)] = struct{}{}
	}
	// One token, repeated: its frequency is all the index keeps of it.
	m := &analysis.Token{Term: []byte(markerTerm), Position: pos, Start: end, End: end, Type: analysis.Shingle}
	for range max(1, len(distinct)) {
		in = append(in, m)
	}
	return in
}

func init() {
	err := registry.RegisterTokenFilter(markerFilter, func(map[string]any, *registry.Cache) (analysis.TokenFilter, error) {
		return lengthMarker{}, nil
	})
	if err != nil {
		panic(err)
	}
}

// bleveDoc is what a record looks like to bleve: the title and heading path
// are searched together with the text (one field, as Lucene baselines do:
// the body, or for a memory the memory field), and on their own in the
// title field when the mapping has one; a memory's context is in a field of
// its own, only when it has one (so that the field's statistics are those
// of records with a context). Other records' "context" attribute is just an
// attribute.
func bleveDoc(r *index.Record) map[string]any {
	body := driver.SearchText(r)
	d := map[string]any{
		textField(r): body,
		fieldTitle:   body[:len(body)-len(r.Content)],
		fieldSource:  r.SourceURL,
		fieldDocType: r.DocType,
	}
	if c := r.Attrs[index.AttrContext]; r.DocType == index.DocMemory && strings.TrimSpace(c) != "" {
		d[fieldContext] = c
	}
	return d
}

// textField is the field that holds r's text: memories have their own.
func textField(r *index.Record) string {
	if r.DocType == index.DocMemory {
		return fieldMemory
	}
	return fieldBody
}

// analysisStale reports why an existing index must be rebuilt for ft: it
// was built with another analysis (or before ragmem recorded one), or its
// mapping lacks what ft queries. "" means it is current.
func analysisStale(bi bleve.Index, ft *fullText) string {
	v, err := bi.GetInternal([]byte(analysisKey))
	if err != nil {
		return fmt.Sprintf("its analysis version is unreadable (%v)", err)
	}
	if string(v) != ft.analysisVersion() {
		if len(v) == 0 {
			return "it was built before ragmem recorded its analysis"
		}
		return fmt.Sprintf("it was built with analysis %q, this version uses %q", v, ft.analysisVersion())
	}
	if bi.Mapping().AnalyzerNamed(analyzerQuery) == nil {
		return "its mapping has no query analyzer"
	}
	return ""
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

// ErrBadFullTextSpec is returned by ParseFullTextOptions.
var ErrBadFullTextSpec = errors.New("index: bad full-text options")

// parseB reads a b of ParseFullTextOptions: "auto" (0: the store's own
// normalisation), or a number in [0, 1] (0 asked explicitly: none, -1).
func parseB(k, v string) (float64, error) {
	if strings.EqualFold(v, "auto") {
		return 0, nil
	}
	x, err := strconv.ParseFloat(v, 64)
	if err != nil || math.IsNaN(x) || x < 0 || x > 1 {
		return 0, fmt.Errorf("%w: %s=%q: want auto or a number from 0 to 1", ErrBadFullTextSpec, k, clipSpec(v))
	}
	if x == 0 {
		return -1, nil
	}
	return x, nil
}

// ParseFullTextOptions parses a comma-separated list of key=value settings
// into FullTextOptions ("" gives nil, all defaults):
//
//	k1=X             FullTextOptions.K1
//	b=X|auto         FullTextOptions.B
//	stem=NAME        porter, snowball, plural or none
//	stop=NAME        lucene, english or none
//	title=W          FullTextOptions.TitleWeight
//	mb=X|auto        FullTextOptions.MemoryB
//	context=W        FullTextOptions.ContextWeight (0: off)
//	prox=W[@DEPTH]   FullTextOptions.Proximity (and ProximityDepth)
//	rm3=1|0|D/T/W    Feedback: on with defaults, off, or Docs/Terms/OriginalWeight
func ParseFullTextOptions(spec string) (*FullTextOptions, error) {
	spec = strings.TrimSpace(spec)
	if spec == "" {
		return nil, nil
	}
	o := &FullTextOptions{}
	seen := map[string]bool{}
	for _, kv := range strings.Split(spec, ",") {
		k, v, ok := strings.Cut(kv, "=")
		k, v = strings.ToLower(strings.TrimSpace(k)), strings.TrimSpace(v)
		if !ok || k == "" || v == "" {
			return nil, fmt.Errorf("%w: %q is not key=value", ErrBadFullTextSpec, clipSpec(kv))
		}
		if seen[k] {
			return nil, fmt.Errorf("%w: %q given twice", ErrBadFullTextSpec, clipSpec(k))
		}
		seen[k] = true
		if err := o.set(k, v); err != nil {
			return nil, err
		}
	}
	return o, nil
}

// set applies one setting of ParseFullTextOptions, key k (lower case) to
// value v.
func (o *FullTextOptions) set(k, v string) error {
	var err error
	switch k {
	case "k1":
		o.K1, err = specNum(k, v, 1e-6, 1000)
	case "b":
		o.B, err = parseB(k, v)
	case "mb", "memory.b":
		o.MemoryB, err = parseB(k, v)
	case "stem", "stemmer":
		o.Stemmer, err = specName("stem", v, StemPorter, StemSnowball, StemPlural, StemNone)
	case "stop", "stopwords":
		o.StopWords, err = specName("stop", v, StopLucene, StopEnglish, StopNone)
	case "title":
		o.TitleWeight, err = specWeight(k, v) // title=0: no title field
	case "context", "ctx":
		o.ContextWeight, err = specWeight(k, v) // context=0: not indexed
	case "prox", "proximity":
		w, d, hasDepth := strings.Cut(v, "@")
		if o.Proximity, err = specNum(k, w, 0, 1000); err == nil && hasDepth {
			var n float64
			n, err = specNum(k, d, 1, 100000)
			o.ProximityDepth = int(n)
		}
	case "rm3":
		o.Feedback, err = parseRM3(k, v)
	default:
		err = fmt.Errorf("%w: unknown key %q (want k1, b, mb, stem, stop, title, context, prox or rm3)", ErrBadFullTextSpec, clipSpec(k))
	}
	return err
}

// specNum parses the value s of key k as a number from lo to hi.
func specNum(k, s string, lo, hi float64) (float64, error) {
	x, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(x) || x < lo || x > hi {
		return 0, fmt.Errorf("%w: %s=%q: want a number from %g to %g", ErrBadFullTextSpec, k, clipSpec(s), lo, hi)
	}
	return x, nil
}

// specWeight parses a field weight from 0 to 1000, where 0 (the field off)
// is returned as -1, since 0 in FullTextOptions means the default.
func specWeight(k, s string) (float64, error) {
	x, err := specNum(k, s, 0, 1000)
	if err == nil && x == 0 {
		return -1, nil
	}
	return x, err
}

// specName returns v in lower case when it is one of names (given in lower
// case), and an error naming them otherwise.
func specName(k, v string, names ...string) (string, error) {
	if l := strings.ToLower(v); slices.Contains(names, l) {
		return l, nil
	}
	want := strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
	return "", fmt.Errorf("%w: %s=%q: want %s", ErrBadFullTextSpec, k, clipSpec(v), want)
}

// parseRM3 parses rm3=1|0|DOCS/TERMS/WEIGHT: feedback on with defaults,
// off (nil), or with the given settings.
func parseRM3(k, v string) (*Feedback, error) {
	switch v {
	case "0", "false", "off":
		return nil, nil
	case "1", "true", "on":
		return &Feedback{}, nil
	}
	parts := strings.Split(v, "/")
	if len(parts) != 3 {
		return nil, fmt.Errorf("%w: rm3=%q: want 1, 0 or DOCS/TERMS/WEIGHT", ErrBadFullTextSpec, clipSpec(v))
	}
	d, err := specNum(k, parts[0], 1, 1000)
	if err != nil {
		return nil, err
	}
	t, err := specNum(k, parts[1], 1, 1000)
	if err != nil {
		return nil, err
	}
	w, err := specNum(k, parts[2], 1e-6, 1)
	if err != nil {
		return nil, err
	}
	return &Feedback{Docs: int(d), Terms: int(t), OriginalWeight: w}, nil
}

func clipSpec(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if len(s) <= 40 {
		return s
	}
	cut := 40
	for cut > 0 && s[cut]&0xC0 == 0x80 {
		cut--
	}
	return s[:cut] + "…"
}

// keywordField is the mapping of a field indexed whole (the keyword
// analyzer), neither stored nor in the composite field, without term
// vectors or doc values: what the full-text index keeps of a record's
// exact-match fields.
func keywordField() *mapping.FieldMapping {
	f := bleve.NewTextFieldMapping()
	f.Analyzer = keyword.Name
	f.Store = false
	f.IncludeTermVectors = false
	f.IncludeInAll = false
	f.DocValues = false
	return f
}

package weaviate

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	pb "github.com/weaviate/weaviate/grpc/generated/protocol/v1"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/ragmem/ragmem/index"
	"github.com/ragmem/ragmem/index/driver"
)

// maxK bounds the results of one query: Weaviate refuses limits above its
// QUERY_MAXIMUM_RESULTS (10,000 by default).
const maxK = 10000

// page is the number of objects per listing request.
const page = 1000

// recordSearch starts a Search of the record collection returning limit
// objects with the metadata md and the properties props (nil: the record's).
func (b *Backend) recordSearch(limit int, md *pb.MetadataRequest, props *pb.PropertiesRequest) *pb.SearchRequest {
	if props == nil {
		props = &pb.PropertiesRequest{NonRefProperties: recordFields}
	}
	req := &pb.SearchRequest{Collection: b.class, Limit: uint32(limit), Metadata: md, Properties: props}
	if b.replicated {
		req.ConsistencyLevel = &b.cl
	}
	return req
}

// results runs a Search and decodes its records.
func (b *Backend) results(ctx context.Context, op string, req *pb.SearchRequest) ([]result, error) {
	rs, err := b.search(ctx, op, req)
	if err != nil {
		return nil, err
	}
	out := make([]result, len(rs))
	for i, r := range rs {
		if out[i], err = decode(r); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func toRecords(rs []result) ([]index.Record, error) {
	out := make([]index.Record, 0, len(rs))
	for i := range rs {
		r, err := rs[i].record()
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}

// Get implements driver.Backend.
func (b *Backend) Get(ctx context.Context, ids []string) ([]index.Record, error) {
	if err := b.usable(); err != nil {
		return nil, err
	}
	found := map[string]index.Record{}
	for lo := 0; lo < len(ids); lo += page {
		chunk := ids[lo:min(lo+page, len(ids))]
		oids := make([]string, len(chunk))
		for i, id := range chunk {
			oids[i] = b.objectID(id)
		}
		req := b.recordSearch(len(oids), &pb.MetadataRequest{Uuid: true, Vector: true}, nil)
		req.Filters = fIDs(oids)
		rs, err := b.results(ctx, "get records", req)
		if err != nil {
			return nil, err
		}
		recs, err := toRecords(rs)
		if err != nil {
			return nil, err
		}
		for _, r := range recs {
			found[r.ID] = r
		}
	}
	out := make([]index.Record, 0, len(found))
	for _, id := range ids {
		if r, ok := found[id]; ok {
			out = append(out, r)
			delete(found, id) // an id asked twice is returned once
		}
	}
	return out, nil
}

// list returns every record matching f, by offset pages, sorted by the
// property sortBy when it is not "".
func (b *Backend) list(ctx context.Context, op string, f *pb.Filters, vectors bool, sortBy string) ([]index.Record, error) {
	off := 0
	return b.pages(ctx, op, vectors, func(req *pb.SearchRequest, prev []result) {
		if prev != nil {
			off += page
		}
		req.Offset, req.Filters = uint32(off), f
		if sortBy != "" {
			req.SortBy = []*pb.SortBy{{Ascending: true, Path: []string{sortBy}}}
		}
	})
}

// scan returns every record of the collection with the cursor API, which
// has no result limit.
func (b *Backend) scan(ctx context.Context, vectors bool) ([]index.Record, error) {
	return b.pages(ctx, "list records", vectors, func(req *pb.SearchRequest, prev []result) {
		if len(prev) > 0 {
			req.After = prev[len(prev)-1].id
		}
	})
}

// pages reads records a page at a time until a page comes back short. Each
// page's request is set by next from the results of the page before (nil
// for the first).
func (b *Backend) pages(ctx context.Context, op string, vectors bool, next func(req *pb.SearchRequest, prev []result)) ([]index.Record, error) {
	var out []index.Record
	var prev []result
	for {
		req := b.recordSearch(page, &pb.MetadataRequest{Uuid: true, Vector: vectors}, nil)
		next(req, prev)
		rs, err := b.results(ctx, op, req)
		if err != nil {
			return nil, err
		}
		recs, err := toRecords(rs)
		if err != nil {
			return nil, err
		}
		out = append(out, recs...)
		if len(rs) < page {
			return out, nil
		}
		prev = rs
	}
}

// Source implements driver.Backend.
func (b *Backend) Source(ctx context.Context, sourceURL string) ([]index.Record, error) {
	if err := b.usable(); err != nil {
		return nil, err
	}
	rs, err := b.list(ctx, "read source", fEq(pSourceKey, key(sourceURL)), false, pPosition)
	if err != nil {
		return nil, err
	}
	sortRecords(rs)
	return rs, nil
}

func sortRecords(rs []index.Record) {
	sort.SliceStable(rs, func(i, j int) bool {
		a, c := &rs[i], &rs[j]
		if a.SourceURL != c.SourceURL {
			return a.SourceURL < c.SourceURL
		}
		if a.Position != c.Position {
			return a.Position < c.Position
		}
		return a.ID < c.ID
	})
}

// Records implements driver.Backend. Without a filter it walks the whole
// collection with the cursor API; a filtered listing is bounded by the
// server's QUERY_MAXIMUM_RESULTS (10,000 by default) and says so when it
// reaches it.
func (b *Backend) Records(ctx context.Context, f index.Filter) ([]index.Record, error) {
	if err := b.usable(); err != nil {
		return nil, err
	}
	rs, err := b.records(ctx, f, true)
	if err != nil {
		return nil, err
	}
	sortRecords(rs)
	return rs, nil
}

// records returns the records matching f, with their vectors or not.
func (b *Backend) records(ctx context.Context, f index.Filter, vectors bool) ([]index.Record, error) {
	var rs []index.Record
	var err error
	w, exact := where(f)
	if w == nil {
		rs, err = b.scan(ctx, vectors)
	} else {
		rs, err = b.list(ctx, "list records", w, vectors, "")
	}
	if err != nil || exact {
		return rs, err
	}
	kept := rs[:0]
	for i := range rs {
		if f.Match(&rs[i]) {
			kept = append(kept, rs[i])
		}
	}
	return kept, nil
}

// searchFiltered runs the query req(limit) under f and returns at most k of
// its results that match f, in the order Weaviate gave them. The part of f
// that Weaviate evaluates goes into the query's filter; when that is not
// all of f (see where), the query asks for more and the rest is checked
// here, until k results match or they run out.
func (b *Backend) searchFiltered(ctx context.Context, op string, f index.Filter, k int, req func(limit int) *pb.SearchRequest) ([]result, error) {
	w, exact := where(f)
	limit := k
	if !exact {
		limit = min(maxK, 4*k)
	}
	for {
		q := req(limit)
		q.Filters = w
		rs, err := b.results(ctx, op, q)
		if err != nil || exact {
			return rs, err
		}
		var kept []result
		for i := range rs {
			r, err := rs[i].record()
			if err != nil {
				return nil, err
			}
			if f.Match(&r) {
				if kept = append(kept, rs[i]); len(kept) == k {
					break
				}
			}
		}
		if len(kept) >= k || len(rs) < limit || limit >= maxK {
			return kept, nil
		}
		limit = min(maxK, 4*limit)
	}
}

// maxGroups bounds the sources one aggregation returns.
const maxGroups = 1 << 30

// Sources implements driver.Backend with one server-side aggregation
// grouped by source URL.
func (b *Backend) Sources(ctx context.Context, f index.Filter, offset, limit int) ([]index.SourceInfo, int, error) {
	if err := b.usable(); err != nil {
		return nil, 0, err
	}
	w, exact := where(f)
	if !exact {
		return b.sourcesOf(ctx, f, offset, limit)
	}
	groups := uint32(maxGroups)
	top := uint32(1)
	topText := func(prop string) *pb.AggregateRequest_Aggregation {
		return &pb.AggregateRequest_Aggregation{Property: prop, Aggregation: &pb.AggregateRequest_Aggregation_Text_{
			Text: &pb.AggregateRequest_Aggregation_Text{TopOccurences: true, TopOccurencesLimit: &top}}}
	}
	reply, err := b.aggregate(ctx, "list sources", &pb.AggregateRequest{
		Collection:   b.class,
		ObjectsCount: true,
		GroupBy:      &pb.AggregateRequest_GroupBy{Collection: b.class, Property: pSourceURL},
		Limit:        &groups,
		Filters:      w,
		Aggregations: []*pb.AggregateRequest_Aggregation{
			{Property: pTokens, Aggregation: &pb.AggregateRequest_Aggregation_Int{Int: &pb.AggregateRequest_Aggregation_Integer{Sum: true}}},
			{Property: pCreatedAt, Aggregation: &pb.AggregateRequest_Aggregation_Date_{Date: &pb.AggregateRequest_Aggregation_Date{Minimum: true}}},
			topText(pTitle), topText(pContentHash), topText(pDocType),
		},
	})
	if err != nil {
		return nil, 0, err
	}
	gs := reply.GetGroupedResults().GetGroups()
	all := make([]index.SourceInfo, 0, len(gs))
	for _, g := range gs {
		if g.GetObjectsCount() == 0 {
			continue
		}
		si := index.SourceInfo{SourceURL: g.GetGroupedBy().GetText(), Chunks: int(g.GetObjectsCount())}
		for _, a := range g.GetAggregations().GetAggregations() {
			switch a.GetProperty() {
			case pTokens:
				si.Tokens = int(a.GetInt().GetSum())
			case pCreatedAt:
				if t, err := time.Parse(time.RFC3339Nano, a.GetDate().GetMinimum()); err == nil {
					si.CreatedAt = t.UTC()
				}
			case pTitle:
				si.Title = topValue(a)
			case pContentHash:
				si.ContentHash = topValue(a)
			case pDocType:
				si.DocType = topValue(a)
			}
		}
		all = append(all, si)
	}
	return pageSources(all, offset, limit)
}

func topValue(a *pb.AggregateReply_Aggregations_Aggregation) string {
	if items := a.GetText().GetTopOccurences().GetItems(); len(items) > 0 {
		return items[0].GetValue()
	}
	return ""
}

func pageSources(all []index.SourceInfo, offset, limit int) ([]index.SourceInfo, int, error) {
	sort.Slice(all, func(i, j int) bool { return all[i].SourceURL < all[j].SourceURL })
	total := len(all)
	offset = max(0, min(offset, total))
	end := total
	if limit > 0 && offset+limit < total {
		end = offset + limit
	}
	return all[offset:end], total, nil
}

// sourcesOf lists the sources of the records matching f, summarised here
// rather than by a server-side aggregation: for filters that Weaviate cannot
// evaluate whole.
func (b *Backend) sourcesOf(ctx context.Context, f index.Filter, offset, limit int) ([]index.SourceInfo, int, error) {
	rs, err := b.records(ctx, f, false)
	if err != nil {
		return nil, 0, err
	}
	by := map[string]int{}
	var all []index.SourceInfo
	for i := range rs {
		r := &rs[i]
		j, ok := by[r.SourceURL]
		if !ok {
			j = len(all)
			by[r.SourceURL] = j
			all = append(all, index.SourceInfo{SourceURL: r.SourceURL, Title: r.Title, DocType: r.DocType, ContentHash: r.ContentHash, CreatedAt: r.CreatedAt})
		}
		si := &all[j]
		si.Chunks++
		si.Tokens += r.Tokens
		if r.CreatedAt.Before(si.CreatedAt) {
			si.CreatedAt = r.CreatedAt
		}
	}
	return pageSources(all, offset, limit)
}

func clampK(k int) int { return max(0, min(k, maxK)) }

// SearchText implements driver.Backend: Weaviate's BM25 over the analysed
// terms of each record.
func (b *Backend) SearchText(ctx context.Context, query string, k int, f index.Filter) ([]driver.Hit, error) {
	if err := b.usable(); err != nil {
		return nil, err
	}
	q := terms(query)
	if k = clampK(k); q == "" || k == 0 {
		return nil, nil
	}
	rs, err := b.searchFiltered(ctx, "full-text search", f, k, func(limit int) *pb.SearchRequest {
		req := b.recordSearch(limit, &pb.MetadataRequest{Uuid: true, Score: true}, nil)
		req.Bm25Search = &pb.BM25{Query: q, Properties: []string{pTerms}}
		return req
	})
	if err != nil {
		return nil, err
	}
	return toHits(rs, func(r *result) float64 { return r.score })
}

// toHits turns results into hits scored by score, best first.
func toHits(rs []result, score func(*result) float64) ([]driver.Hit, error) {
	hits := make([]driver.Hit, 0, len(rs))
	for i := range rs {
		r, err := rs[i].record()
		if err != nil {
			return nil, err
		}
		hits = append(hits, driver.Hit{Record: r, Score: score(&rs[i])})
	}
	sortHits(hits)
	return hits, nil
}

// sortHits orders by descending score, ties by id, so that equal scores
// always come in the same order.
func sortHits(hs []driver.Hit) {
	sort.SliceStable(hs, func(i, j int) bool {
		if hs[i].Score != hs[j].Score {
			return hs[i].Score > hs[j].Score
		}
		return hs[i].Record.ID < hs[j].Record.ID
	})
}

// checkQueryVector validates a query vector; zero reports a vector that
// can match nothing.
func (b *Backend) checkQueryVector(ctx context.Context, vec []float32) (zero bool, err error) {
	dim, err := b.dimension(ctx)
	if err != nil {
		return false, err
	}
	if err := checkVector(vec, dim); err != nil {
		return false, fmt.Errorf("%w: query has %s", driver.ErrInvalid, err)
	}
	return isZero(vec), nil
}

// SearchVector implements driver.Backend: Weaviate's vector index under
// cosine distance; the score is the cosine similarity, 1 − distance.
func (b *Backend) SearchVector(ctx context.Context, vec []float32, k int, f index.Filter) ([]driver.Hit, error) {
	if err := b.usable(); err != nil {
		return nil, err
	}
	zero, err := b.checkQueryVector(ctx, vec)
	if err != nil {
		return nil, err
	}
	if k = clampK(k); zero || k == 0 {
		return nil, nil
	}
	qv := queryVector(vec)
	rs, err := b.searchFiltered(ctx, "vector search", f, k, func(limit int) *pb.SearchRequest {
		req := b.recordSearch(limit, &pb.MetadataRequest{Uuid: true, Distance: true}, nil)
		req.NearVector = &pb.NearVector{Vectors: qv}
		return req
	})
	if err != nil {
		return nil, err
	}
	return toHits(rs, func(r *result) float64 {
		if r.hasDist {
			return 1 - r.dist
		}
		return 0
	})
}

// SearchHybrid implements driver.HybridSearcher with Weaviate's hybrid
// query: BM25 over the analysed terms and the vector index, fused on the
// server by ranked fusion (Σ weight/(60 + rank), rank 0-based) or relative
// score fusion. The explanation Weaviate returns is parsed into ranks
// (ranked fusion) or original scores (relative fusion). With q.Similarity
// the hits' vectors are fetched and each hit's cosine similarity computed.
func (b *Backend) SearchHybrid(ctx context.Context, q driver.HybridQuery) ([]driver.HybridHit, error) {
	if err := b.usable(); err != nil {
		return nil, err
	}
	zero, err := b.checkQueryVector(ctx, q.Vector)
	if err != nil {
		return nil, err
	}
	text := terms(q.Text)
	k := clampK(q.K)
	if k == 0 || zero && text == "" {
		return nil, nil
	}
	alpha := max(0, min(1, q.Alpha))
	fusion := pb.Hybrid_FUSION_TYPE_RANKED
	switch q.Fusion {
	case driver.FusionRanked, "":
	case driver.FusionRelative:
		fusion = pb.Hybrid_FUSION_TYPE_RELATIVE_SCORE
	default:
		return nil, fmt.Errorf("%w: unknown fusion %q", driver.ErrInvalid, q.Fusion)
	}
	h := &pb.Hybrid{Query: text, Alpha: float32(alpha), FusionType: fusion, Properties: []string{pTerms}}
	if !zero {
		h.Vectors = queryVector(q.Vector)
	} else {
		h.Alpha = 0 // no vector side: BM25 alone
	}
	// No vector distance threshold: Weaviate applies it to the BM25 side
	// too (a result must be that close), while ragmem's threshold lets a
	// result pass on either side. With q.Similarity the similarity is
	// computed here instead, from the hits' vectors.
	md := &pb.MetadataRequest{Uuid: true, Score: true, ExplainScore: true, Vector: q.Similarity && !zero}
	rs, err := b.searchFiltered(ctx, "hybrid search", q.Filter, k, func(limit int) *pb.SearchRequest {
		req := b.recordSearch(limit, md, nil)
		req.HybridSearch = h
		return req
	})
	if err != nil {
		return nil, err
	}
	weights := [2]float64{1 - alpha, alpha}
	out := make([]driver.HybridHit, 0, len(rs))
	for i := range rs {
		r, err := rs[i].record()
		if err != nil {
			return nil, err
		}
		hh := driver.HybridHit{Record: r, Score: rs[i].score, Explain: strings.TrimSpace(rs[i].explain)}
		explainHybrid(&hh, hh.Explain, weights)
		if q.Similarity && !zero {
			hh.VectorSimilarity = cosine(q.Vector, r.Vector)
		}
		hh.Record.Vector = nil
		out = append(out, hh)
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Score != out[j].Score {
			return out[i].Score > out[j].Score
		}
		return out[i].Record.ID < out[j].Record.ID
	})
	return out, nil
}

func cosine(a, b []float32) float64 {
	if len(a) != len(b) {
		return 0
	}
	var dot, na, nb float64
	for i := range a {
		dot += float64(a[i]) * float64(b[i])
		na += float64(a[i]) * float64(a[i])
		nb += float64(b[i]) * float64(b[i])
	}
	if na == 0 || nb == 0 {
		return 0
	}
	return dot / math.Sqrt(na*nb)
}

// The lines Weaviate 1.2x–1.35 writes into explainScore for hybrid queries.
var (
	rankedLine   = regexp.MustCompile(`\(Result Set (keyword|vector),[^)]*\) Document [0-9a-f-]+ contributed ([-+0-9.eE]+) to the score`)
	relativeLine = regexp.MustCompile(`\(Result Set (keyword|vector),[^)]*\) Document [0-9a-f-]+: original score ([-+0-9.eE]+), normalized score: ([-+0-9.eE]+)`)
)

// explainHybrid fills the rank and score fields of h from Weaviate's
// explanation. Ranked fusion contributes weight/(60 + i) for the 0-based
// position i, from which the 1-based rank i+1 follows; relative fusion
// reports each side's original score (BM25, or cosine similarity).
func explainHybrid(h *driver.HybridHit, explain string, weights [2]float64) {
	for _, m := range rankedLine.FindAllStringSubmatch(explain, -1) {
		side := 0
		if m[1] == "vector" {
			side = 1
		}
		c, err := strconv.ParseFloat(m[2], 64)
		rank := 0
		if err == nil && c > 0 {
			rank = int(weights[side]/c-60+0.5) + 1
		}
		if side == 0 {
			h.InBM25, h.BM25Rank = true, max(rank, 0)
		} else {
			h.InVector, h.VectorRank = true, max(rank, 0)
		}
	}
	for _, m := range relativeLine.FindAllStringSubmatch(explain, -1) {
		s, _ := strconv.ParseFloat(m[2], 64)
		if m[1] == "keyword" {
			h.InBM25, h.BM25Score = true, s
		} else {
			h.InVector, h.VectorSimilarity = true, s
		}
	}
}

// dimension returns the vector dimension of the store, 0 while it is empty.
func (b *Backend) dimension(ctx context.Context) (int, error) {
	if d := b.dim.Load(); d > 0 {
		return int(d), nil
	}
	rs, err := b.results(ctx, "read dimension", b.recordSearch(1, &pb.MetadataRequest{Uuid: true, Vector: true}, &pb.PropertiesRequest{}))
	if err != nil {
		return 0, err
	}
	if len(rs) == 0 || len(rs[0].vector) == 0 {
		return 0, nil
	}
	b.dim.Store(int64(len(rs[0].vector)))
	return len(rs[0].vector), nil
}

// Stats implements driver.Backend. Weaviate does not report the bytes a
// collection takes, so SizeBytes is 0.
func (b *Backend) Stats(ctx context.Context) (driver.Stats, error) {
	if err := b.usable(); err != nil {
		return driver.Stats{}, err
	}
	reply, err := b.aggregate(ctx, "count records", &pb.AggregateRequest{Collection: b.class, ObjectsCount: true})
	if err != nil {
		return driver.Stats{}, err
	}
	_, sources, err := b.Sources(ctx, index.Filter{}, 0, 1)
	if err != nil {
		return driver.Stats{}, err
	}
	st := driver.Stats{Sources: sources, Records: int(reply.GetSingleResult().GetObjectsCount())}
	if ns := b.lastSync.Load(); ns > 0 {
		st.LastSync = time.Unix(0, ns).UTC()
	}
	return st, nil
}

// metaObject is an object of the meta collection.
type metaObject struct {
	ID, Key, Value, Kind, Created string
}

// metaObjects lists the meta objects matching f.
func (b *Backend) metaObjects(ctx context.Context, op string, f *pb.Filters) ([]metaObject, error) {
	var out []metaObject
	for off := 0; ; off += page {
		req := &pb.SearchRequest{Collection: MetaClass, Limit: page, Offset: uint32(off), Filters: f,
			Metadata:   &pb.MetadataRequest{Uuid: true},
			Properties: &pb.PropertiesRequest{NonRefProperties: []string{mKey, mValue, mKind, mCreated}}}
		if b.metaReplicated {
			req.ConsistencyLevel = &b.cl
		}
		rs, err := b.results(ctx, op, req)
		if err != nil {
			return nil, err
		}
		for i := range rs {
			out = append(out, metaObject{ID: rs[i].id, Key: rs[i].text(mKey), Value: rs[i].text(mValue),
				Kind: rs[i].text(mKind), Created: rs[i].props[mCreated].GetDateValue()})
		}
		if len(rs) < page {
			return out, nil
		}
	}
}

const (
	kindMeta   = "meta"
	kindIntent = "intent"
)

// Meta implements driver.Backend. It reads the setting by its id (see
// metaByID).
func (b *Backend) Meta(ctx context.Context, k string) (string, bool, error) {
	if err := b.usable(); err != nil {
		return "", false, err
	}
	p, ok, err := b.metaByID(ctx, "read setting", b.metaID(k))
	if err != nil || !ok {
		return "", false, err
	}
	key, _ := p[mKey].(string)
	kind, _ := p[mKind].(string)
	if v, ok := p[mValue].(string); ok && key == k && kind == kindMeta {
		return v, true, nil
	}
	return "", false, nil
}

// metaByID reads the properties of the meta object id through REST, which
// Weaviate answers from as many replicas as the consistency level asks for
// (the newest copy wins). A filtered search reads one replica only, and
// missed a setting that replica had not received yet (one written while a
// node that has since died held it), and an intent just written at QUORUM
// to the two others (TestClusterSurvivesANodeKill).
func (b *Backend) metaByID(ctx context.Context, op, id string) (map[string]any, bool, error) {
	path := "/v1/objects/" + MetaClass + "/" + url.PathEscape(id)
	if b.metaReplicated {
		path += "?consistency_level=" + url.QueryEscape(b.clName)
	}
	var obj struct {
		Properties map[string]any `json:"properties"`
	}
	code, err := b.restJSON(ctx, op, http.MethodGet, path, nil, &obj, http.StatusNotFound)
	if err != nil || code == http.StatusNotFound {
		return nil, false, err
	}
	return obj.Properties, true, nil
}

// SetMeta implements driver.Backend.
func (b *Backend) SetMeta(ctx context.Context, k, v string) error {
	if err := b.usable(); err != nil {
		return err
	}
	return b.putMeta(ctx, b.metaID(k), kindMeta, k, v)
}

func (b *Backend) putMeta(ctx context.Context, id, kind, k, v string) error {
	obj := &pb.BatchObject{
		Uuid:       id,
		Collection: MetaClass,
		Properties: &pb.BatchObject_Properties{NonRefProperties: &structpb.Struct{Fields: map[string]*structpb.Value{
			mNamespace: structpb.NewStringValue(b.ns),
			mKind:      structpb.NewStringValue(kind),
			mKey:       structpb.NewStringValue(k),
			mValue:     structpb.NewStringValue(v),
			mCreated:   structpb.NewStringValue(b.now().UTC().Format(time.RFC3339Nano)),
		}}},
	}
	return b.putObjects(ctx, "write "+kind, []*pb.BatchObject{obj})
}

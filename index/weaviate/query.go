package weaviate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/go-openapi/strfmt"
	"github.com/weaviate/weaviate-go-client/v5/weaviate/fault"
	"github.com/weaviate/weaviate-go-client/v5/weaviate/filters"
	"github.com/weaviate/weaviate-go-client/v5/weaviate/graphql"
	"github.com/weaviate/weaviate/entities/models"

	"github.com/ragmem/ragmem/index/driver"
)

// maxK bounds the results of one query: Weaviate refuses limits above its
// QUERY_MAXIMUM_RESULTS (10,000 by default).
const maxK = 10000

// page is the number of objects per listing request.
const page = 1000

func strfmtUUID(s string) strfmt.UUID { return strfmt.UUID(s) }

// getRecords runs a GraphQL Get and decodes its records.
func (b *Backend) getRecords(ctx context.Context, op string, gb *graphql.GetBuilder) ([]gqlRecord, error) {
	resp, err := gb.Do(ctx)
	if err != nil {
		return nil, b.wrap(op, err)
	}
	if err := graphQLErr(op, resp.Errors); err != nil {
		return nil, err
	}
	raw, err := json.Marshal(resp.Data["Get"])
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrServer, op, err)
	}
	var byClass map[string][]gqlRecord
	if err := json.Unmarshal(raw, &byClass); err != nil {
		return nil, fmt.Errorf("%w: %s: unexpected answer: %w", ErrServer, op, err)
	}
	for _, v := range byClass {
		return v, nil
	}
	return nil, nil
}

func (b *Backend) get() *graphql.GetBuilder {
	gb := b.c.GraphQL().Get().WithClassName(b.class)
	if b.replicated {
		gb = gb.WithConsistencyLevel(b.cl)
	}
	return gb
}

func toRecords(gs []gqlRecord) ([]driver.Record, error) {
	out := make([]driver.Record, 0, len(gs))
	for i := range gs {
		r, err := gs[i].record()
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}

// Get implements driver.Backend.
func (b *Backend) Get(ctx context.Context, ids []string) ([]driver.Record, error) {
	if err := b.usable(); err != nil {
		return nil, err
	}
	found := map[string]driver.Record{}
	for lo := 0; lo < len(ids); lo += page {
		chunk := ids[lo:min(lo+page, len(ids))]
		oids := make([]string, len(chunk))
		for i, id := range chunk {
			oids[i] = b.objectID(id)
		}
		gs, err := b.getRecords(ctx, "get records", b.get().WithWhere(whereIDs(oids)).WithLimit(len(oids)).WithFields(recordFields("vector")...))
		if err != nil {
			return nil, err
		}
		rs, err := toRecords(gs)
		if err != nil {
			return nil, err
		}
		for _, r := range rs {
			found[r.ID] = r
		}
	}
	out := make([]driver.Record, 0, len(found))
	for _, id := range ids {
		if r, ok := found[id]; ok {
			out = append(out, r)
			delete(found, id) // an id asked twice is returned once
		}
	}
	return out, nil
}

// list returns every record matching w, by offset pages.
func (b *Backend) list(ctx context.Context, op string, w *filters.WhereBuilder, vectors bool, sortBy []graphql.Sort) ([]driver.Record, error) {
	var add []string
	if vectors {
		add = []string{"vector"}
	}
	var out []driver.Record
	for off := 0; ; off += page {
		gb := b.get().WithLimit(page).WithOffset(off).WithFields(recordFields(add...)...)
		if w != nil {
			gb = gb.WithWhere(w)
		}
		if len(sortBy) > 0 {
			gb = gb.WithSort(sortBy...)
		}
		gs, err := b.getRecords(ctx, op, gb)
		if err != nil {
			return nil, err
		}
		rs, err := toRecords(gs)
		if err != nil {
			return nil, err
		}
		out = append(out, rs...)
		if len(gs) < page {
			return out, nil
		}
	}
}

// scan returns every record of the collection with the cursor API, which
// has no result limit.
func (b *Backend) scan(ctx context.Context, vectors bool) ([]driver.Record, error) {
	var add []string
	if vectors {
		add = []string{"vector"}
	}
	var out []driver.Record
	after := ""
	for {
		gb := b.get().WithLimit(page).WithFields(recordFields(add...)...)
		if after != "" {
			gb = gb.WithAfter(after)
		}
		gs, err := b.getRecords(ctx, "list records", gb)
		if err != nil {
			return nil, err
		}
		rs, err := toRecords(gs)
		if err != nil {
			return nil, err
		}
		out = append(out, rs...)
		if len(gs) < page {
			return out, nil
		}
		after = gs[len(gs)-1].Additional.ID
	}
}

// Source implements driver.Backend.
func (b *Backend) Source(ctx context.Context, sourceURL string) ([]driver.Record, error) {
	if err := b.usable(); err != nil {
		return nil, err
	}
	rs, err := b.list(ctx, "read source", whereEq(pSourceKey, key(sourceURL)), false,
		[]graphql.Sort{{Path: []string{pPosition}, Order: graphql.Asc}})
	if err != nil {
		return nil, err
	}
	sortRecords(rs)
	return rs, nil
}

func sortRecords(rs []driver.Record) {
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
func (b *Backend) Records(ctx context.Context, f driver.Filter) ([]driver.Record, error) {
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
func (b *Backend) records(ctx context.Context, f driver.Filter, vectors bool) ([]driver.Record, error) {
	var rs []driver.Record
	var err error
	w, exact := where(f)
	if w == nil {
		rs, err = b.scan(ctx, vectors)
	} else {
		rs, err = b.list(ctx, "list records", w, vectors, nil)
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

// getFiltered runs the query gb(limit) under f and returns at most k of its
// records that match f, in the order Weaviate gave them. The part of f that
// Weaviate evaluates goes into the query's where clause; when that is not
// all of f (see where), the query asks for more and the rest is checked
// here, until k records match or the results run out.
func (b *Backend) getFiltered(ctx context.Context, op string, f driver.Filter, k int, gb func(limit int) *graphql.GetBuilder) ([]gqlRecord, error) {
	w, exact := where(f)
	limit := k
	if !exact {
		limit = min(maxK, 4*k)
	}
	for {
		q := gb(limit)
		if w != nil {
			q = q.WithWhere(w)
		}
		gs, err := b.getRecords(ctx, op, q)
		if err != nil || exact {
			return gs, err
		}
		var kept []gqlRecord
		for i := range gs {
			r, err := gs[i].record()
			if err != nil {
				return nil, err
			}
			if f.Match(&r) {
				if kept = append(kept, gs[i]); len(kept) == k {
					break
				}
			}
		}
		if len(kept) >= k || len(gs) < limit || limit >= maxK {
			return kept, nil
		}
		limit = min(maxK, 4*limit)
	}
}

// aggregateGroup is one group of the per-source aggregation.
type aggregateGroup struct {
	GroupedBy struct {
		Value string `json:"value"`
	} `json:"groupedBy"`
	Meta struct {
		Count int `json:"count"`
	} `json:"meta"`
	Tokens struct {
		Sum float64 `json:"sum"`
	} `json:"tokens"`
	CreatedAt struct {
		Minimum string `json:"minimum"`
	} `json:"createdAt"`
	Title       topOcc `json:"title"`
	ContentHash topOcc `json:"contentHash"`
	DocType     topOcc `json:"docType"`
}

type topOcc struct {
	TopOccurrences []struct {
		Value string `json:"value"`
	} `json:"topOccurrences"`
}

func (t topOcc) first() string {
	if len(t.TopOccurrences) > 0 {
		return t.TopOccurrences[0].Value
	}
	return ""
}

// maxGroups bounds the sources one aggregation returns.
const maxGroups = 1 << 30

// Sources implements driver.Backend with one server-side aggregation
// grouped by source URL.
func (b *Backend) Sources(ctx context.Context, f driver.Filter, offset, limit int) ([]driver.SourceInfo, int, error) {
	if err := b.usable(); err != nil {
		return nil, 0, err
	}
	w, exact := where(f)
	if !exact {
		return b.sourcesOf(ctx, f, offset, limit)
	}
	args := fmt.Sprintf(`groupBy: [%q], limit: %d`, pSourceURL, maxGroups)
	if w != nil {
		args += ", " + w.String()
	}
	q := fmt.Sprintf(`{Aggregate{%s(%s){groupedBy{value} meta{count} %s{sum} %s{minimum} %s{topOccurrences(limit: 1){value}} %s{topOccurrences(limit: 1){value}} %s{topOccurrences(limit: 1){value}}}}}`,
		b.class, args, pTokens, pCreatedAt, pTitle, pContentHash, pDocType)
	var groups []aggregateGroup
	if err := b.aggregate(ctx, "list sources", q, &groups); err != nil {
		return nil, 0, err
	}
	all := make([]driver.SourceInfo, 0, len(groups))
	for _, g := range groups {
		if g.Meta.Count == 0 {
			continue
		}
		si := driver.SourceInfo{
			SourceURL:   g.GroupedBy.Value,
			Title:       g.Title.first(),
			DocType:     g.DocType.first(),
			ContentHash: g.ContentHash.first(),
			Chunks:      g.Meta.Count,
			Tokens:      int(g.Tokens.Sum),
		}
		if g.CreatedAt.Minimum != "" {
			if t, err := time.Parse(time.RFC3339Nano, g.CreatedAt.Minimum); err == nil {
				si.CreatedAt = t.UTC()
			}
		}
		all = append(all, si)
	}
	return pageSources(all, offset, limit)
}

func pageSources(all []driver.SourceInfo, offset, limit int) ([]driver.SourceInfo, int, error) {
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
func (b *Backend) sourcesOf(ctx context.Context, f driver.Filter, offset, limit int) ([]driver.SourceInfo, int, error) {
	rs, err := b.records(ctx, f, false)
	if err != nil {
		return nil, 0, err
	}
	by := map[string]int{}
	var all []driver.SourceInfo
	for i := range rs {
		r := &rs[i]
		j, ok := by[r.SourceURL]
		if !ok {
			j = len(all)
			by[r.SourceURL] = j
			all = append(all, driver.SourceInfo{SourceURL: r.SourceURL, Title: r.Title, DocType: r.DocType, ContentHash: r.ContentHash, CreatedAt: r.CreatedAt})
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

// aggregate runs a raw Aggregate query on the record class into out.
func (b *Backend) aggregate(ctx context.Context, op, q string, out any) error {
	resp, err := b.c.GraphQL().Raw().WithQuery(q).Do(ctx)
	if err != nil {
		return b.wrap(op, err)
	}
	if err := graphQLErr(op, resp.Errors); err != nil {
		return err
	}
	agg, ok := resp.Data["Aggregate"].(map[string]any)
	if !ok {
		return fmt.Errorf("%w: %s: unexpected answer", ErrServer, op)
	}
	raw, err := json.Marshal(agg[b.class])
	if err != nil {
		return fmt.Errorf("%w: %s: %w", ErrServer, op, err)
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return fmt.Errorf("%w: %s: unexpected answer: %w", ErrServer, op, err)
	}
	return nil
}

func clampK(k int) int { return max(0, min(k, maxK)) }

// SearchText implements driver.Backend: Weaviate's BM25 over the analysed
// terms of each record.
func (b *Backend) SearchText(ctx context.Context, query string, k int, f driver.Filter) ([]driver.Hit, error) {
	if err := b.usable(); err != nil {
		return nil, err
	}
	q := terms(query)
	if k = clampK(k); q == "" || k == 0 {
		return nil, nil
	}
	gs, err := b.getFiltered(ctx, "full-text search", f, k, func(limit int) *graphql.GetBuilder {
		return b.get().WithLimit(limit).WithFields(recordFields("score")...).
			WithBM25(b.c.GraphQL().Bm25ArgBuilder().WithQuery(q).WithProperties(pTerms))
	})
	if err != nil {
		return nil, err
	}
	hits := make([]driver.Hit, 0, len(gs))
	for i := range gs {
		r, err := gs[i].record()
		if err != nil {
			return nil, err
		}
		hits = append(hits, driver.Hit{Record: r, Score: gs[i].score()})
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
func (b *Backend) SearchVector(ctx context.Context, vec []float32, k int, f driver.Filter) ([]driver.Hit, error) {
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
	gs, err := b.getFiltered(ctx, "vector search", f, k, func(limit int) *graphql.GetBuilder {
		return b.get().WithLimit(limit).WithFields(recordFields("distance")...).
			WithNearVector(b.c.GraphQL().NearVectorArgBuilder().WithVector(vec))
	})
	if err != nil {
		return nil, err
	}
	hits := make([]driver.Hit, 0, len(gs))
	for i := range gs {
		r, err := gs[i].record()
		if err != nil {
			return nil, err
		}
		s := 0.0
		if d := gs[i].Additional.Distance; d != nil {
			s = 1 - *d
		}
		hits = append(hits, driver.Hit{Record: r, Score: s})
	}
	sortHits(hits)
	return hits, nil
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
	fusion := graphql.Ranked
	switch q.Fusion {
	case driver.FusionRanked, "":
	case driver.FusionRelative:
		fusion = graphql.RelativeScore
	default:
		return nil, fmt.Errorf("%w: unknown fusion %q", driver.ErrInvalid, q.Fusion)
	}
	h := b.c.GraphQL().HybridArgumentBuilder().WithQuery(text).WithAlpha(float32(alpha)).
		WithFusionType(fusion).WithProperties([]string{pTerms})
	if !zero {
		h = h.WithVector(q.Vector)
	} else {
		h = h.WithAlpha(0) // no vector side: BM25 alone
	}
	// No maxVectorDistance: Weaviate applies it to the BM25 side too (a
	// result must be that close), while ragmem's threshold lets a result
	// pass on either side. With q.Similarity the similarity is computed
	// here instead, from the hits' vectors.
	add := []string{"score", "explainScore"}
	if q.Similarity && !zero {
		add = append(add, "vector")
	}
	gs, err := b.getFiltered(ctx, "hybrid search", q.Filter, k, func(limit int) *graphql.GetBuilder {
		return b.get().WithLimit(limit).WithFields(recordFields(add...)...).WithHybrid(h)
	})
	if err != nil {
		return nil, err
	}
	weights := [2]float64{1 - alpha, alpha}
	out := make([]driver.HybridHit, 0, len(gs))
	for i := range gs {
		r, err := gs[i].record()
		if err != nil {
			return nil, err
		}
		hh := driver.HybridHit{Record: r, Score: gs[i].score(), Explain: strings.TrimSpace(gs[i].Additional.ExplainScore)}
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
	gs, err := b.getRecords(ctx, "read dimension", b.get().WithLimit(1).WithFields(graphql.Field{Name: "_additional", Fields: []graphql.Field{{Name: "id"}, {Name: "vector"}}}))
	if err != nil {
		return 0, err
	}
	if len(gs) == 0 || len(gs[0].Additional.Vector) == 0 {
		return 0, nil
	}
	b.dim.Store(int64(len(gs[0].Additional.Vector)))
	return len(gs[0].Additional.Vector), nil
}

// Stats implements driver.Backend. Weaviate does not report the bytes a
// collection takes, so SizeBytes is 0.
func (b *Backend) Stats(ctx context.Context) (driver.Stats, error) {
	if err := b.usable(); err != nil {
		return driver.Stats{}, err
	}
	var agg []struct {
		Meta struct {
			Count int `json:"count"`
		} `json:"meta"`
	}
	if err := b.aggregate(ctx, "count records", fmt.Sprintf(`{Aggregate{%s{meta{count}}}}`, b.class), &agg); err != nil {
		return driver.Stats{}, err
	}
	_, sources, err := b.Sources(ctx, driver.Filter{}, 0, 1)
	if err != nil {
		return driver.Stats{}, err
	}
	st := driver.Stats{Sources: sources}
	if len(agg) > 0 {
		st.Records = agg[0].Meta.Count
	}
	if ns := b.lastSync.Load(); ns > 0 {
		st.LastSync = time.Unix(0, ns).UTC()
	}
	return st, nil
}

// metaObject is a meta object as GraphQL returns it.
type metaObject struct {
	Key        string `json:"key"`
	Value      string `json:"value"`
	Kind       string `json:"kind"`
	Created    string `json:"created"`
	Additional struct {
		ID string `json:"id"`
	} `json:"_additional"`
}

func (b *Backend) metaObjects(ctx context.Context, op string, w *filters.WhereBuilder) ([]metaObject, error) {
	var out []metaObject
	for off := 0; ; off += page {
		gb := b.c.GraphQL().Get().WithClassName(MetaClass)
		if b.metaReplicated {
			gb = gb.WithConsistencyLevel(b.cl)
		}
		resp, err := gb.WithWhere(w).WithLimit(page).WithOffset(off).
			WithFields(graphql.Field{Name: mKey}, graphql.Field{Name: mValue}, graphql.Field{Name: mKind}, graphql.Field{Name: mCreated},
				graphql.Field{Name: "_additional", Fields: []graphql.Field{{Name: "id"}}}).Do(ctx)
		if err != nil {
			return nil, b.wrap(op, err)
		}
		if err := graphQLErr(op, resp.Errors); err != nil {
			return nil, err
		}
		raw, _ := json.Marshal(resp.Data["Get"])
		var byClass map[string][]metaObject
		if err := json.Unmarshal(raw, &byClass); err != nil {
			return nil, fmt.Errorf("%w: %s: unexpected answer: %w", ErrServer, op, err)
		}
		got := byClass[MetaClass]
		out = append(out, got...)
		if len(got) < page {
			return out, nil
		}
	}
}

const (
	kindMeta   = "meta"
	kindIntent = "intent"
)

// Meta implements driver.Backend. It reads the setting by its id, which
// Weaviate answers from as many replicas as the consistency level asks for
// (the newest copy wins); a filtered query searches one replica only, and
// missed a setting that replica had not received yet (one written while a
// node that has since died held it, TestClusterSurvivesANodeKill).
func (b *Backend) Meta(ctx context.Context, k string) (string, bool, error) {
	if err := b.usable(); err != nil {
		return "", false, err
	}
	g := b.c.Data().ObjectsGetter().WithClassName(MetaClass).WithID(b.metaID(k))
	if b.metaReplicated {
		g = g.WithConsistencyLevel(b.cl)
	}
	objs, err := g.Do(ctx)
	var ce *fault.WeaviateClientError
	if errors.As(err, &ce) && ce.StatusCode == http.StatusNotFound {
		return "", false, nil
	}
	if err != nil {
		return "", false, b.wrap("read setting", err)
	}
	for _, o := range objs {
		p, _ := o.Properties.(map[string]any)
		key, _ := p[mKey].(string)
		kind, _ := p[mKind].(string)
		if v, ok := p[mValue].(string); ok && key == k && kind == kindMeta {
			return v, true, nil
		}
	}
	return "", false, nil
}

// SetMeta implements driver.Backend.
func (b *Backend) SetMeta(ctx context.Context, k, v string) error {
	if err := b.usable(); err != nil {
		return err
	}
	return b.putMeta(ctx, b.metaID(k), kindMeta, k, v)
}

func (b *Backend) putMeta(ctx context.Context, id, kind, k, v string) error {
	obj := &models.Object{
		Class: MetaClass,
		ID:    strfmtUUID(id),
		Properties: map[string]any{
			mNamespace: b.ns, mKind: kind, mKey: k, mValue: v,
			mCreated: b.now().UTC().Format(time.RFC3339Nano),
		},
	}
	return b.putObjects(ctx, "write "+kind, []*models.Object{obj})
}

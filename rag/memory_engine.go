package rag

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/ragmem/ragmem/index"

	"github.com/ragmem/ragmem/chunk"
	"github.com/ragmem/ragmem/internal/extract"
	"github.com/ragmem/ragmem/internal/jsonbody"
	"github.com/ragmem/ragmem/internal/reserved"
	"github.com/ragmem/ragmem/prefs"
	"github.com/ragmem/ragmem/search"
)

// The engine's side of the contract (Memory): each method checks the wire
// request, calls the engine's own method and answers with the wire type.
// The checks are the API's: the HTTP server passes requests through
// unchanged, adding only the bounds of a remote client.

// Limits on request fields.
const (
	maxTitleBytes   = 1 << 10
	maxQueryBytes   = 16 << 10
	maxMessageBytes = 64 << 10
	// MaxTopK bounds topK and maxPerSource of a request (a remote client
	// of the HTTP API is held to 100).
	MaxTopK         = 1 << 20
	maxContextLimit = 10_000_000
	// MaxListLimit bounds the limit of Sources.
	MaxListLimit = 1000
	// DefaultListLimit is the limit of Sources when the request gives none.
	DefaultListLimit = 50
	maxJobsLimit     = 10000
	defaultJobsLimit = 100
	maxDocuments     = 1000
)

// checkText rejects invalid UTF-8 and over-long strings.
func checkText(field, s string, max int) error {
	if !utf8.ValidString(s) {
		return badRequest("%s is not valid UTF-8", field)
	}
	if len(s) > max {
		return badRequest("%s is longer than %d bytes", field, max)
	}
	return nil
}

// parseWhere reads a request's filter expression (nil when none).
func parseWhere(field, s string) (*index.Expr, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	e, err := index.ParseFilter(s)
	if err != nil {
		return nil, badRequest("%s: %s", field, ClientMessage(err, index.ErrBadFilter))
	}
	return e, nil
}

// apiError gives err the API's code, keeping it for errors.Is.
func apiError(err error) error {
	if err == nil {
		return nil
	}
	var e *Error
	if errors.As(err, &e) {
		return err
	}
	code := ErrorCode(err)
	if code == jsonbody.CodeInternal || code == jsonbody.CodeUnavailable || code == jsonbody.CodeDiskFull {
		return err // not described to clients: the binding decides what to say
	}
	msg := err.Error()
	for _, s := range []error{ErrReserved, ErrTooManyChunks, ErrQuotaExceeded, ErrBadURL, index.ErrBadAttrs, index.ErrBadFilter, ErrNoJob, ErrNoPage} {
		if errors.Is(err, s) {
			msg = ClientMessage(err, s)
			break
		}
	}
	return &Error{Code: code, Message: msg, Err: err}
}

// checkSourceName validates the source name of a document: any non-empty
// text without control characters (the CLI names files by their file://
// URL, and stdin by whatever --url says); pages need an absolute URL.
func checkSourceName(field, u string) error {
	if strings.TrimSpace(u) == "" {
		return badRequest("%s is required", field)
	}
	if err := checkText(field, u, maxURLBytes); err != nil {
		return err
	}
	if strings.ContainsAny(u, "\x00\r\n") {
		return badRequest("%s contains control characters", field)
	}
	return nil
}

// document validates one document of a batch.
func (d *DocumentRequest) document(i int) (index.Document, error) {
	field := func(name string) string { return fmt.Sprintf("documents[%d].%s", i, name) }
	if err := checkSourceName(field("url"), d.URL); err != nil {
		return index.Document{}, err
	}
	if err := checkText(field("title"), d.Title, maxTitleBytes); err != nil {
		return index.Document{}, err
	}
	if err := checkText(field("content"), d.Content, 1<<40); err != nil {
		return index.Document{}, err
	}
	f := chunk.Text
	if d.Format != "" {
		var err error
		if f, err = chunk.ParseFormat(d.Format); err != nil {
			return index.Document{}, badRequest("%s: %v", field("format"), err)
		}
	}
	t := strings.TrimSpace(d.Type)
	switch {
	case t == "":
		t = index.DocKnowledge
	case t == index.DocKnowledge:
	case reserved.DocType(t):
		// The engine refuses them (ErrReserved).
	default:
		return index.Document{}, badRequest("%s: %q is not a document type; documents are knowledge (memories are written with /v1/memories, preferences with /v1/preferences)", field("type"), clipURL(d.Type))
	}
	if err := index.CheckAttrs(d.Attrs); err != nil {
		return index.Document{}, badRequest("%s: %s", field("attrs"), ClientMessage(err, index.ErrBadAttrs))
	}
	return index.Document{SourceURL: d.URL, Title: d.Title, Content: d.Content, Format: f, DocType: t, Attrs: d.Attrs, Extracted: d.Extracted && f == chunk.HTML}, nil
}

// Index indexes documents synchronously, in one atomic write (see Memory).
func (e *Engine) Index(ctx context.Context, req DocumentsRequest) (*DocumentsJSON, error) {
	if len(req.Documents) == 0 {
		return nil, badRequest("documents is empty")
	}
	if len(req.Documents) > maxDocuments {
		return nil, badRequest("more than %d documents in one request", maxDocuments)
	}
	docs := make([]index.Document, len(req.Documents))
	for i := range req.Documents {
		d, err := req.Documents[i].document(i)
		if err != nil {
			return nil, err
		}
		docs[i] = d
	}
	res, err := e.IndexDocuments(ctx, docs)
	if err != nil {
		return nil, apiError(err)
	}
	out := &DocumentsJSON{Results: make([]DocumentResult, len(res))}
	for i, x := range res {
		u := x.SourceURL // as the store keys it (CanonicalURL)
		if u == "" {
			u = docs[i].SourceURL
		}
		dr := DocumentResult{URL: u, ContentHash: x.ContentHash, Chunks: x.Chunks, Removed: x.Removed, Unchanged: x.Unchanged, Superseded: x.Superseded}
		if x.Err != nil {
			dr.Error, dr.Code = x.Err.Error(), ErrorCode(x.Err)
		}
		out.Results[i] = dr
	}
	return out, nil
}

// textFormat is the format of a page's text.
func (p *PageRequest) textFormat() (chunk.Format, error) {
	switch strings.ToLower(strings.TrimSpace(p.Format)) {
	case "", "text", "plain":
		return chunk.Text, nil
	case "markdown", "md":
		return chunk.Markdown, nil
	}
	return 0, fmt.Errorf("format %q is not text or markdown", p.Format)
}

// validate checks a page request and returns its URL.
func (p *PageRequest) validate() (string, error) {
	u, err := CheckPageURL(p.URL)
	if errors.Is(err, ErrReserved) {
		return "", &Error{Code: jsonbody.CodeReserved, Message: "url: " + ClientMessage(err, ErrReserved), Err: err}
	}
	if err != nil {
		return "", badRequest("url: %s", ClientMessage(err, ErrBadURL))
	}
	if err := checkText("title", p.Title, maxTitleBytes); err != nil {
		return "", err
	}
	hasHTML, hasText := strings.TrimSpace(p.HTML) != "", strings.TrimSpace(p.Text) != ""
	switch {
	case hasHTML && hasText:
		return "", badRequest("give either html or text, not both")
	case !hasHTML && !hasText:
		return "", &Error{Code: jsonbody.CodeNoContent, Message: "the page has no content: give html or text", Err: ErrEmptyDocument}
	}
	if hasHTML && p.Format != "" {
		return "", badRequest("format applies to text only; html is always read as HTML")
	}
	if _, err := p.textFormat(); err != nil {
		return "", badRequest("%v", err)
	}
	if err := index.CheckAttrs(p.Attrs); err != nil {
		return "", badRequest("attrs: %s", ClientMessage(err, index.ErrBadAttrs))
	}
	return u, nil
}

// pageDocument turns a page request into the document to index: HTML is
// reduced to its main content (package extract) within the engine's
// extraction limits (Options.Extract).
func (e *Engine) pageDocument(ctx context.Context, u string, req *PageRequest) (index.Document, int, error) {
	title := cleanTitle(req.Title)
	doc := index.Document{SourceURL: u, DocType: index.DocKnowledge}
	if strings.TrimSpace(req.HTML) != "" {
		xo := e.extract
		p, err := extract.HTMLContext(ctx, req.HTML, u, &xo)
		switch {
		case errors.Is(err, extract.ErrNoContent):
			return doc, 0, &Error{Code: jsonbody.CodeNoContent, Message: "the page has no text content after removing scripts, navigation and ads", Err: err}
		case errors.Is(err, extract.ErrTooLarge):
			return doc, 0, &Error{Code: jsonbody.CodeTooLarge, Message: ClientMessage(err, extract.ErrTooLarge), Err: err}
		case errors.Is(err, extract.ErrTooComplex):
			return doc, 0, &Error{Code: jsonbody.CodeTooComplex, Message: ClientMessage(err, extract.ErrTooComplex), Err: err}
		case err != nil:
			if ctx.Err() != nil {
				return doc, 0, ctx.Err()
			}
			return doc, 0, &Error{Code: jsonbody.CodeNoContent, Message: "the page could not be read as HTML", Err: err}
		}
		if title == "" {
			title = p.Title
		}
		doc.Content, doc.Format, doc.Extracted = p.HTML, chunk.HTML, true
		doc.Attrs = map[string]string{"extractor": p.Method}
		for k, v := range map[string]string{"siteName": p.SiteName, "byline": p.Byline, "lang": p.Language} {
			if v != "" {
				doc.Attrs[k] = v
			}
		}
		if !p.Published.IsZero() {
			doc.Attrs["published"] = p.Published.Format(time.RFC3339)
		}
		if title == "" {
			title = u
		}
		doc.Title = title
		doc.Attrs = withUserAttrs(doc.Attrs, req.Attrs)
		return doc, len(p.Text), nil
	}
	f, _ := req.textFormat() // validated
	doc.Content, doc.Format = strings.ToValidUTF8(req.Text, "\uFFFD"), f
	if title == "" {
		title = u
	}
	doc.Title = title
	doc.Attrs = withUserAttrs(doc.Attrs, req.Attrs)
	return doc, len(doc.Content), nil
}

// withUserAttrs adds the attributes a client set to those derived from
// the page (extractor, siteName, ...); the client's win.
func withUserAttrs(derived, user map[string]string) map[string]string {
	if len(user) == 0 {
		return derived
	}
	if derived == nil {
		derived = make(map[string]string, len(user))
	}
	for k, v := range user {
		derived[k] = v
	}
	return derived
}

// cleanTitle collapses whitespace and drops control characters.
func cleanTitle(t string) string {
	t = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return ' '
		}
		return r
	}, strings.ToValidUTF8(t, ""))
	return strings.Join(strings.Fields(t), " ")
}

// IndexPage queues a page for background indexing (see Memory). A page
// the background worker would give up on (too many chunks, no text, a full
// quota) is refused at once; a page the queue cannot take is
// ErrQueueFull.
func (e *Engine) IndexPage(ctx context.Context, req PageRequest) (*PageAccepted, error) {
	u, err := req.validate()
	if err != nil {
		return nil, err
	}
	doc, textBytes, err := e.pageDocument(ctx, u, &req)
	if err != nil {
		return nil, err
	}
	u = e.CanonicalURL(u) // variants of one URL are one page
	doc.SourceURL = u
	src, unchanged, err := e.PageUnchanged(ctx, doc)
	if err != nil {
		return nil, apiError(err)
	}
	resp := &PageAccepted{URL: u, Title: doc.Title, Extractor: doc.Attrs["extractor"], TextBytes: textBytes}
	if unchanged {
		resp.Status, resp.Chunks = "unchanged", src.Chunks
		return resp, nil
	}
	if _, err := e.CheckDocument(ctx, doc); err != nil {
		return nil, apiError(err)
	}
	id, err := e.IndexPageAsync(doc)
	if err != nil {
		return nil, apiError(err)
	}
	job, _ := e.LookupJob(id)
	if job.State == index.JobFailed {
		return nil, &Error{Code: jsonbody.CodeQueueFull, Message: "the page was not queued: " + job.Error, Err: ErrQueueFull}
	}
	jj := newJobJSON(&job)
	resp.Status, resp.JobID, resp.Job = "queued", id, &jj
	return resp, nil
}

// Job reports a background indexing job (see Memory).
func (e *Engine) Job(_ context.Context, id string) (*JobJSON, error) {
	j, ok := e.LookupJob(id)
	if !ok {
		return nil, notFound("no job %q", clipURL(id))
	}
	jj := newJobJSON(&j)
	return &jj, nil
}

// Jobs lists the background jobs (see Memory).
func (e *Engine) Jobs(_ context.Context, req JobsRequest) (*JobsJSON, error) {
	limit := req.Limit
	switch {
	case limit == 0:
		limit = defaultJobsLimit
	case limit < 0 || limit > maxJobsLimit:
		return nil, badRequest("limit must be an integer between 1 and %d", maxJobsLimit)
	}
	var states []index.JobState
	for _, x := range req.States {
		switch st := index.JobState(strings.TrimSpace(x)); st {
		case index.JobQueued, index.JobRunning, index.JobDone, index.JobFailed, index.JobDead, index.JobCancelled:
			states = append(states, st)
		default:
			return nil, badRequest("state: unknown job state %q (want queued, running, done, failed, dead or cancelled)", clipURL(x))
		}
	}
	jobs := e.ListJobs(states...)
	if len(jobs) > limit {
		jobs = jobs[:limit]
	}
	out := &JobsJSON{Jobs: make([]JobJSON, 0, len(jobs)), Queue: e.QueueStats()}
	for i := range jobs {
		out.Jobs = append(out.Jobs, newJobJSON(&jobs[i]))
	}
	return out, nil
}

// RetryJob queues a dead job again (see Memory).
func (e *Engine) RetryJob(ctx context.Context, id string) (*JobJSON, error) {
	j, err := e.RetryDeadJob(ctx, id)
	if errors.Is(err, ErrNoJob) {
		return nil, &Error{Code: jsonbody.CodeNotFound, Message: fmt.Sprintf("no dead-lettered job %q (Jobs with state dead lists them)", clipURL(id)), Err: err}
	}
	if err != nil {
		return nil, apiError(err)
	}
	jj := newJobJSON(&j)
	return &jj, nil
}

// DropJob deletes a dead job (see Memory).
func (e *Engine) DropJob(ctx context.Context, id string) error {
	err := e.ix.DropJob(ctx, id)
	if errors.Is(err, ErrNoJob) {
		return &Error{Code: jsonbody.CodeNotFound, Message: fmt.Sprintf("no dead-lettered job %q (only dead letters can be dropped)", clipURL(id)), Err: err}
	}
	return apiError(err)
}

// options validates a search request and returns the search options: what
// the request leaves out stays zero, and the engine's configuration
// decides it (Config.SearchOptions).
func (q *SearchRequest) options() (search.Options, error) {
	var o search.Options
	if strings.TrimSpace(q.Query) == "" {
		return o, badRequest("query is required")
	}
	if err := checkText("query", q.Query, maxQueryBytes); err != nil {
		return o, err
	}
	if q.TopK < 0 || q.TopK > MaxTopK {
		return o, badRequest("topK must be between 1 and %d", MaxTopK)
	}
	o = search.Options{TopK: q.TopK, GroupBySource: q.GroupBySource, KeepDuplicates: q.KeepDuplicates}
	unit, err := search.ParseUnit(q.Unit)
	if err != nil {
		return o, badRequest("%v", err)
	}
	o.Unit = unit
	if strings.TrimSpace(q.Mode) != "" {
		m, err := search.ParseMode(q.Mode)
		if err != nil {
			return o, badRequest("%v", err)
		}
		o.Mode = m
	}
	if strings.TrimSpace(q.Fusion) != "" {
		fu, err := search.ParseFusion(q.Fusion)
		if err != nil {
			return o, badRequest("%v", err)
		}
		o.Fusion = fu
	}
	where, err := parseWhere("filter", q.Filter)
	if err != nil {
		return o, err
	}
	o.Where = where
	if q.MaxPerSource != nil {
		switch n := *q.MaxPerSource; {
		case n < 0 || n > MaxTopK:
			return o, badRequest("maxPerSource must be between 0 (no cap) and %d", MaxTopK)
		case n == 0:
			o.MaxPerSource = -1 // search.Options: negative is no cap
		default:
			o.MaxPerSource = n
		}
	}
	if q.Threshold != nil {
		t := *q.Threshold
		if t != t || t > 1e6 || t < -1e6 {
			return o, badRequest("threshold must be a number (negative disables it)")
		}
		if t == 0 {
			t = -1 // zero means "no threshold" on the wire; search reads 0 as the default
		}
		o.SimilarityThreshold = t
	}
	if f := q.Filters; f != nil {
		if f.URL != "" {
			u, err := checkURL(f.URL)
			if err != nil {
				return o, badRequest("filters.url: %s", ClientMessage(err, ErrBadURL))
			}
			o.SourceURL = u
		}
		if err := checkTypes("filters.docTypes", f.DocTypes); err != nil {
			return o, err
		}
		o.DocTypes = f.DocTypes
		if len(f.Attrs) > 32 {
			return o, badRequest("filters.attrs has more than 32 entries")
		}
		for k, v := range f.Attrs {
			if err := checkText("filters.attrs key", k, 256); err != nil {
				return o, err
			}
			if err := checkText("filters.attrs value", v, 4096); err != nil {
				return o, err
			}
		}
		o.Attrs = f.Attrs
	}
	return o, nil
}

// checkTypes refuses an unknown document type.
func checkTypes(field string, types []string) error {
	for _, t := range types {
		switch t {
		case index.DocKnowledge, index.DocMemory, index.DocPreference:
		default:
			return badRequest("%s: unknown document type %q (want knowledge, memory or preference)", field, clipURL(t))
		}
	}
	return nil
}

// Search retrieves passages (see Memory).
func (e *Engine) Search(ctx context.Context, req SearchRequest) (*SearchJSON, error) {
	o, err := req.options()
	if err != nil {
		return nil, err
	}
	start := time.Now()
	res, rep, err := e.RetrieveReport(ctx, req.Query, &o)
	if err != nil {
		return nil, apiError(err)
	}
	out := newSearchJSON(req.Query, res, rep, e.now(), time.Since(start))
	return &out, nil
}

// validate checks a context request.
func (c *ContextRequest) validate() error {
	if strings.TrimSpace(c.Query) == "" {
		return badRequest("query is required")
	}
	if err := checkText("query", c.Query, maxQueryBytes); err != nil {
		return err
	}
	if err := checkText("model", c.Model, 200); err != nil {
		return err
	}
	if err := checkText("systemPrompt", c.SystemPrompt, maxMessageBytes*4); err != nil {
		return err
	}
	for _, f := range []struct {
		name string
		v    int
	}{{"modelContextLimit", c.ModelContextLimit}, {"systemPromptTokens", c.SystemPromptTokens},
		{"responseReserve", c.ResponseReserve}, {"knowledgeBudget", c.KnowledgeBudget}} {
		if f.v < 0 || f.v > maxContextLimit {
			return badRequest("%s must be between 0 and %d", f.name, maxContextLimit)
		}
	}
	if c.TopK < 0 || c.TopK > MaxTopK {
		return badRequest("topK must be between 1 and %d", MaxTopK)
	}
	if _, err := search.ParseMode(c.Mode); err != nil {
		return badRequest("%v", err)
	}
	return nil
}

// BuildContext builds the knowledge context for a model call (see
// Memory). The defaults of what req leaves zero are decided here, once,
// for every surface: the engine's configuration (Config) and ContextFor's
// (model window, response reserve).
func (e *Engine) BuildContext(ctx context.Context, req ContextRequest) (*ContextJSON, error) {
	if err := req.validate(); err != nil {
		return nil, err
	}
	where, err := parseWhere("filter", req.Filter)
	if err != nil {
		return nil, err
	}
	cfg := e.cfg
	if req.Mode != "" {
		cfg.SearchMode, _ = search.ParseMode(req.Mode) // validated
	}
	if req.TopK > 0 {
		cfg.TopK = req.TopK
	}
	if req.KnowledgeBudget > 0 {
		cfg.KnowledgeBudget = req.KnowledgeBudget
	}
	c, err := e.ContextFor(ctx, req.Query, ContextOptions{
		Model: req.Model, ModelContextLimit: req.ModelContextLimit, SystemPrompt: req.SystemPrompt,
		SystemPromptTokens: req.SystemPromptTokens, ResponseReserve: req.ResponseReserve, Config: &cfg, Where: where,
	})
	if err != nil {
		return nil, apiError(err)
	}
	out := newContextJSON(c)
	return &out, nil
}

// Sources lists the stored sources (see Memory).
func (e *Engine) Sources(ctx context.Context, req SourcesRequest) (*SourcesJSON, error) {
	limit := req.Limit
	switch {
	case req.Offset < 0:
		return nil, badRequest("offset must not be negative")
	case limit == 0:
		limit = DefaultListLimit
	case limit < 0 || limit > MaxListLimit:
		return nil, badRequest("limit must be an integer between 1 and %d", MaxListLimit)
	}
	types := req.Types
	if len(types) == 0 {
		types = []string{index.DocKnowledge}
	}
	if err := checkTypes("types", types); err != nil {
		return nil, err
	}
	where, err := parseWhere("filter", req.Filter)
	if err != nil {
		return nil, err
	}
	srcs, total, err := e.ListSources(ctx, index.Filter{DocTypes: types, Where: where}, req.Offset, limit)
	if err != nil {
		return nil, apiError(err)
	}
	now := e.now()
	out := &SourcesJSON{Total: total, Offset: req.Offset, Limit: limit, Sources: make([]SourceJSON, 0, len(srcs))}
	for i := range srcs {
		out.Sources = append(out.Sources, newSourceJSON(&srcs[i], now))
	}
	return out, nil
}

// Page returns a stored page's chunks (see Memory).
func (e *Engine) Page(ctx context.Context, raw string) (*PageJSON, error) {
	u, err := checkURL(raw)
	if err != nil {
		return nil, badRequest("url: %s", ClientMessage(err, ErrBadURL))
	}
	recs, err := e.Source(ctx, u)
	if err != nil {
		return nil, apiError(err)
	}
	now := e.now()
	out := &PageJSON{URL: u, Chunks: []ChunkJSON{}}
	for i := range recs {
		if recs[i].DocType != index.DocKnowledge {
			continue
		}
		out.Title = recs[i].Title
		out.Chunks = append(out.Chunks, newChunkJSON(&recs[i], now))
	}
	if len(out.Chunks) == 0 {
		return nil, notFound("no page %s in the memory", clipURL(u))
	}
	return out, nil
}

// ForgetPage removes a page (see Memory).
func (e *Engine) ForgetPage(ctx context.Context, raw string) (*ForgetJSON, error) {
	if _, err := checkURL(raw); err != nil {
		return nil, badRequest("url: %s", ClientMessage(err, ErrBadURL))
	}
	u := strings.TrimSpace(raw)
	rm, err := e.Forget(ctx, u)
	if errors.Is(err, ErrNoPage) {
		return nil, &Error{Code: jsonbody.CodeNotFound, Message: fmt.Sprintf("no page %s in the memory", clipURL(u)), Err: err}
	}
	if err != nil {
		return nil, apiError(err)
	}
	cancelled := rm.Cancelled
	if cancelled == nil {
		cancelled = []string{}
	}
	return &ForgetJSON{URL: u, Removed: rm.Chunks, CancelledJobs: cancelled}, nil
}

// Preferences lists the user's profile (see Memory).
func (e *Engine) Preferences(ctx context.Context) ([]prefs.Preference, error) {
	ps, err := e.prefs.List(ctx)
	if err != nil {
		return nil, apiError(err)
	}
	if ps == nil {
		ps = []prefs.Preference{}
	}
	return ps, nil
}

// prefError gives a preference store's refusal the code bad_request.
func prefError(err error) error {
	switch {
	case errors.Is(err, prefs.ErrEmpty), errors.Is(err, prefs.ErrTooLong), errors.Is(err, prefs.ErrUnknownType):
		return &Error{Code: jsonbody.CodeBadRequest, Message: err.Error(), Err: errors.Join(ErrBadRequest, err)}
	}
	return apiError(err)
}

// AddPreference adds a preference (see Memory).
func (e *Engine) AddPreference(ctx context.Context, req PreferenceRequest) (*prefs.Preference, error) {
	t, err := prefs.ParseType(req.Type)
	if err != nil {
		return nil, prefError(err)
	}
	if err := checkText("content", req.Content, prefs.MaxContentLen); err != nil {
		return nil, err
	}
	if strings.TrimSpace(req.Content) == "" {
		return nil, badRequest("content is required")
	}
	p, err := e.prefs.Add(ctx, t, req.Content)
	if err != nil {
		return nil, prefError(err)
	}
	return &p, nil
}

// RemovePreference removes one preference (see Memory).
func (e *Engine) RemovePreference(ctx context.Context, id string) error {
	if strings.TrimSpace(id) == "" {
		return badRequest("id is required")
	}
	ok, err := e.prefs.Remove(ctx, id)
	if err != nil {
		return apiError(err)
	}
	if !ok {
		return notFound("no preference %q", clipURL(id))
	}
	return nil
}

// ClearPreferences removes every preference (see Memory).
func (e *Engine) ClearPreferences(ctx context.Context) (int, error) {
	n, err := e.prefs.Clear(ctx)
	return n, apiError(err)
}

// DetectPreferences finds preference statements in a message (see
// Memory).
func (e *Engine) DetectPreferences(ctx context.Context, req DetectRequest) (*DetectJSON, error) {
	if strings.TrimSpace(req.Message) == "" {
		return nil, badRequest("message is required")
	}
	if err := checkText("message", req.Message, maxMessageBytes); err != nil {
		return nil, err
	}
	ins := prefs.DetectPreferenceIntents(req.Message)
	out := &DetectJSON{Detected: len(ins) > 0}
	for _, in := range ins {
		out.Intents = append(out.Intents, IntentJSON{Type: string(in.Type), Content: in.Content, Match: in.Match})
	}
	if len(ins) > 0 {
		out.Intent = &out.Intents[0]
	}
	if req.Save && len(ins) > 0 {
		for _, in := range ins {
			p, err := e.prefs.Add(ctx, in.Type, in.Content)
			if err != nil {
				return nil, prefError(err)
			}
			out.SavedAll = append(out.SavedAll, p)
		}
		out.Saved = &out.SavedAll[0]
	}
	return out, nil
}

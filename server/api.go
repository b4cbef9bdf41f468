package server

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/ragmem/ragmem/chunk"
	"github.com/ragmem/ragmem/extract"
	"github.com/ragmem/ragmem/memory"
	"github.com/ragmem/ragmem/prefs"
	"github.com/ragmem/ragmem/rag"
	"github.com/ragmem/ragmem/search"
)

func (s *Server) apiRoutes() {
	for _, rt := range []struct {
		pattern string
		h       http.HandlerFunc
	}{
		{"POST /v1/pages", s.postPage},
		{"GET /v1/pages", s.getPage},
		{"DELETE /v1/pages", s.deletePage},
		{"GET /v1/jobs", s.listJobs},
		{"GET /v1/jobs/{id}", s.getJob},
		{"POST /v1/jobs/{id}/retry", s.retryJob},
		{"DELETE /v1/jobs/{id}", s.dropJob},
		{"GET /v1/sources", s.listSources},
		{"POST /v1/search", s.search},
		{"POST /v1/context", s.context},
		{"GET /v1/preferences", s.listPreferences},
		{"POST /v1/preferences", s.addPreference},
		{"DELETE /v1/preferences", s.deletePreferences},
		{"POST /v1/preferences/detect", s.detectPreference},
		{"GET /v1/stats", s.stats},
		{"GET /v1/openapi.json", s.openapi},
	} {
		s.mustHandle(rt.pattern, rt.h, true)
	}
}

// engine returns the request's engine or writes the error.
func (s *Server) engine(w http.ResponseWriter, r *http.Request) *rag.Engine {
	eng, err := s.Engine(r)
	if err != nil {
		s.fail(w, r, err)
		return nil
	}
	return eng
}

// Fail writes the response for an error of the engine (or of
// Server.Engine) the way the API's own handlers do, for handlers mounted
// with Handle: a busy or locked namespace is 503, a full disk 507, and an
// unexpected error 500 with only the request id (the details go to the
// log, never to the client).
func (s *Server) Fail(w http.ResponseWriter, r *http.Request, err error) { s.fail(w, r, err) }

// fail maps an error from the engine to a response. Only errors whose
// message is written for the client pass their message on; any other error
// is logged with the request id and answered with a message that names
// only the request id: no path, no Go error text.
func (s *Server) fail(w http.ResponseWriter, r *http.Request, err error) {
	var ae *apiError
	switch {
	case errors.As(err, &ae):
		writeAPIError(w, r, ae)
	case errors.Is(err, ErrTooManyNamespaces):
		w.Header().Set("Retry-After", "5")
		WriteError(w, r, http.StatusServiceUnavailable, CodeUnavailable, "too many namespaces are open and busy; retry later")
	case errors.Is(err, rag.ErrLocked), errors.Is(err, rag.ErrQueueLocked):
		s.log.Warn("namespace store is locked by another process", "requestId", stateOf(r).id, "namespace", Namespace(r), "err", err)
		w.Header().Set("Retry-After", "5")
		WriteError(w, r, http.StatusServiceUnavailable, CodeUnavailable, "this namespace's store is in use by another ragmem process; retry later")
	case errors.Is(err, ErrClosed), errors.Is(err, rag.ErrClosed):
		WriteError(w, r, http.StatusServiceUnavailable, CodeUnavailable, "the server is shutting down")
	case errors.Is(err, syscall.ENOSPC), errors.Is(err, syscall.EDQUOT):
		s.log.Error("disk full", "requestId", stateOf(r).id, "namespace", Namespace(r), "err", err)
		WriteError(w, r, http.StatusInsufficientStorage, CodeDiskFull, "the disk of the server's data directory is full; nothing was changed")
	case errors.Is(err, rag.ErrQuotaExceeded):
		WriteError(w, r, http.StatusInsufficientStorage, CodeQuotaExceeded, clientMessage(err, rag.ErrQuotaExceeded))
	case errors.Is(err, rag.ErrTooManyChunks):
		WriteError(w, r, http.StatusUnprocessableEntity, CodeTooManyChunks, clientMessage(err, rag.ErrTooManyChunks))
	case errors.Is(err, rag.ErrEmptyDocument):
		WriteError(w, r, http.StatusUnprocessableEntity, CodeNoContent, "the page has no text to index")
	case errors.Is(err, rag.ErrBinaryContent):
		WriteError(w, r, http.StatusUnprocessableEntity, CodeNoContent, "the page's text is binary data (NUL or control bytes), not text")
	case errors.Is(err, rag.ErrReserved):
		WriteError(w, r, http.StatusForbidden, CodeReserved, clientMessage(err, rag.ErrReserved))
	case errors.Is(err, rag.ErrBadURL):
		WriteError(w, r, http.StatusBadRequest, CodeBadRequest, clientMessage(err, rag.ErrBadURL))
	case errors.Is(err, context.DeadlineExceeded):
		WriteError(w, r, http.StatusServiceUnavailable, CodeUnavailable, fmt.Sprintf("the request took longer than %s", s.o.RequestTimeout))
	case errors.Is(err, context.Canceled):
		WriteError(w, r, 499, "canceled", "the client went away")
	default:
		s.log.Error("request failed", "requestId", stateOf(r).id, "namespace", Namespace(r), "err", err)
		WriteError(w, r, http.StatusInternalServerError, CodeInternal, "internal error; the server's log has the details under this request id")
	}
}

// clientMessage is the message of an error whose text from its sentinel
// on was written for the client, without the sentinel's package prefix
// ("index: quota exceeded: ..." gives "quota exceeded: ...").
func clientMessage(err, sentinel error) string {
	msg := err.Error()
	if i := strings.Index(msg, sentinel.Error()); i >= 0 {
		msg = msg[i:]
	}
	if pkg, _, ok := strings.Cut(sentinel.Error(), ": "); ok {
		msg = strings.TrimPrefix(msg, pkg+": ")
	}
	return msg
}

// chunkJSON is r as answers show it (see public); local says the request
// came from the user's own process (a local listener), which sees the store
// as it is, memory files' paths included.
func (s *Server) chunkJSON(r rag.Record, now time.Time, local bool) rag.ChunkJSON {
	s.public(&r, local)
	return rag.NewChunkJSON(&r, now)
}

// public rewrites r as answers show it: a memory's source is named by its
// file name, never by the server's path, and the directory attribute is
// left out, unless the request is local.
func (s *Server) public(r *rag.Record, local bool) {
	if _, ok := r.Attrs[memory.AttrDir]; ok && !local {
		r.Attrs = maps.Clone(r.Attrs)
		delete(r.Attrs, memory.AttrDir) // the server's directory
	}
	r.SourceURL = publicURL(r.SourceURL, r.DocType, local)
}

// publicURL is the URL of a source as answers show it. Memories (and their
// patterns) are sources of the server's own files: they are named
// "memory:<file name>", never by the server's path, except to the user's
// own processes on a local listener (local).
func publicURL(u, docType string, local bool) string {
	if local || docType == rag.DocKnowledge || docType == rag.DocPreference || !strings.HasPrefix(u, "file://") {
		return u
	}
	name := u[strings.LastIndexByte(u, '/')+1:]
	return "memory:" + name
}

// JobJSON reports a background indexing job.
// It is a plain value.
type JobJSON struct {
	ID        string    `json:"id"`
	URL       string    `json:"url"`
	State     string    `json:"state"` // queued, running, done, failed (refused when queued), dead (given up on: retry or drop it), cancelled (its page was deleted first)
	Chunks    int       `json:"chunks,omitempty"`
	Unchanged bool      `json:"unchanged,omitempty"`
	Error     string    `json:"error,omitempty"`
	Attempts  int       `json:"attempts,omitempty"`
	Queued    time.Time `json:"queued"`
	Finished  time.Time `json:"finished,omitzero"`
	RetryAt   time.Time `json:"retryAt,omitzero"`
}

// jobJSON is j as the answer to r shows it: a job's error names no file of
// the server (publicMessage).
func jobJSON(r *http.Request, j rag.Job) JobJSON {
	return JobJSON{ID: j.ID, URL: j.SourceURL, State: string(j.State), Chunks: j.Chunks, Unchanged: j.Unchanged, Error: publicMessage(r, j.Error),
		Attempts: j.Attempts, Queued: j.Queued, Finished: j.Finished, RetryAt: j.RetryAt}
}

// PageAccepted answers POST /v1/pages.
// It is a plain value.
type PageAccepted struct {
	Status    string   `json:"status"` // "queued" (202) or "unchanged" (200)
	URL       string   `json:"url"`
	JobID     string   `json:"jobId,omitempty"`
	Job       *JobJSON `json:"job,omitempty"`
	Chunks    int      `json:"chunks,omitempty"`    // for unchanged pages: chunks stored
	Title     string   `json:"title"`               // the title indexed
	Extractor string   `json:"extractor,omitempty"` // readability or fallback, for HTML
	TextBytes int      `json:"textBytes"`           // size of the text kept
}

func (s *Server) postPage(w http.ResponseWriter, r *http.Request) {
	var req pageRequest
	if e := decodeJSON(r, &req); e != nil {
		writeAPIError(w, r, e)
		return
	}
	u, e := req.validate()
	if e != nil {
		writeAPIError(w, r, e)
		return
	}
	doc, textBytes, e := s.pageDocument(r.Context(), Namespace(r), u, &req)
	if e != nil {
		writeAPIError(w, r, e)
		return
	}
	eng := s.engine(w, r)
	if eng == nil {
		return
	}
	u = eng.CanonicalURL(u) // variants of one URL are one page
	doc.SourceURL = u
	ctx := r.Context()
	src, unchanged, err := eng.PageUnchanged(ctx, doc)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	resp := PageAccepted{URL: u, Title: doc.Title, Extractor: doc.Attrs["extractor"], TextBytes: textBytes}
	if unchanged {
		resp.Status, resp.Chunks = "unchanged", src.Chunks
		writeJSON(w, http.StatusOK, resp)
		return
	}
	// Refuse now what the background worker would give up on: too many
	// chunks, no text, a full quota. Chunking is CPU-bound work like
	// extraction, and shares its slots.
	release, err := s.extract.acquire(ctx, Namespace(r))
	if err != nil {
		writeAPIError(w, r, errorf(http.StatusServiceUnavailable, CodeUnavailable, "timed out waiting to chunk the page"))
		return
	}
	_, err = eng.CheckDocument(ctx, doc)
	release()
	if err != nil {
		s.fail(w, r, err)
		return
	}
	id, err := eng.IndexPageAsync(doc)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	job, _ := eng.LookupJob(id)
	if job.State == rag.JobFailed {
		s.log.Warn("page not queued", "requestId", stateOf(r).id, "namespace", Namespace(r), "job", id, "url", u, "why", job.Error)
		w.Header().Set("Retry-After", "5")
		code := CodeQueueFull
		if s.draining.Load() {
			code = CodeUnavailable
		}
		WriteError(w, r, http.StatusServiceUnavailable, code, "the page was not queued: "+job.Error)
		return
	}
	jj := jobJSON(r, job)
	resp.Status, resp.JobID, resp.Job = "queued", id, &jj
	w.Header().Set("Location", "/v1/jobs/"+url.PathEscape(id))
	writeJSON(w, http.StatusAccepted, resp)
}

// pageDocument turns a page request into the document to index. The
// document is normalised the way the index normalises it, so that its
// ContentHash is the one the index will compute. HTML is extracted in one
// of the namespace's fair share of the extraction slots.
func (s *Server) pageDocument(ctx context.Context, ns, u string, req *pageRequest) (rag.Document, int, *apiError) {
	title := cleanTitle(req.Title)
	doc := rag.Document{SourceURL: u, DocType: rag.DocKnowledge}
	if strings.TrimSpace(req.HTML) != "" {
		release, err := s.extract.acquire(ctx, ns)
		if err != nil {
			return doc, 0, errorf(http.StatusServiceUnavailable, CodeUnavailable, "timed out waiting to extract the page")
		}
		p, err := extract.HTMLContext(ctx, req.HTML, u, &extract.Options{MaxBytes: int(s.o.MaxBodyBytes), MaxNodes: s.o.ExtractMaxNodes, Timeout: s.o.ExtractTimeout})
		release()
		switch {
		case errors.Is(err, extract.ErrNoContent):
			return doc, 0, errorf(http.StatusUnprocessableEntity, CodeNoContent, "the page has no text content after removing scripts, navigation and ads")
		case errors.Is(err, extract.ErrTooLarge):
			return doc, 0, errorf(http.StatusRequestEntityTooLarge, CodeTooLarge, clientMessage(err, extract.ErrTooLarge))
		case errors.Is(err, extract.ErrTooComplex):
			return doc, 0, errorf(http.StatusUnprocessableEntity, CodeTooComplex, clientMessage(err, extract.ErrTooComplex))
		case err != nil:
			return doc, 0, errorf(http.StatusUnprocessableEntity, CodeNoContent, "the page could not be read as HTML")
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

// withUserAttrs adds the attributes a client set to those the server
// derived (extractor, siteName, ...); the client's win.
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

func (s *Server) getJob(w http.ResponseWriter, r *http.Request) {
	eng := s.engine(w, r)
	if eng == nil {
		return
	}
	id := r.PathValue("id")
	j, ok := eng.LookupJob(id)
	if !ok {
		WriteError(w, r, http.StatusNotFound, CodeNotFound, fmt.Sprintf("no job %q in this namespace", clip(id, 100)))
		return
	}
	writeJSON(w, http.StatusOK, jobJSON(r, j))
}

// JobsJSON answers GET /v1/jobs.
// It is a plain value.
type JobsJSON struct {
	Jobs  []JobJSON      `json:"jobs"`
	Queue rag.QueueStats `json:"queue"`
}

// listJobs lists the namespace's jobs, most recent first: all remembered
// ones, or those in the states of ?state= (queued, running, done, failed,
// dead, cancelled; comma-separated), at most ?limit= (default 100, at most 10,000).
func (s *Server) listJobs(w http.ResponseWriter, r *http.Request) {
	limit, e := intParam(r, "limit", 100, 1, 10000)
	if e != nil {
		writeAPIError(w, r, e)
		return
	}
	var states []rag.JobState
	if v := r.URL.Query().Get("state"); v != "" {
		for _, x := range strings.Split(v, ",") {
			switch st := rag.JobState(strings.TrimSpace(x)); st {
			case rag.JobQueued, rag.JobRunning, rag.JobDone, rag.JobFailed, rag.JobDead, rag.JobCancelled:
				states = append(states, st)
			default:
				writeAPIError(w, r, badRequest("state: unknown job state %q (want queued, running, done, failed, dead or cancelled)", clip(x, 40)))
				return
			}
		}
	}
	eng := s.engine(w, r)
	if eng == nil {
		return
	}
	jobs := eng.ListJobs(states...)
	if len(jobs) > limit {
		jobs = jobs[:limit]
	}
	out := JobsJSON{Jobs: make([]JobJSON, 0, len(jobs)), Queue: eng.QueueStats()}
	for _, j := range jobs {
		out.Jobs = append(out.Jobs, jobJSON(r, j))
	}
	writeJSON(w, http.StatusOK, out)
}

// retryJob queues a dead letter's page again.
func (s *Server) retryJob(w http.ResponseWriter, r *http.Request) {
	eng := s.engine(w, r)
	if eng == nil {
		return
	}
	id := r.PathValue("id")
	j, err := eng.RetryDeadJob(r.Context(), id)
	switch {
	case errors.Is(err, rag.ErrNoJob):
		WriteError(w, r, http.StatusNotFound, CodeNotFound, fmt.Sprintf("no dead-lettered job %q in this namespace (GET /v1/jobs?state=dead lists them)", clip(id, 100)))
		return
	case err != nil:
		s.fail(w, r, err)
		return
	}
	w.Header().Set("Location", "/v1/jobs/"+url.PathEscape(id))
	writeJSON(w, http.StatusAccepted, jobJSON(r, j))
}

// dropJob deletes a dead letter and its page.
func (s *Server) dropJob(w http.ResponseWriter, r *http.Request) {
	eng := s.engine(w, r)
	if eng == nil {
		return
	}
	id := r.PathValue("id")
	err := eng.DropJob(r.Context(), id)
	switch {
	case errors.Is(err, rag.ErrNoJob):
		WriteError(w, r, http.StatusNotFound, CodeNotFound, fmt.Sprintf("no dead-lettered job %q in this namespace (only dead letters can be dropped)", clip(id, 100)))
		return
	case err != nil:
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"id": id, "dropped": true})
}

// clip shortens s to at most n bytes at a rune boundary.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// queryURL reads the url query parameter.
func queryURL(r *http.Request) (string, *apiError) {
	return checkSourceURL("url", r.URL.Query().Get("url"))
}

// PageJSON answers GET /v1/pages: the chunks of one source, in order.
// It is a plain value.
type PageJSON struct {
	URL    string          `json:"url"`
	Title  string          `json:"title"`
	Chunks []rag.ChunkJSON `json:"chunks"`
}

func (s *Server) getPage(w http.ResponseWriter, r *http.Request) {
	u, e := queryURL(r)
	if e != nil {
		writeAPIError(w, r, e)
		return
	}
	eng := s.engine(w, r)
	if eng == nil {
		return
	}
	recs, err := eng.Source(r.Context(), u)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	now := s.o.Now()
	out := PageJSON{URL: u, Chunks: []rag.ChunkJSON{}}
	for _, rec := range recs {
		if rec.DocType != rag.DocKnowledge {
			continue
		}
		out.Title = rec.Title
		out.Chunks = append(out.Chunks, s.chunkJSON(rec, now, IsLocal(r)))
	}
	if len(out.Chunks) == 0 {
		WriteError(w, r, http.StatusNotFound, CodeNotFound, fmt.Sprintf("no page %s in the memory", u))
		return
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) deletePage(w http.ResponseWriter, r *http.Request) {
	u, e := queryURL(r)
	if e != nil {
		writeAPIError(w, r, e)
		return
	}
	eng := s.engine(w, r)
	if eng == nil {
		return
	}
	rm, err := eng.Forget(r.Context(), u)
	if errors.Is(err, rag.ErrNoPage) {
		WriteError(w, r, http.StatusNotFound, CodeNotFound, fmt.Sprintf("no page %s in the memory", clip(u, 200)))
		return
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	// The page's queued jobs are cancelled: once this answer is sent, the
	// page is gone and stays gone (see rag.Engine.ForgetPage).
	cancelled := rm.Cancelled
	if cancelled == nil {
		cancelled = []string{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"url": u, "removed": rm.Chunks, "cancelledJobs": cancelled})
}

func intParam(r *http.Request, name string, def, lo, hi int) (int, *apiError) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < lo || n > hi {
		return 0, badRequest("%s must be an integer between %d and %d", name, lo, hi)
	}
	return n, nil
}

func (s *Server) listSources(w http.ResponseWriter, r *http.Request) {
	offset, e := intParam(r, "offset", 0, 0, 1<<30)
	if e != nil {
		writeAPIError(w, r, e)
		return
	}
	limit, e := intParam(r, "limit", 50, 1, maxListLimit)
	if e != nil {
		writeAPIError(w, r, e)
		return
	}
	types := []string{rag.DocKnowledge}
	if t := r.URL.Query().Get("type"); t != "" {
		types = nil
		for _, x := range strings.Split(t, ",") {
			switch x {
			case rag.DocKnowledge, rag.DocMemory, rag.DocPreference:
				types = append(types, x)
			default:
				writeAPIError(w, r, badRequest("type: unknown document type %q (want knowledge, memory or preference)", x))
				return
			}
		}
	}
	where, e := parseFilter("filter", r.URL.Query().Get("filter"))
	if e != nil {
		writeAPIError(w, r, e)
		return
	}
	eng := s.engine(w, r)
	if eng == nil {
		return
	}
	srcs, total, err := eng.ListSources(r.Context(), rag.Filter{DocTypes: types, Where: where}, offset, limit)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	now := s.o.Now()
	out := rag.SourcesJSON{Total: total, Offset: offset, Limit: limit, Sources: make([]rag.SourceJSON, 0, len(srcs))}
	for _, si := range srcs {
		si.SourceURL = publicURL(si.SourceURL, si.DocType, IsLocal(r))
		out.Sources = append(out.Sources, rag.NewSourceJSON(&si, now))
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) search(w http.ResponseWriter, r *http.Request) {
	var req SearchRequest
	if e := decodeJSON(r, &req); e != nil {
		writeAPIError(w, r, e)
		return
	}
	o, e := req.options(topKBound(r))
	if e != nil {
		writeAPIError(w, r, e)
		return
	}
	eng := s.engine(w, r)
	if eng == nil {
		return
	}
	start := time.Now()
	res, rep, err := eng.RetrieveReport(r.Context(), req.Query, &o)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	now := s.o.Now()
	local := IsLocal(r)
	for i := range res {
		s.public(&res[i].Record, local)
	}
	out := rag.NewSearchJSON(req.Query, res, rep, now, time.Since(start))
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) context(w http.ResponseWriter, r *http.Request) {
	var req ContextRequest
	if e := decodeJSON(r, &req); e != nil {
		writeAPIError(w, r, e)
		return
	}
	if e := req.validate(topKBound(r)); e != nil {
		writeAPIError(w, r, e)
		return
	}
	eng := s.engine(w, r)
	if eng == nil {
		return
	}
	where, a := parseFilter("filter", req.Filter)
	if a != nil {
		writeAPIError(w, r, a)
		return
	}
	cfg := eng.Config()
	if req.Mode != "" {
		cfg.SearchMode, _ = search.ParseMode(req.Mode) // validated
	}
	if req.TopK > 0 {
		cfg.TopK = req.TopK
	}
	if req.KnowledgeBudget > 0 {
		cfg.KnowledgeBudget = req.KnowledgeBudget
	}
	c, err := eng.ContextFor(r.Context(), req.Query, rag.ContextOptions{
		Model: req.Model, ModelContextLimit: req.ModelContextLimit, SystemPrompt: req.SystemPrompt,
		SystemPromptTokens: req.SystemPromptTokens, ResponseReserve: req.ResponseReserve, Config: &cfg, Where: where,
	})
	if err != nil {
		s.fail(w, r, err)
		return
	}
	out := rag.NewContextJSON(c)
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) listPreferences(w http.ResponseWriter, r *http.Request) {
	eng := s.engine(w, r)
	if eng == nil {
		return
	}
	ps, err := eng.PreferenceStore().List(r.Context())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if ps == nil {
		ps = []prefs.Preference{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"preferences": ps})
}

func prefError(err error) *apiError {
	switch {
	case errors.Is(err, prefs.ErrEmpty), errors.Is(err, prefs.ErrTooLong), errors.Is(err, prefs.ErrUnknownType):
		return badRequest("%v", err)
	}
	return nil
}

func (s *Server) addPreference(w http.ResponseWriter, r *http.Request) {
	var req PreferenceRequest
	if e := decodeJSON(r, &req); e != nil {
		writeAPIError(w, r, e)
		return
	}
	t, e := req.validate()
	if e != nil {
		writeAPIError(w, r, e)
		return
	}
	eng := s.engine(w, r)
	if eng == nil {
		return
	}
	p, err := eng.PreferenceStore().Add(r.Context(), t, req.Content)
	if err != nil {
		if ae := prefError(err); ae != nil {
			writeAPIError(w, r, ae)
			return
		}
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, map[string]any{"preference": p})
}

func (s *Server) deletePreferences(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	id, all := q.Get("id"), q.Get("all")
	if (id == "") == (all != "true") {
		writeAPIError(w, r, badRequest("give id=<preference id> to remove one preference, or all=true to remove them all"))
		return
	}
	eng := s.engine(w, r)
	if eng == nil {
		return
	}
	if all == "true" {
		n, err := eng.PreferenceStore().Clear(r.Context())
		if err != nil {
			s.fail(w, r, err)
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"removed": n})
		return
	}
	ok, err := eng.PreferenceStore().Remove(r.Context(), id)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if !ok {
		WriteError(w, r, http.StatusNotFound, CodeNotFound, fmt.Sprintf("no preference %q", id))
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"removed": 1})
}

// DetectJSON answers POST /v1/preferences/detect.
// It is a plain value.
type DetectJSON struct {
	Detected bool              `json:"detected"`
	Intent   *IntentJSON       `json:"intent,omitempty"` // the first statement
	Saved    *prefs.Preference `json:"saved,omitempty"`  // the first statement, saved
	// Intents are every statement in the message, in order (Intent is the
	// first), and SavedAll each one saved (with save).
	Intents  []IntentJSON       `json:"intents,omitempty"`
	SavedAll []prefs.Preference `json:"savedAll,omitempty"`
}

// IntentJSON is a detected preference statement.
// It is a plain value.
type IntentJSON struct {
	Type    string `json:"type"`
	Content string `json:"content"` // what would be stored
	Match   string `json:"match"`   // the words that triggered detection
}

func (s *Server) detectPreference(w http.ResponseWriter, r *http.Request) {
	var req detectRequest
	if e := decodeJSON(r, &req); e != nil {
		writeAPIError(w, r, e)
		return
	}
	if e := req.validate(); e != nil {
		writeAPIError(w, r, e)
		return
	}
	ins := prefs.DetectPreferenceIntents(req.Message)
	out := DetectJSON{Detected: len(ins) > 0}
	for _, in := range ins {
		out.Intents = append(out.Intents, IntentJSON{Type: string(in.Type), Content: in.Content, Match: in.Match})
	}
	if len(ins) > 0 {
		out.Intent = &out.Intents[0]
	}
	if req.Save && len(ins) > 0 {
		eng := s.engine(w, r)
		if eng == nil {
			return
		}
		for _, in := range ins {
			p, err := eng.PreferenceStore().Add(r.Context(), in.Type, in.Content)
			if err != nil {
				if ae := prefError(err); ae != nil {
					writeAPIError(w, r, ae)
					return
				}
				s.fail(w, r, err)
				return
			}
			out.SavedAll = append(out.SavedAll, p)
		}
		out.Saved = &out.SavedAll[0]
	}
	writeJSON(w, http.StatusOK, out)
}

// StatsJSON answers GET /v1/stats.
// It is a plain value.
type StatsJSON struct {
	Namespace string    `json:"namespace"`
	Store     rag.Stats `json:"store"`
	Server    struct {
		UptimeSeconds  float64 `json:"uptimeSeconds"`
		NamespacesOpen int     `json:"namespacesOpen"`
	} `json:"server"`
}

func (s *Server) stats(w http.ResponseWriter, r *http.Request) {
	eng := s.engine(w, r)
	if eng == nil {
		return
	}
	st, err := eng.Stats(r.Context())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	out := StatsJSON{Namespace: Namespace(r), Store: st}
	out.Server.UptimeSeconds = s.o.Now().Sub(s.started).Seconds()
	out.Server.NamespacesOpen = s.pool.openCount()
	writeJSON(w, http.StatusOK, out)
}

// topKBound is the largest topK (and maxPerSource) r may ask for.
func topKBound(r *http.Request) int {
	if IsLocal(r) {
		return maxLocalTopK
	}
	return maxTopK
}

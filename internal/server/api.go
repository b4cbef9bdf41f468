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
	"unicode/utf8"

	"github.com/ragmem/ragmem/index"
	"github.com/ragmem/ragmem/internal/memory"
	"github.com/ragmem/ragmem/rag"
)

// apiRoutes registers the /v1 API. Every route but POST /v1/pages is a
// binding of one rag.Memory operation made by bind: how it reads its
// request, and which operation it calls.
func (s *Server) apiRoutes() {
	for _, rt := range []struct {
		pattern string
		h       http.HandlerFunc
	}{
		{"POST /v1/pages", s.postPage},
		{"GET /v1/pages", bind(s, http.StatusOK, urlParam, rag.Memory.Page)},
		{"DELETE /v1/pages", bind(s, http.StatusOK, urlParam, rag.Memory.ForgetPage)},
		{"GET /v1/jobs", bind(s, http.StatusOK, jobsQuery, rag.Memory.Jobs)},
		{"GET /v1/jobs/{id}", bind(s, http.StatusOK, pathID, rag.Memory.Job)},
		{"POST /v1/jobs/{id}/retry", s.retryJob},
		{"DELETE /v1/jobs/{id}", bind(s, http.StatusOK, pathID, dropJob)},
		{"GET /v1/sources", bind(s, http.StatusOK, sourcesQuery, rag.Memory.Sources)},
		{"DELETE /v1/sources", bind(s, http.StatusOK, sourceURL, removeSource)},
		{"PATCH /v1/sources", bind(s, http.StatusOK, readAttrsPatch, setSourceAttrs)},
		{"POST /v1/sources:delete", bind(s, http.StatusOK, body[rag.DeleteSourcesRequest], rag.Memory.DeleteSources)},
		{"POST /v1/documents", bind(s, http.StatusOK, body[rag.DocumentsRequest], rag.Memory.Index)},
		{"POST /v1/search", bind(s, http.StatusOK, searchBody, rag.Memory.Search)},
		// What the request leaves zero, the engine decides
		// (rag.Engine.BuildContext): the same budgets as on every surface.
		{"POST /v1/context", bind(s, http.StatusOK, contextBody, rag.Memory.BuildContext)},
		{"GET /v1/preferences", bind(s, http.StatusOK, noInput, listPreferences)},
		{"POST /v1/preferences", bind(s, http.StatusCreated, body[rag.PreferenceRequest], addPreference)},
		{"DELETE /v1/preferences", bind(s, http.StatusOK, prefsQuery, deletePreferences)},
		{"POST /v1/preferences/detect", bind(s, http.StatusOK, body[rag.DetectRequest], rag.Memory.DetectPreferences)},
		{"GET /v1/stats", bind(s, http.StatusOK, namespaceName, s.stats)},
		{"GET /v1/openapi.json", s.openapi},
	} {
		s.mustHandle(rt.pattern, rt.h, true)
	}
}

// bind makes the handler of one /v1 route, the shape every route of the
// API shares: read turns the HTTP request into the contract's request (a
// bad one is answered with its *apiError before a namespace is opened),
// call runs the contract on the request's namespace, and its answer, as
// the client may see it (publicAnswer), is written as JSON with status
// (204: no body). An error of call is mapped to its response by fail.
func bind[In, Out any](s *Server, status int, read func(*http.Request) (In, *apiError), call func(rag.Memory, context.Context, In) (Out, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		in, mem := prepare(s, w, r, read)
		if mem == nil {
			return
		}
		out, err := call(mem, r.Context(), in)
		switch {
		case err != nil:
			s.fail(w, r, err)
		case status == http.StatusNoContent:
			w.WriteHeader(status)
		default:
			publicAnswer(r, out)
			writeJSON(w, status, out)
		}
	}
}

// prepare reads the request with read and returns it with the memory of
// the request's namespace (Server.Engine); a bad request or a namespace
// that cannot be had is answered here, and the memory is nil.
func prepare[In any](s *Server, w http.ResponseWriter, r *http.Request, read func(*http.Request) (In, *apiError)) (In, rag.Memory) {
	in, e := read(r)
	if e != nil {
		writeAPIError(w, r, e)
		return in, nil
	}
	eng, err := s.Engine(r)
	if err != nil {
		s.fail(w, r, err)
		return in, nil
	}
	return in, eng
}

// body reads the request's JSON body as a T (decodeJSON).
func body[T any](r *http.Request) (T, *apiError) {
	var v T
	e := decodeJSON(r, &v)
	return v, e
}

// noInput is the read of a route whose call needs nothing of the request.
func noInput(*http.Request) (struct{}, *apiError) { return struct{}{}, nil }

// urlParam reads the request's ?url= (the contract checks it).
func urlParam(r *http.Request) (string, *apiError) { return r.URL.Query().Get("url"), nil }

// namespaceName reads the request's namespace (Namespace).
func namespaceName(r *http.Request) (string, *apiError) { return Namespace(r), nil }

// pathID reads the {id} of the route's path.
func pathID(r *http.Request) (string, *apiError) { return r.PathValue("id"), nil }

// codeStatus is the HTTP status of a contract error's code.
var codeStatus = map[string]int{
	CodeBadRequest:    http.StatusBadRequest,
	CodeInvalidJSON:   http.StatusBadRequest,
	CodeNotFound:      http.StatusNotFound,
	CodeReserved:      http.StatusForbidden,
	CodeTooManyChunks: http.StatusUnprocessableEntity,
	CodeNoContent:     http.StatusUnprocessableEntity,
	CodeTooComplex:    http.StatusUnprocessableEntity,
	CodeTooLarge:      http.StatusRequestEntityTooLarge,
	CodeQuotaExceeded: http.StatusInsufficientStorage,
	CodeQueueFull:     http.StatusServiceUnavailable,
	CodeMatchesAll:    http.StatusBadRequest,
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
	var re *rag.Error
	switch {
	case errors.As(err, &ae):
		writeAPIError(w, r, ae)
	case errors.As(err, &re) && codeStatus[re.Code] != 0:
		if re.Code == CodeQueueFull {
			w.Header().Set("Retry-After", "5")
			if s.draining.Load() {
				WriteError(w, r, http.StatusServiceUnavailable, CodeUnavailable, re.Message)
				return
			}
		}
		WriteError(w, r, codeStatus[re.Code], re.Code, re.Message)
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
	case errors.Is(err, rag.ErrEmptyDocument):
		WriteError(w, r, http.StatusUnprocessableEntity, CodeNoContent, "the page has no text to index")
	case errors.Is(err, rag.ErrBinaryContent):
		WriteError(w, r, http.StatusUnprocessableEntity, CodeNoContent, "the page's text is binary data (NUL or control bytes), not text")
	case errors.Is(err, context.DeadlineExceeded):
		WriteError(w, r, http.StatusServiceUnavailable, CodeUnavailable, fmt.Sprintf("the request took longer than %s", s.o.RequestTimeout))
	case errors.Is(err, context.Canceled):
		WriteError(w, r, 499, "canceled", "the client went away")
	case clientError(err) != nil:
		c := clientError(err)
		WriteError(w, r, c.status, c.code, rag.ClientMessage(err, c.sentinel))
	default:
		s.log.Error("request failed", "requestId", stateOf(r).id, "namespace", Namespace(r), "err", err)
		WriteError(w, r, http.StatusInternalServerError, CodeInternal, "internal error; the server's log has the details under this request id")
	}
}

// clientErrors are the engine's errors whose text from the sentinel on is
// written for the client (rag.ClientMessage), with their status and code.
var clientErrors = []clientErr{
	{rag.ErrQuotaExceeded, http.StatusInsufficientStorage, CodeQuotaExceeded},
	{rag.ErrTooManyChunks, http.StatusUnprocessableEntity, CodeTooManyChunks},
	{rag.ErrReserved, http.StatusForbidden, CodeReserved},
	{rag.ErrBadURL, http.StatusBadRequest, CodeBadRequest},
}

// clientErr is an engine error's sentinel with its response's status
// and code.
type clientErr struct {
	sentinel error
	status   int
	code     string
}

// clientError is the entry of clientErrors err matches, or nil.
func clientError(err error) *clientErr {
	for i := range clientErrors {
		if errors.Is(err, clientErrors[i].sentinel) {
			return &clientErrors[i]
		}
	}
	return nil
}

// public rewrites a chunk as answers show it: a memory's source is named
// by its file name, never by the server's path, and the directory
// attribute is left out, unless the request is local.
func public(c *rag.ChunkJSON, local bool) {
	if _, ok := c.Attrs[memory.AttrDir]; ok && !local {
		c.Attrs = maps.Clone(c.Attrs)
		delete(c.Attrs, memory.AttrDir) // the server's directory
	}
	c.URL = publicURL(c.URL, c.DocType, local)
}

// publicURL is the URL of a source as answers show it. Memories (and their
// patterns) are sources of the server's own files: they are named
// "memory:<file name>", never by the server's path, except to the user's
// own processes on a local listener (local).
func publicURL(u, docType string, local bool) string {
	if local || docType == index.DocKnowledge || docType == index.DocPreference || !strings.HasPrefix(u, "file://") {
		return u
	}
	name := u[strings.LastIndexByte(u, '/')+1:]
	return "memory:" + name
}

// publicJob is j as the answer to r shows it: a job's error names no file
// of the server (publicMessage).
func publicJob(r *http.Request, j *rag.JobJSON) {
	if j != nil {
		j.Error = publicMessage(r, j.Error)
	}
}

// publicAnswer rewrites an answer of the contract as the client of r may
// see it, the one place that says what each answer hides from a remote
// client: a memory's source is named by its file name (public,
// publicURL), and errors in it name no file of the server
// (publicMessage). The user's own processes on a local listener see it
// whole.
func publicAnswer(r *http.Request, answer any) {
	local := IsLocal(r)
	switch a := answer.(type) {
	case *rag.PageAccepted:
		publicJob(r, a.Job)
	case *rag.JobJSON:
		publicJob(r, a)
	case *rag.JobsJSON:
		for i := range a.Jobs {
			publicJob(r, &a.Jobs[i])
		}
	case *rag.PageJSON:
		for i := range a.Chunks {
			public(&a.Chunks[i], local)
		}
	case *rag.SearchJSON:
		for i := range a.Results {
			public(&a.Results[i].ChunkJSON, local)
		}
	case *rag.SourcesJSON:
		for i := range a.Sources {
			a.Sources[i].URL = publicURL(a.Sources[i].URL, a.Sources[i].DocType, local)
		}
	case *rag.DeleteSourcesJSON:
		for i := range a.KeptSources {
			a.KeptSources[i].URL = publicURL(a.KeptSources[i].URL, a.KeptSources[i].DocType, local)
		}
	case *rag.DocumentsJSON:
		for i := range a.Results {
			a.Results[i].Error = publicMessage(r, a.Results[i].Error)
		}
	}
}

func (s *Server) postPage(w http.ResponseWriter, r *http.Request) {
	req, mem := prepare(s, w, r, body[rag.PageRequest])
	if mem == nil {
		return
	}
	// Extraction and chunking are CPU-bound: they run in one of the
	// namespace's fair share of the slots.
	release, err := s.extract.acquire(r.Context(), Namespace(r))
	if err != nil {
		writeAPIError(w, r, errorf(http.StatusServiceUnavailable, CodeUnavailable, "timed out waiting to extract the page"))
		return
	}
	resp, err := mem.IndexPage(r.Context(), req)
	release()
	if err != nil {
		if rag.ErrorCode(err) == CodeQueueFull {
			s.log.Warn("page not queued", "requestId", stateOf(r).id, "namespace", Namespace(r), "url", req.URL, "why", err)
		}
		s.fail(w, r, err)
		return
	}
	publicAnswer(r, resp)
	if resp.Status == "unchanged" {
		writeJSON(w, http.StatusOK, resp)
		return
	}
	w.Header().Set("Location", "/v1/jobs/"+url.PathEscape(resp.JobID))
	writeJSON(w, http.StatusAccepted, resp)
}

// jobsQuery reads GET /v1/jobs: the states of ?state= (queued, running,
// done, failed, dead, cancelled; comma-separated; none: all remembered
// jobs), at most ?limit= (default 100, at most 10,000). The jobs are
// listed most recent first.
func jobsQuery(r *http.Request) (rag.JobsRequest, *apiError) {
	limit, e := intParam(r, "limit", 100, 1, 10000)
	req := rag.JobsRequest{Limit: limit}
	if v := r.URL.Query().Get("state"); v != "" {
		req.States = strings.Split(v, ",")
	}
	return req, e
}

// retryJob queues a dead letter's page again; the answer's Location is
// the job's.
func (s *Server) retryJob(w http.ResponseWriter, r *http.Request) {
	bind(s, http.StatusAccepted, pathID, func(mem rag.Memory, ctx context.Context, id string) (*rag.JobJSON, error) {
		j, err := mem.RetryJob(ctx, id)
		if err == nil {
			w.Header().Set("Location", "/v1/jobs/"+url.PathEscape(id))
		}
		return j, err
	})(w, r)
}

// dropJob deletes a dead letter and its page.
func dropJob(mem rag.Memory, ctx context.Context, id string) (map[string]any, error) {
	return map[string]any{"id": id, "dropped": true}, mem.DropJob(ctx, id)
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

// sourcesQuery reads GET /v1/sources: ?offset=, ?limit=, ?filter= and the
// comma-separated ?type=.
func sourcesQuery(r *http.Request) (rag.SourcesRequest, *apiError) {
	offset, e := intParam(r, "offset", 0, 0, 1<<30)
	if e != nil {
		return rag.SourcesRequest{}, e
	}
	limit, e := intParam(r, "limit", rag.DefaultListLimit, 1, rag.MaxListLimit)
	req := rag.SourcesRequest{Offset: offset, Limit: limit, Filter: r.URL.Query().Get("filter")}
	if t := r.URL.Query().Get("type"); t != "" {
		req.Types = strings.Split(t, ",")
	}
	return req, e
}

// remoteBound refuses a topK or maxPerSource past what a remote client
// may ask for (maxTopK); the user's own processes on a local listener may
// ask what a local engine answers (ragmem search --top-k 500).
func remoteBound(r *http.Request, topK int, maxPerSource *int) *apiError {
	if IsLocal(r) {
		return nil
	}
	if topK > maxTopK {
		return badRequest("topK must be between 1 and %d", maxTopK)
	}
	if maxPerSource != nil && *maxPerSource > maxTopK {
		return badRequest("maxPerSource must be between 0 (no cap) and %d", maxTopK)
	}
	return nil
}

// searchBody reads POST /v1/search within a remote client's bounds.
func searchBody(r *http.Request) (rag.SearchRequest, *apiError) {
	req, e := body[rag.SearchRequest](r)
	if e == nil {
		e = remoteBound(r, req.TopK, req.MaxPerSource)
	}
	return req, e
}

// contextBody reads POST /v1/context within a remote client's bounds.
func contextBody(r *http.Request) (rag.ContextRequest, *apiError) {
	req, e := body[rag.ContextRequest](r)
	if e == nil {
		e = remoteBound(r, req.TopK, nil)
	}
	return req, e
}

func listPreferences(mem rag.Memory, ctx context.Context, _ struct{}) (map[string]any, error) {
	ps, err := mem.Preferences(ctx)
	return map[string]any{"preferences": ps}, err
}

func addPreference(mem rag.Memory, ctx context.Context, req rag.PreferenceRequest) (map[string]any, error) {
	p, err := mem.AddPreference(ctx, req)
	return map[string]any{"preference": p}, err
}

// prefsQuery reads DELETE /v1/preferences: ?id= names the one preference
// to remove; ?all=true (and no id) removes them all.
func prefsQuery(r *http.Request) (string, *apiError) {
	q := r.URL.Query()
	id, all := q.Get("id"), q.Get("all")
	if (id == "") == (all != "true") {
		return "", badRequest("give id=<preference id> to remove one preference, or all=true to remove them all")
	}
	return id, nil
}

// deletePreferences removes the preference id, or all of them when id is
// "" (prefsQuery).
func deletePreferences(mem rag.Memory, ctx context.Context, id string) (map[string]int, error) {
	if id == "" {
		n, err := mem.ClearPreferences(ctx)
		return map[string]int{"removed": n}, err
	}
	return map[string]int{"removed": 1}, mem.RemovePreference(ctx, id)
}

// StatsJSON answers GET /v1/stats.
type StatsJSON struct {
	Namespace string      `json:"namespace"`
	Store     index.Stats `json:"store"`
	Server    struct {
		UptimeSeconds  float64 `json:"uptimeSeconds"`
		NamespacesOpen int     `json:"namespacesOpen"`
	} `json:"server"`
}

// stats answers GET /v1/stats: the store's and the server's figures.
func (s *Server) stats(mem rag.Memory, ctx context.Context, ns string) (*StatsJSON, error) {
	st, err := mem.Stats(ctx)
	if err != nil {
		return nil, err
	}
	out := &StatsJSON{Namespace: ns, Store: st}
	out.Server.UptimeSeconds = s.o.Now().Sub(s.started).Seconds()
	out.Server.NamespacesOpen = s.pool.openCount()
	return out, nil
}

// setURLRules sets the store's URL rules (rag.Memory.SetURLRules): a
// route of local listeners only (`ragmem index --keep-params` run as a
// client of the owner sets them here); the answer is 204.
func setURLRules(mem rag.Memory, ctx context.Context, rules index.URLRules) (struct{}, error) {
	return struct{}{}, mem.SetURLRules(ctx, rules)
}

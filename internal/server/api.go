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

// memory returns the request's memory (its namespace's) or writes the
// error. Every handler of the API is a binding of rag.Memory: it decodes
// the wire request, adds the bounds of a remote client, calls the contract
// and writes its answer.
func (s *Server) memory(w http.ResponseWriter, r *http.Request) rag.Memory {
	eng, err := s.Engine(r)
	if err != nil {
		s.fail(w, r, err)
		return nil
	}
	return eng
}

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
// on was written for the client (rag.ClientMessage).
func clientMessage(err, sentinel error) string { return rag.ClientMessage(err, sentinel) }

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

func (s *Server) postPage(w http.ResponseWriter, r *http.Request) {
	var req rag.PageRequest
	if e := decodeJSON(r, &req); e != nil {
		writeAPIError(w, r, e)
		return
	}
	mem := s.memory(w, r)
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
	if resp.Status == "unchanged" {
		writeJSON(w, http.StatusOK, resp)
		return
	}
	publicJob(r, resp.Job)
	w.Header().Set("Location", "/v1/jobs/"+url.PathEscape(resp.JobID))
	writeJSON(w, http.StatusAccepted, resp)
}

func (s *Server) getJob(w http.ResponseWriter, r *http.Request) {
	mem := s.memory(w, r)
	if mem == nil {
		return
	}
	j, err := mem.Job(r.Context(), r.PathValue("id"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	publicJob(r, j)
	writeJSON(w, http.StatusOK, j)
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
	req := rag.JobsRequest{Limit: limit}
	if v := r.URL.Query().Get("state"); v != "" {
		req.States = strings.Split(v, ",")
	}
	mem := s.memory(w, r)
	if mem == nil {
		return
	}
	out, err := mem.Jobs(r.Context(), req)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	for i := range out.Jobs {
		publicJob(r, &out.Jobs[i])
	}
	writeJSON(w, http.StatusOK, out)
}

// retryJob queues a dead letter's page again.
func (s *Server) retryJob(w http.ResponseWriter, r *http.Request) {
	mem := s.memory(w, r)
	if mem == nil {
		return
	}
	id := r.PathValue("id")
	j, err := mem.RetryJob(r.Context(), id)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	publicJob(r, j)
	w.Header().Set("Location", "/v1/jobs/"+url.PathEscape(id))
	writeJSON(w, http.StatusAccepted, j)
}

// dropJob deletes a dead letter and its page.
func (s *Server) dropJob(w http.ResponseWriter, r *http.Request) {
	mem := s.memory(w, r)
	if mem == nil {
		return
	}
	id := r.PathValue("id")
	if err := mem.DropJob(r.Context(), id); err != nil {
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

func (s *Server) getPage(w http.ResponseWriter, r *http.Request) {
	mem := s.memory(w, r)
	if mem == nil {
		return
	}
	p, err := mem.Page(r.Context(), r.URL.Query().Get("url"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	for i := range p.Chunks {
		public(&p.Chunks[i], IsLocal(r))
	}
	writeJSON(w, http.StatusOK, p)
}

func (s *Server) deletePage(w http.ResponseWriter, r *http.Request) {
	mem := s.memory(w, r)
	if mem == nil {
		return
	}
	// The page's queued jobs are cancelled: once this answer is sent, the
	// page is gone and stays gone (see rag.Engine.Forget).
	out, err := mem.ForgetPage(r.Context(), r.URL.Query().Get("url"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, out)
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
	limit, e := intParam(r, "limit", rag.DefaultListLimit, 1, rag.MaxListLimit)
	if e != nil {
		writeAPIError(w, r, e)
		return
	}
	req := rag.SourcesRequest{Offset: offset, Limit: limit, Filter: r.URL.Query().Get("filter")}
	if t := r.URL.Query().Get("type"); t != "" {
		req.Types = strings.Split(t, ",")
	}
	mem := s.memory(w, r)
	if mem == nil {
		return
	}
	out, err := mem.Sources(r.Context(), req)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	for i := range out.Sources {
		out.Sources[i].URL = publicURL(out.Sources[i].URL, out.Sources[i].DocType, IsLocal(r))
	}
	writeJSON(w, http.StatusOK, out)
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

func (s *Server) search(w http.ResponseWriter, r *http.Request) {
	var req rag.SearchRequest
	if e := decodeJSON(r, &req); e != nil {
		writeAPIError(w, r, e)
		return
	}
	if e := remoteBound(r, req.TopK, req.MaxPerSource); e != nil {
		writeAPIError(w, r, e)
		return
	}
	mem := s.memory(w, r)
	if mem == nil {
		return
	}
	out, err := mem.Search(r.Context(), req)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	for i := range out.Results {
		public(&out.Results[i].ChunkJSON, IsLocal(r))
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) context(w http.ResponseWriter, r *http.Request) {
	var req rag.ContextRequest
	if e := decodeJSON(r, &req); e != nil {
		writeAPIError(w, r, e)
		return
	}
	if e := remoteBound(r, req.TopK, nil); e != nil {
		writeAPIError(w, r, e)
		return
	}
	mem := s.memory(w, r)
	if mem == nil {
		return
	}
	// What the request leaves zero, the engine decides (rag.Engine.
	// BuildContext): the same budgets as on every other surface.
	out, err := mem.BuildContext(r.Context(), req)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) listPreferences(w http.ResponseWriter, r *http.Request) {
	mem := s.memory(w, r)
	if mem == nil {
		return
	}
	ps, err := mem.Preferences(r.Context())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"preferences": ps})
}

func (s *Server) addPreference(w http.ResponseWriter, r *http.Request) {
	var req rag.PreferenceRequest
	if e := decodeJSON(r, &req); e != nil {
		writeAPIError(w, r, e)
		return
	}
	mem := s.memory(w, r)
	if mem == nil {
		return
	}
	p, err := mem.AddPreference(r.Context(), req)
	if err != nil {
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
	mem := s.memory(w, r)
	if mem == nil {
		return
	}
	if all == "true" {
		n, err := mem.ClearPreferences(r.Context())
		if err != nil {
			s.fail(w, r, err)
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"removed": n})
		return
	}
	if err := mem.RemovePreference(r.Context(), id); err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"removed": 1})
}

func (s *Server) detectPreference(w http.ResponseWriter, r *http.Request) {
	var req rag.DetectRequest
	if e := decodeJSON(r, &req); e != nil {
		writeAPIError(w, r, e)
		return
	}
	mem := s.memory(w, r)
	if mem == nil {
		return
	}
	out, err := mem.DetectPreferences(r.Context(), req)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, out)
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

func (s *Server) stats(w http.ResponseWriter, r *http.Request) {
	mem := s.memory(w, r)
	if mem == nil {
		return
	}
	st, err := mem.Stats(r.Context())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	out := StatsJSON{Namespace: Namespace(r), Store: st}
	out.Server.UptimeSeconds = s.o.Now().Sub(s.started).Seconds()
	out.Server.NamespacesOpen = s.pool.openCount()
	writeJSON(w, http.StatusOK, out)
}

// putURLRules sets the store's URL rules (rag.Memory.SetURLRules): a
// route of local listeners only (`ragmem index --keep-params` run as a
// client of the owner sets them here).
func (s *Server) putURLRules(w http.ResponseWriter, r *http.Request) {
	var rules index.URLRules
	if e := decodeJSON(r, &rules); e != nil {
		writeAPIError(w, r, e)
		return
	}
	mem := s.memory(w, r)
	if mem == nil {
		return
	}
	if err := mem.SetURLRules(r.Context(), rules); err != nil {
		s.fail(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// Package memhttp serves a memory directory (memory.Store) over HTTP under
// /v1/memories, with the JSON conventions of ragmem's HTTP API: JSON
// bodies, errors as {"error":{"code":"...","message":"..."}} with the
// matching status, request bodies limited.
//
//	GET  /v1/memories            list the memories (and invalid files)
//	POST /v1/memories            write a memory (201; appended to an existing slug)
//	GET  /v1/memories/{name}     one memory with its entries
//	POST /v1/memories/match      select the memories for an agent's task
//	POST /v1/memories/extract    ask the model whether a run is worth remembering
//	POST /v1/memories/refresh    re-read the directory now
//	POST /v1/memories/search     find memories by content and time
//	POST /v1/memories/supersede  record that one memory replaces another
//	POST /v1/memories/feedback   record the memories an answer cites
//	GET  /v1/memories/stats      the feedback loop and the memories' state
//
// The handler does no authentication: mount it behind the server's.
package memhttp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"path/filepath"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/ragmem/ragmem/internal/clean"
	"github.com/ragmem/ragmem/internal/jsonbody"
	"github.com/ragmem/ragmem/internal/memory"
	"github.com/ragmem/ragmem/internal/memory/extraction"
	"github.com/ragmem/ragmem/rag"
)

// DefaultPrefix is where the handler expects to be mounted.
const DefaultPrefix = "/v1/memories"

// DefaultMaxBodyBytes caps request bodies (agent outputs for extraction
// included).
const DefaultMaxBodyBytes = 1 << 20

// Resolver returns the memory store a request works on (for example the
// one of the request's namespace). The handler calls it from many requests
// at once: it must be safe for concurrent use.
type Resolver func(r *http.Request) (*memory.Store, error)

// Options configure New. A nil *Options means all defaults.
type Options struct {
	// Prefix is the path the handler is mounted at. Default "/v1/memories".
	Prefix string
	// MaxBodyBytes caps a request body (413 beyond). Default 1 MiB.
	MaxBodyBytes int64
	// LLM enables POST {prefix}/extract. Default nil: extract answers 503.
	LLM *rag.LLM
	// WriteError writes an error response. Default: ragmem's JSON error
	// envelope {"error":{"code","message"}} (internal/jsonbody); pass the
	// server's own writer (server.WriteError, which adds the request id and
	// logs the code).
	WriteError func(w http.ResponseWriter, r *http.Request, status int, code, message string)
	// Logger receives internal errors. Default slog.Default().
	Logger *slog.Logger
	// Fail answers an error that is not the memory store's own (one from
	// the Resolver: a namespace that cannot be opened, say). Default: 500
	// with a message that names nothing of the server; pass the server's
	// own (e.g. server.Server.Fail) to answer them as it does.
	Fail func(w http.ResponseWriter, r *http.Request, err error)
	// ShowPaths reports whether a request may see the memory files' paths
	// and URLs: the user's own processes on the data directory owner's
	// socket (server.IsLocal), whose output then matches a local open.
	// Default nil: no request does.
	ShowPaths func(r *http.Request) bool
}

// New returns the handler. It is safe for concurrent use.
func New(resolve Resolver, opts *Options) http.Handler {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Prefix == "" {
		o.Prefix = DefaultPrefix
	}
	o.Prefix = strings.TrimRight(o.Prefix, "/")
	if o.MaxBodyBytes <= 0 {
		o.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if o.WriteError == nil {
		o.WriteError = writeError
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return &handler{resolve: resolve, o: o}
}

type handler struct {
	resolve Resolver
	o       Options
}

// writeError is the default Options.WriteError: ragmem's JSON error
// envelope, without a request id.
func writeError(w http.ResponseWriter, _ *http.Request, status int, code, message string) {
	jsonbody.WriteError(w, status, code, message, "")
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rest, ok := strings.CutPrefix(r.URL.Path, h.o.Prefix)
	if !ok || (rest != "" && !strings.HasPrefix(rest, "/")) {
		h.o.WriteError(w, r, http.StatusNotFound, jsonbody.CodeNotFound, "no such endpoint: "+clean.Clip(r.URL.Path, 200))
		return
	}
	rest = strings.Trim(rest, "/")
	var allow string
	var fn func(http.ResponseWriter, *http.Request, *memory.Store)
	switch rest {
	case "":
		allow = "GET, POST"
		switch r.Method {
		case http.MethodGet, http.MethodHead:
			fn = h.list
		case http.MethodPost:
			fn = h.add
		}
	case "match", "extract", "refresh", "search", "supersede", "feedback":
		allow = "POST"
		if r.Method == http.MethodPost {
			fn = map[string]func(http.ResponseWriter, *http.Request, *memory.Store){"match": h.match, "extract": h.extract, "refresh": h.refresh,
				"search": h.search, "supersede": h.supersede, "feedback": h.feedback}[rest]
		}
	case "stats":
		allow = "GET"
		if r.Method == http.MethodGet || r.Method == http.MethodHead {
			fn = h.stats
		}
	default:
		if strings.Contains(rest, "/") {
			h.o.WriteError(w, r, http.StatusNotFound, jsonbody.CodeNotFound, "no such endpoint: "+clean.Clip(r.URL.Path, 200))
			return
		}
		allow = "GET"
		if r.Method == http.MethodGet || r.Method == http.MethodHead {
			fn = func(w http.ResponseWriter, r *http.Request, st *memory.Store) { h.show(w, r, st, rest) }
		}
	}
	if fn == nil {
		w.Header().Set("Allow", allow)
		h.o.WriteError(w, r, http.StatusMethodNotAllowed, jsonbody.CodeMethodNotAllowed, fmt.Sprintf("%s is not allowed here; use %s", r.Method, allow))
		return
	}
	if r.ContentLength > h.o.MaxBodyBytes {
		w.Header().Set("Connection", "close")
		h.o.WriteError(w, r, http.StatusRequestEntityTooLarge, jsonbody.CodeTooLarge, tooLarge(h.o.MaxBodyBytes))
		return
	}
	if r.Body != nil && r.Body != http.NoBody {
		r.Body = http.MaxBytesReader(w, r.Body, h.o.MaxBodyBytes)
	}
	st, err := h.resolve(r)
	if err != nil {
		if h.o.Fail != nil && !isMemoryError(err) {
			h.o.Fail(w, r, err)
			return
		}
		h.fail(w, r, err)
		return
	}
	fn(w, r.WithContext(context.WithValue(r.Context(), storeKey{}, st)), st)
}

type storeKey struct{}

// Memory directories are the server's business: no answer names them.
// Memories are named by their slug and file name, and messages that
// mention the directory say "the memory directory" instead.

// hidePaths returns m without the server's paths: its file by name only,
// no file URL (unless Options.ShowPaths allows r to see them).
func (h *handler) hidePaths(r *http.Request, m memory.Memory) memory.Memory {
	if h.o.ShowPaths != nil && h.o.ShowPaths(r) {
		return m
	}
	m.Path, m.URL = m.Slug+".md", ""
	return m
}

// redact replaces the memory directory of the request's store in a
// message.
func redact(r *http.Request, msg string) string {
	st, _ := r.Context().Value(storeKey{}).(*memory.Store)
	if st == nil {
		return msg
	}
	dirs := []string{st.Dir()}
	if abs, err := filepath.Abs(st.Dir()); err == nil {
		dirs = append(dirs, abs)
	}
	for _, d := range dirs {
		if len(d) > 1 {
			msg = strings.ReplaceAll(msg, d, "the memory directory")
		}
	}
	return msg
}

func tooLarge(n int64) string {
	return fmt.Sprintf("request body is larger than the limit of %d bytes", n)
}

// isMemoryError reports whether err is one of the memory store's own.
func isMemoryError(err error) bool {
	for _, e := range []error{memory.ErrNotFound, memory.ErrNotRegular, memory.ErrInvalid, memory.ErrTooLarge, memory.ErrLocked, extraction.ErrModel, extraction.ErrBadExtraction} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// fail maps an error to its status and code. Messages never name the
// server's directories.
func (h *handler) fail(w http.ResponseWriter, r *http.Request, err error) {
	var mbe *http.MaxBytesError
	msg := redact(r, err.Error())
	switch {
	case errors.As(err, &mbe):
		h.o.WriteError(w, r, http.StatusRequestEntityTooLarge, jsonbody.CodeTooLarge, tooLarge(mbe.Limit))
	case errors.Is(err, memory.ErrNotFound):
		h.o.WriteError(w, r, http.StatusNotFound, jsonbody.CodeNotFound, msg)
	case errors.Is(err, memory.ErrNotRegular):
		h.o.WriteError(w, r, http.StatusConflict, jsonbody.CodeConflict, msg)
	case errors.Is(err, memory.ErrInvalid):
		h.o.WriteError(w, r, http.StatusBadRequest, jsonbody.CodeBadRequest, msg)
	case errors.Is(err, memory.ErrTooLarge):
		h.o.WriteError(w, r, http.StatusRequestEntityTooLarge, jsonbody.CodeTooLarge, msg)
	case errors.Is(err, memory.ErrLocked):
		w.Header().Set("Retry-After", "1")
		h.o.WriteError(w, r, http.StatusServiceUnavailable, jsonbody.CodeUnavailable, "the memory directory is busy (another writer holds its lock); retry later")
	case errors.Is(err, extraction.ErrModel), errors.Is(err, extraction.ErrBadExtraction):
		h.o.WriteError(w, r, http.StatusBadGateway, jsonbody.CodeUnavailable, msg)
	case errors.Is(err, syscall.ENOSPC), errors.Is(err, syscall.EDQUOT):
		h.o.Logger.Error("memhttp: disk full", "method", r.Method, "path", r.URL.Path, "err", err)
		h.o.WriteError(w, r, http.StatusInsufficientStorage, jsonbody.CodeDiskFull, "the disk of the server's data directory is full; nothing was written")
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		h.o.WriteError(w, r, http.StatusServiceUnavailable, jsonbody.CodeUnavailable, "the request was cancelled or timed out")
	default:
		h.o.Logger.Error("memhttp: request failed", "method", r.Method, "path", r.URL.Path, "err", err)
		h.o.WriteError(w, r, http.StatusInternalServerError, jsonbody.CodeInternal, "the memory store failed; see the server log")
	}
}

// decode reads one JSON object into v: a wrong content type, unknown
// fields, trailing data and an oversized body are errors. It writes the
// error response and reports false.
func (h *handler) decode(w http.ResponseWriter, r *http.Request, v any) bool {
	if err := jsonbody.ContentType(r.Header.Get("Content-Type")); err != nil {
		h.o.WriteError(w, r, http.StatusUnsupportedMediaType, jsonbody.CodeUnsupportedMedia, err.Error())
		return false
	}
	var body []byte
	if r.Body != nil {
		var err error
		body, err = io.ReadAll(r.Body)
		if err != nil {
			h.fail(w, r, err)
			return false
		}
	}
	if err := jsonbody.Decode(body, v); err != nil {
		h.o.WriteError(w, r, http.StatusBadRequest, jsonbody.CodeInvalidJSON, err.Error())
		return false
	}
	return true
}

// ListResponse is the body of GET /v1/memories.
type ListResponse struct {
	Dir      string           `json:"dir"`
	Memories []memory.Memory  `json:"memories"`
	Problems []memory.Problem `json:"problems"`
}

func (h *handler) list(w http.ResponseWriter, r *http.Request, st *memory.Store) {
	ms, err := st.List(r.Context())
	if err != nil {
		h.fail(w, r, err)
		return
	}
	q := r.URL.Query()
	decayed, superseded := q.Get("decayed") == "true", q.Get("superseded") == "true"
	out := ListResponse{Dir: filepath.Base(st.Dir()), Memories: make([]memory.Memory, 0, len(ms)), Problems: st.Problems()}
	for _, m := range ms {
		if (decayed && !m.Decayed) || (superseded && !m.Superseded()) {
			continue
		}
		out.Memories = append(out.Memories, h.hidePaths(r, m))
	}
	if out.Problems == nil {
		out.Problems = []memory.Problem{}
	}
	jsonbody.Write(w, http.StatusOK, out)
}

// AddRequest is the body of POST /v1/memories.
type AddRequest struct {
	Title           string   `json:"title"`
	Content         string   `json:"content"`
	WhenToUse       []string `json:"whenToUse"`
	Tags            []string `json:"tags,omitempty"`
	Importance      string   `json:"importance,omitempty"` // default medium
	DiscoveredAt    string   `json:"discoveredAt,omitempty"`
	DiscoveredBy    string   `json:"discoveredBy,omitempty"`
	DiscoveredIn    string   `json:"discoveredIn,omitempty"`
	Source          string   `json:"source,omitempty"`
	RelatedMemories []string `json:"relatedMemories,omitempty"`
	// OccurredAt is when what it says happened (ISO 8601).
	OccurredAt string `json:"occurredAt,omitempty"`
	// Negative marks a "don't do X" memory (also set by such a title).
	Negative bool `json:"negative,omitempty"`
	// Supersedes names older memories this one replaces.
	Supersedes []string `json:"supersedes,omitempty"`
	// Separate writes it as its own memory (no consolidation).
	Separate bool `json:"separate,omitempty"`
}

// parseTimeField parses an optional ISO 8601 field, answering 400.
func (h *handler) parseTimeField(w http.ResponseWriter, r *http.Request, name, v string) (time.Time, bool) {
	if v == "" {
		return time.Time{}, true
	}
	t, err := memory.ParseTime(v)
	if err != nil {
		h.o.WriteError(w, r, http.StatusBadRequest, jsonbody.CodeBadRequest, fmt.Sprintf("%s %q is not an ISO 8601 time", name, clean.Clip(v, 60)))
		return t, false
	}
	return t, true
}

// parseAsOf reads an asOf field ("" is none), answering 400 when it
// cannot.
func (h *handler) parseAsOf(w http.ResponseWriter, r *http.Request, v string) (time.Time, bool) {
	if v == "" {
		return time.Time{}, true
	}
	t, err := memory.ParseAsOf(v, time.Now().UTC())
	if err != nil {
		h.o.WriteError(w, r, http.StatusBadRequest, jsonbody.CodeBadRequest,
			fmt.Sprintf("asOf %q is not a time, a date or a period (\"2026-05-01T12:00:00Z\", \"2026-05-01\", \"last March\")", clean.Clip(v, 60)))
		return t, false
	}
	return t, true
}

func (h *handler) add(w http.ResponseWriter, r *http.Request, st *memory.Store) {
	var req AddRequest
	if !h.decode(w, r, &req) {
		return
	}
	nm := memory.NewMemory{
		Frontmatter: memory.Frontmatter{Title: req.Title, WhenToUse: req.WhenToUse, Tags: req.Tags, DiscoveredBy: req.DiscoveredBy,
			DiscoveredIn: req.DiscoveredIn, Source: req.Source, RelatedMemories: req.RelatedMemories, Negative: req.Negative, Supersedes: req.Supersedes},
		Content:  req.Content,
		Separate: req.Separate,
	}
	var ok bool
	if nm.OccurredAt, ok = h.parseTimeField(w, r, "occurredAt", req.OccurredAt); !ok {
		return
	}
	if req.Importance != "" {
		imp, err := memory.ParseImportance(req.Importance)
		if err != nil {
			h.fail(w, r, err)
			return
		}
		nm.Importance = imp
	}
	if req.DiscoveredAt != "" {
		t, err := memory.ParseTime(req.DiscoveredAt)
		if err != nil {
			h.o.WriteError(w, r, http.StatusBadRequest, jsonbody.CodeBadRequest, fmt.Sprintf("discoveredAt %q is not an ISO 8601 time", clean.Clip(req.DiscoveredAt, 60)))
			return
		}
		nm.DiscoveredAt = t
	}
	if strings.TrimSpace(req.Content) == "" {
		h.o.WriteError(w, r, http.StatusBadRequest, jsonbody.CodeBadRequest, "content is empty")
		return
	}
	res, err := st.Add(r.Context(), nm)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	status := http.StatusCreated
	if res.Appended {
		status = http.StatusOK
	}
	res.Memory = h.hidePaths(r, res.Memory)
	w.Header().Set("Location", h.o.Prefix+"/"+res.Memory.Slug)
	jsonbody.Write(w, status, res)
}

// ShowResponse is the body of GET /v1/memories/{name}.
type ShowResponse struct {
	Memory  memory.Memory  `json:"memory"`
	Entries []memory.Entry `json:"entries"`
}

func (h *handler) show(w http.ResponseWriter, r *http.Request, st *memory.Store, name string) {
	m, err := st.Get(r.Context(), name)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	es, err := st.Entries(r.Context(), name)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	jsonbody.Write(w, http.StatusOK, ShowResponse{Memory: h.hidePaths(r, m), Entries: es})
}

// MatchRequest is the body of POST /v1/memories/match.
type MatchRequest struct {
	Task          string   `json:"task"`
	Agent         string   `json:"agent,omitempty"`
	AgentTags     []string `json:"agentTags,omitempty"`
	MaxMemories   int      `json:"maxMemories,omitempty"`   // default 5, at most 50
	MinImportance string   `json:"minImportance,omitempty"` // default low
	NoWeak        bool     `json:"noWeak,omitempty"`
	// Context asks for the context message with the memories' contents.
	Context bool `json:"context,omitempty"`
	// Since and Until (ISO 8601) and When ("last week", "in May") keep the
	// memories of that time; IncludeSuperseded keeps superseded ones too.
	Since             string `json:"since,omitempty"`
	Until             string `json:"until,omitempty"`
	When              string `json:"when,omitempty"`
	IncludeSuperseded bool   `json:"includeSuperseded,omitempty"`
	// AsOf (RFC 3339, a date, or a period as When takes it, read in UTC)
	// matches among the memories that held then (memory.ParseAsOf).
	AsOf string `json:"asOf,omitempty"`
}

// MatchResponse is the body of the answer to POST /v1/memories/match.
type MatchResponse struct {
	Matches []memory.Match `json:"matches"`
	// Message is the untrusted-data context message (when asked for and
	// something matched).
	Message *Message `json:"message,omitempty"`
}

// Message is a chat message.
type Message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

const (
	maxTaskBytes = 16 << 10
	maxMatches   = 50
)

func (h *handler) match(w http.ResponseWriter, r *http.Request, st *memory.Store) {
	var req MatchRequest
	if !h.decode(w, r, &req) {
		return
	}
	if strings.TrimSpace(req.Task) == "" {
		h.o.WriteError(w, r, http.StatusBadRequest, jsonbody.CodeBadRequest, "task is empty")
		return
	}
	if len(req.Task) > maxTaskBytes || !utf8.ValidString(req.Task) {
		h.o.WriteError(w, r, http.StatusBadRequest, jsonbody.CodeBadRequest, fmt.Sprintf("task must be valid UTF-8 of at most %d bytes", maxTaskBytes))
		return
	}
	if req.MaxMemories < 0 || req.MaxMemories > maxMatches {
		h.o.WriteError(w, r, http.StatusBadRequest, jsonbody.CodeBadRequest, fmt.Sprintf("maxMemories must be between 1 and %d", maxMatches))
		return
	}
	mr := memory.MatchRequest{Task: req.Task, Agent: req.Agent, AgentTags: req.AgentTags, MaxMemories: req.MaxMemories, NoWeak: req.NoWeak,
		When: req.When, IncludeSuperseded: req.IncludeSuperseded}
	var ok bool
	if mr.Since, ok = h.parseTimeField(w, r, "since", req.Since); !ok {
		return
	}
	if mr.Until, ok = h.parseTimeField(w, r, "until", req.Until); !ok {
		return
	}
	if mr.AsOf, ok = h.parseAsOf(w, r, req.AsOf); !ok {
		return
	}
	if req.MinImportance != "" {
		imp, err := memory.ParseImportance(req.MinImportance)
		if err != nil {
			h.fail(w, r, err)
			return
		}
		mr.MinImportance = imp
	}
	ms, err := st.Match(r.Context(), mr)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	out := MatchResponse{Matches: make([]memory.Match, 0, len(ms))}
	for _, m := range ms {
		m.Memory = h.hidePaths(r, m.Memory)
		out.Matches = append(out.Matches, m)
	}
	if req.Context && len(ms) > 0 {
		ins, err := st.Load(r.Context(), ms)
		if err != nil {
			h.fail(w, r, err)
			return
		}
		msg := memory.ContextMessage(memory.FormatForPrompt(ins))
		out.Message = &Message{Role: msg.Role, Content: msg.Content}
	}
	jsonbody.Write(w, http.StatusOK, out)
}

// ExtractRequest is the body of POST /v1/memories/extract.
type ExtractRequest struct {
	Agent       string `json:"agent"`
	Task        string `json:"task"`
	AgentOutput string `json:"agentOutput"`
	Result      string `json:"result,omitempty"` // success (default), failure, partial
	Error       string `json:"error,omitempty"`
	DryRun      bool   `json:"dryRun,omitempty"`
	// SupersedeUser lets the extracted memory supersede (or be merged into)
	// memories the user wrote. Default false: it is written beside them,
	// marked as conflicting (see memory.NewMemory.SupersedeUser).
	SupersedeUser bool `json:"supersedeUser,omitempty"`
}

func (h *handler) extract(w http.ResponseWriter, r *http.Request, st *memory.Store) {
	if h.o.LLM == nil {
		h.o.WriteError(w, r, http.StatusServiceUnavailable, jsonbody.CodeUnavailable, "memory extraction is not configured on this server (no language model)")
		return
	}
	var req ExtractRequest
	if !h.decode(w, r, &req) {
		return
	}
	x, err := extraction.New(*h.o.LLM, st, &extraction.Options{DryRun: req.DryRun, SupersedeUser: req.SupersedeUser, Logger: h.o.Logger})
	if err != nil {
		h.fail(w, r, err)
		return
	}
	out, err := x.ExtractMemory(r.Context(), extraction.Input{Agent: req.Agent, Task: req.Task, AgentOutput: req.AgentOutput, Result: req.Result, Error: req.Error})
	if err != nil {
		h.fail(w, r, err)
		return
	}
	status := http.StatusOK
	if out.Written != nil {
		out.Written.Memory = h.hidePaths(r, out.Written.Memory)
		if !out.Written.Appended {
			status = http.StatusCreated
			w.Header().Set("Location", h.o.Prefix+"/"+out.Written.Memory.Slug)
		}
	}
	jsonbody.Write(w, status, out)
}

func (h *handler) refresh(w http.ResponseWriter, r *http.Request, st *memory.Store) {
	if r.ContentLength > 0 {
		var empty struct{}
		if !h.decode(w, r, &empty) {
			return
		}
	}
	rep, err := st.Refresh(r.Context())
	if err != nil {
		h.fail(w, r, err)
		return
	}
	for _, l := range []*[]string{&rep.Added, &rep.Changed, &rep.Removed, &rep.Unchanged} {
		if *l == nil {
			*l = []string{}
		}
	}
	if rep.Problems == nil {
		rep.Problems = []memory.Problem{}
	}
	jsonbody.Write(w, http.StatusOK, rep)
}

// SearchRequest is the body of POST /v1/memories/search.
type SearchRequest struct {
	Query             string `json:"query,omitempty"`
	Since             string `json:"since,omitempty"`
	Until             string `json:"until,omitempty"`
	When              string `json:"when,omitempty"`
	IncludeSuperseded bool   `json:"includeSuperseded,omitempty"`
	Limit             int    `json:"limit,omitempty"` // default 10, at most 100
	// AsOf (RFC 3339, a date, or a period as When takes it, read in UTC)
	// finds the memories that held then (memory.ParseAsOf).
	AsOf string `json:"asOf,omitempty"`
}

// SearchResponse is the answer to POST /v1/memories/search.
type SearchResponse struct {
	Results []memory.Found `json:"results"`
}

func (h *handler) search(w http.ResponseWriter, r *http.Request, st *memory.Store) {
	var req SearchRequest
	if !h.decode(w, r, &req) {
		return
	}
	if len(req.Query) > maxTaskBytes || !utf8.ValidString(req.Query) {
		h.o.WriteError(w, r, http.StatusBadRequest, jsonbody.CodeBadRequest, fmt.Sprintf("query must be valid UTF-8 of at most %d bytes", maxTaskBytes))
		return
	}
	sr := memory.SearchRequest{Query: req.Query, When: req.When, IncludeSuperseded: req.IncludeSuperseded, Limit: req.Limit}
	var ok bool
	if sr.Since, ok = h.parseTimeField(w, r, "since", req.Since); !ok {
		return
	}
	if sr.Until, ok = h.parseTimeField(w, r, "until", req.Until); !ok {
		return
	}
	if sr.AsOf, ok = h.parseAsOf(w, r, req.AsOf); !ok {
		return
	}
	if req.Limit < 0 {
		h.o.WriteError(w, r, http.StatusBadRequest, jsonbody.CodeBadRequest, "limit must be between 1 and 100")
		return
	}
	res, err := st.Search(r.Context(), sr)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	out := SearchResponse{Results: make([]memory.Found, 0, len(res))}
	for _, f := range res {
		f.Memory = h.hidePaths(r, f.Memory)
		out.Results = append(out.Results, f)
	}
	jsonbody.Write(w, http.StatusOK, out)
}

// SupersedeRequest is the body of POST /v1/memories/supersede: newer
// replaces older (for example to confirm a flagged conflict).
type SupersedeRequest struct {
	Newer      string `json:"newer"`
	Older      string `json:"older"`
	Provenance string `json:"provenance,omitempty"` // default "user"
}

func (h *handler) supersede(w http.ResponseWriter, r *http.Request, st *memory.Store) {
	var req SupersedeRequest
	if !h.decode(w, r, &req) {
		return
	}
	res, err := st.Supersede(r.Context(), req.Newer, req.Older, req.Provenance)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	res.Memory = h.hidePaths(r, res.Memory)
	jsonbody.Write(w, http.StatusOK, res)
}

func (h *handler) feedback(w http.ResponseWriter, r *http.Request, st *memory.Store) {
	var req memory.CiteRequest
	if !h.decode(w, r, &req) {
		return
	}
	res, err := st.Cite(r.Context(), req)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	jsonbody.Write(w, http.StatusOK, res)
}

func (h *handler) stats(w http.ResponseWriter, r *http.Request, st *memory.Store) {
	rep, err := st.Stats(r.Context())
	if err != nil {
		h.fail(w, r, err)
		return
	}
	jsonbody.Write(w, http.StatusOK, rep)
}

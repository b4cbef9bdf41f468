package owner

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/ragmem/ragmem/prefs"
	"github.com/ragmem/ragmem/rag"
	"github.com/ragmem/ragmem/search"
	"github.com/ragmem/ragmem/server"
)

// Default timeouts of a Client's requests.
const (
	// DefaultTimeout bounds reads, searches and small writes.
	DefaultTimeout = time.Minute
	// DefaultWriteTimeout bounds a batch of documents, whose embedding may
	// take long with a slow embedder.
	DefaultWriteTimeout = 10 * time.Minute
)

// maxBatchBytes is the largest body IndexMany sends in one request; a
// single larger document goes alone (local listeners accept up to
// the server's default LocalMaxBodyBytes).
const maxBatchBytes = 16 << 20

// maxBatchDocs is the most documents IndexMany sends in one request.
const maxBatchDocs = 1000

// ClientOptions configure NewClient. A nil *ClientOptions means all
// defaults. It is a plain value.
type ClientOptions struct {
	// Token is the bearer token. Default: the main token of the data
	// directory's token file.
	Token string
	// Timeout bounds each read or small write. Default DefaultTimeout.
	Timeout time.Duration
	// WriteTimeout bounds each batch of documents. Default
	// DefaultWriteTimeout.
	WriteTimeout time.Duration
	// Namespace is the namespace every request reaches (sent as
	// server.NamespaceHeader; with the main token any namespace may be
	// named). Default "": the default namespace.
	Namespace string
}

// Client talks to an owner's /v1 API over its Unix socket, with the same
// results as the local engine: its methods mirror rag.Engine's. Every
// request has a timeout, and an owner that goes away fails the request at
// once with an error wrapping ErrGone (see GoneError for whether it had
// been sent). It is safe for concurrent use.
type Client struct {
	info  Info
	base  string
	token string
	hc    *http.Client
	o     ClientOptions
}

// NewClient returns a client of the owner that info describes, for the
// data directory dir (whose token file it reads unless opts gives one).
func NewClient(dir string, info Info, opts *ClientOptions) (*Client, error) {
	var o ClientOptions
	if opts != nil {
		o = *opts
	}
	if o.Token == "" {
		tok, err := mainToken(dir)
		if err != nil {
			return nil, err
		}
		o.Token = tok
	}
	sock := info.Socket
	tr := &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return dial(ctx, sock)
		},
		MaxIdleConnsPerHost:   4,
		IdleConnTimeout:       30 * time.Second,
		ResponseHeaderTimeout: 0, // the request's context bounds it
		DisableCompression:    true,
	}
	return newClient(info, "http://localhost", o, &http.Client{Transport: tr}), nil
}

func newClient(info Info, base string, o ClientOptions, hc *http.Client) *Client {
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.WriteTimeout <= 0 {
		o.WriteTimeout = DefaultWriteTimeout
	}
	return &Client{info: info, base: base, token: o.Token, hc: hc, o: o}
}

func mainToken(dir string) (string, error) {
	toks, err := server.Tokens(dir)
	if err != nil {
		return "", fmt.Errorf("owner: read the API token: %w", err)
	}
	for _, t := range toks {
		if t.Namespace == "" {
			return t.Secret, nil
		}
	}
	return "", fmt.Errorf("owner: no API token in %s (the owner creates it when it starts)", server.TokenPath(dir))
}

// Owner returns what the owner file said about the owner.
func (c *Client) Owner() Info { return c.info }

// HTTPClient returns the HTTP client that reaches the owner (over its
// socket), for other protocols on the same server (MCP).
func (c *Client) HTTPClient() *http.Client { return c.hc }

// Namespace returns the namespace the client's requests reach ("" the
// default one).
func (c *Client) Namespace() string { return c.o.Namespace }

// Token returns the bearer token the client sends.
func (c *Client) Token() string { return c.token }

// Close closes idle connections.
func (c *Client) Close() { c.hc.CloseIdleConnections() }

// APIError is an error answer of the API. It is a plain value.
type APIError struct {
	Status    int
	Code      string
	Message   string
	RequestID string
}

func (e *APIError) Error() string {
	if e.Message == "" {
		return fmt.Sprintf("owner: HTTP %d %s", e.Status, e.Code)
	}
	return e.Message
}

// Unwrap makes errors.Is(err, rag.ErrReserved) hold for the owner's refusal
// of what belongs to the memory or preference store, as it does in process.
func (e *APIError) Unwrap() error {
	if e.Code == server.CodeReserved {
		return rag.ErrReserved
	}
	return nil
}

// GoneError reports that the owner went away (died, was stopped, handed
// over) before answering. It wraps ErrGone. It is a plain value.
type GoneError struct {
	Owner Info
	// Sent is false when the request certainly did not reach the owner
	// (the connection could not be made): it is safe to retry any request.
	// When true, a write may or may not have been applied.
	Sent bool
	Err  error
}

func (e *GoneError) Error() string {
	who := "the owner"
	if e.Owner.PID > 0 {
		who = fmt.Sprintf("the owner (pid %d, %s)", e.Owner.PID, e.Owner.Kind)
	}
	if !e.Sent {
		return fmt.Sprintf("%s cannot be reached: %v", who, e.Err)
	}
	return fmt.Sprintf("%s went away before answering: %v", who, e.Err)
}

func (e *GoneError) Unwrap() []error { return []error{ErrGone, e.Err} }

// Do sends a request to the API and decodes the JSON answer into out
// (when out is not nil). body is encoded as JSON unless it is nil.
// timeout 0 means Options.Timeout.
func (c *Client) Do(ctx context.Context, method, path string, body, out any, timeout time.Duration) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	return c.do(ctx, method, path, rd, out, timeout)
}

func (c *Client) do(ctx context.Context, method, path string, body io.Reader, out any, timeout time.Duration) error {
	if timeout <= 0 {
		timeout = c.o.Timeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, body)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	if c.o.Namespace != "" {
		req.Header.Set(server.NamespaceHeader, c.o.Namespace)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return c.transportError(ctx, err, false)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return c.transportError(ctx, err, true)
	}
	if resp.StatusCode >= 300 {
		var eb server.ErrorBody
		if json.Unmarshal(b, &eb) == nil && eb.Error.Code != "" {
			return &APIError{Status: resp.StatusCode, Code: eb.Error.Code, Message: eb.Error.Message, RequestID: eb.Error.RequestID}
		}
		return &APIError{Status: resp.StatusCode, Code: http.StatusText(resp.StatusCode), Message: strings.TrimSpace(string(b))}
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(b, out); err != nil {
		return fmt.Errorf("owner: unexpected answer to %s %s: %w", method, path, err)
	}
	return nil
}

// transportError classifies a failed exchange: the caller's cancellation,
// a timeout, or an owner gone (dial errors mean the request was not sent).
func (c *Client) transportError(ctx context.Context, err error, sent bool) error {
	if ctx.Err() != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return fmt.Errorf("owner: no answer from the owner (pid %d) within the request's time limit: %w", c.info.PID, ctx.Err())
		}
		return ctx.Err()
	}
	var oe *net.OpError
	if errors.As(err, &oe) && oe.Op == "dial" {
		return &GoneError{Owner: c.info, Sent: false, Err: err}
	}
	if errors.Is(err, syscall.ENOENT) || errors.Is(err, syscall.ECONNREFUSED) {
		return &GoneError{Owner: c.info, Sent: false, Err: err}
	}
	var ue *url.Error
	if !sent && errors.As(err, &ue) {
		sent = true // the connection was made: the request may have been read
	}
	return &GoneError{Owner: c.info, Sent: sent, Err: err}
}

// IndexMany indexes documents synchronously (POST /v1/documents): when it
// returns, each result is final and durable. Documents are sent in as few
// requests as the size limits allow; each request is one atomic write.
func (c *Client) IndexMany(ctx context.Context, docs []rag.Document) ([]rag.Result, error) {
	out := make([]rag.Result, 0, len(docs))
	var batch []server.DocumentRequest
	size := 0
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		var resp server.DocumentsJSON
		err := c.Do(ctx, http.MethodPost, "/v1/documents", server.DocumentsRequest{Documents: batch}, &resp, c.o.WriteTimeout)
		if err != nil {
			return err
		}
		if len(resp.Results) != len(batch) {
			return fmt.Errorf("owner: %d results for %d documents", len(resp.Results), len(batch))
		}
		for _, r := range resp.Results {
			x := rag.Result{SourceURL: r.URL, ContentHash: r.ContentHash, Chunks: r.Chunks, Removed: r.Removed, Unchanged: r.Unchanged, Superseded: r.Superseded}
			if r.Error != "" {
				x.Err = errors.New(r.Error)
				if r.Code == server.CodeReserved {
					x.Err = &APIError{Status: http.StatusForbidden, Code: r.Code, Message: r.Error}
				}
			}
			out = append(out, x)
		}
		batch, size = batch[:0], 0
		return nil
	}
	for _, d := range docs {
		dr := server.DocumentRequest{URL: d.SourceURL, Title: d.Title, Content: d.Content, Format: d.Format.String(), Type: d.DocType, Attrs: d.Attrs, Extracted: d.Extracted}
		n := len(d.Content) + len(d.Title) + len(d.SourceURL) + 256
		if len(batch) > 0 && (size+n > maxBatchBytes || len(batch) >= maxBatchDocs) {
			if err := flush(); err != nil {
				return out, err
			}
		}
		batch = append(batch, dr)
		size += n
	}
	return out, flush()
}

// Index indexes one document (see IndexMany).
func (c *Client) Index(ctx context.Context, d rag.Document) (rag.Result, error) {
	rs, err := c.IndexMany(ctx, []rag.Document{d})
	if err != nil {
		return rag.Result{}, err
	}
	return rs[0], nil
}

// Search runs a query (POST /v1/search). Zero options mean the owner's
// defaults, as with rag.Engine.Search.
func (c *Client) Search(ctx context.Context, query string, o *search.Options) ([]search.Result, error) {
	res, _, err := c.SearchReport(ctx, query, o)
	return res, err
}

// SearchReport is Search that also reports the mode actually used and, when
// it is not the one asked for, why (see rag.Engine.SearchReport; the
// report's Err, which may name servers, stays with the owner).
func (c *Client) SearchReport(ctx context.Context, query string, o *search.Options) ([]search.Result, search.Report, error) {
	if strings.TrimSpace(query) == "" { // a blank query has no results, as in search.Search
		rep := search.Report{Mode: search.Hybrid}
		if o != nil && o.Mode != "" {
			rep.Mode = o.Mode
		}
		return nil, rep, nil
	}
	req := server.SearchRequest{Query: query}
	if o != nil {
		req.Mode, req.Fusion, req.TopK = string(o.Mode), string(o.Fusion), o.TopK
		if o.SimilarityThreshold != 0 {
			t := o.SimilarityThreshold
			req.Threshold = &t
		}
		if o.SourceURL != "" || len(o.DocTypes) > 0 || len(o.Attrs) > 0 {
			req.Filters = &server.SearchFilters{URL: o.SourceURL, DocTypes: o.DocTypes, Attrs: o.Attrs}
		}
		req.Filter = o.Where.String() // "" for nil; the owner parses it back to an equal expression
		switch {
		case o.MaxPerSource < 0:
			n := 0 // no cap
			req.MaxPerSource = &n
		case o.MaxPerSource > 0:
			n := o.MaxPerSource
			req.MaxPerSource = &n
		}
		req.GroupBySource, req.KeepDuplicates = o.GroupBySource, o.KeepDuplicates
	}
	var resp rag.SearchJSON
	if err := c.Do(ctx, http.MethodPost, "/v1/search", req, &resp, 0); err != nil {
		return nil, search.Report{}, err
	}
	out := make([]search.Result, len(resp.Results))
	for i, r := range resp.Results {
		out[i] = search.Result{Record: record(r.ChunkJSON), Score: r.Score, Explanation: r.Explanation, AlsoAt: r.AlsoAt}
	}
	return out, search.Report{Mode: resp.Mode, Degraded: resp.Degraded, Reranked: resp.Reranked, RerankSkipped: resp.RerankSkipped}, nil
}

// record turns an API chunk back into the record it was made from (the
// vector is never sent).
func record(c rag.ChunkJSON) rag.Record {
	return rag.Record{
		ID: c.ID, SourceURL: c.URL, Title: c.Title, HeadingPath: c.HeadingPath, Content: c.Content,
		DocType: c.DocType, Position: c.Position, Start: c.Start, End: c.End, Tokens: c.Tokens,
		CreatedAt: c.CreatedAt.Local(), ContentHash: c.ContentHash, Attrs: c.Attrs,
	}
}

// ContextOptions are BuildContext's request: the model call, and the
// owner's configuration it overrides. It is a plain value.
type ContextOptions struct {
	rag.ContextRequest             // Config is ignored: use the fields below
	Mode               search.Mode // "" : the owner's
	TopK               int         // 0: the owner's
	KnowledgeBudget    int         // 0: the owner's
}

// BuildContext builds the knowledge context for a model call (POST
// /v1/context). The block's sources carry no content (the rendered block,
// Text and Message, has it).
func (c *Client) BuildContext(ctx context.Context, query string, o ContextOptions) (*rag.Context, error) {
	req := server.ContextRequest{
		Query: query, Model: o.Model, ModelContextLimit: o.ModelContextLimit, SystemPrompt: o.SystemPrompt,
		SystemPromptTokens: o.SystemPromptTokens, ResponseReserve: o.ResponseReserve,
		Mode: string(o.Mode), TopK: o.TopK, KnowledgeBudget: o.KnowledgeBudget, Filter: o.Where.String(),
	}
	var resp rag.ContextJSON
	if err := c.Do(ctx, http.MethodPost, "/v1/context", req, &resp, 0); err != nil {
		return nil, err
	}
	out := &rag.Context{
		Budgets:         resp.Budgets,
		UserQueryTokens: resp.Tokens.UserQuery,
		Text:            resp.Text,
	}
	out.Message.Role, out.Message.Content = resp.Message.Role, resp.Message.Content
	out.Block = rag.Block{
		UserProfile: resp.Profile, TotalFound: resp.Found, Summary: resp.Summary,
		TotalTokens: resp.Tokens.Total, ProfileTokens: resp.Tokens.Profile, KnowledgeTokens: resp.Tokens.Knowledge,
		Sources:   make([]rag.Source, len(resp.Sources)),
		Retrieval: search.Report{Mode: resp.Mode, Degraded: resp.Degraded, Reranked: resp.Reranked, RerankSkipped: resp.RerankSkipped},
	}
	for i, s := range resp.Sources {
		out.Block.Sources[i] = rag.Source{
			Index: s.Index, URL: s.URL, Title: s.Title, HeadingPath: s.HeadingPath, Retrieved: s.Retrieved.Local(),
			Age: s.Age, Score: s.Score, Truncated: s.Truncated, ChunkID: s.ChunkID,
		}
	}
	return out, nil
}

// Remove deletes every chunk of a source of any type (DELETE
// /v1/sources); 0 when there is no such source.
func (c *Client) Remove(ctx context.Context, sourceURL string) (int, error) {
	var resp struct {
		Removed int `json:"removed"`
	}
	err := c.Do(ctx, http.MethodDelete, "/v1/sources?url="+url.QueryEscape(sourceURL), nil, &resp, 0)
	var ae *APIError
	if errors.As(err, &ae) && ae.Status == http.StatusNotFound {
		return 0, nil
	}
	return resp.Removed, err
}

// pageLimit is the largest page GET /v1/sources returns.
const pageLimit = 1000

// Sources lists sources (GET /v1/sources), ordered by URL. limit 0 means
// all. The filter's source, attributes and expression are sent as one
// filter expression.
func (c *Client) Sources(ctx context.Context, f rag.Filter, offset, limit int) ([]rag.SourceInfo, int, error) {
	where := rag.FilterExpr(f)
	types := strings.Join(f.DocTypes, ",")
	if types == "" { // any type (the API's default is knowledge)
		types = strings.Join([]string{rag.DocKnowledge, rag.DocMemory, rag.DocPreference}, ",")
	}
	var out []rag.SourceInfo
	total := 0
	for {
		n := pageLimit
		if limit > 0 {
			n = min(pageLimit, limit-len(out))
		}
		q := url.Values{"offset": {strconv.Itoa(offset)}, "limit": {strconv.Itoa(n)}}
		q.Set("type", types)
		if where != nil {
			q.Set("filter", where.String())
		}
		var resp rag.SourcesJSON
		if err := c.Do(ctx, http.MethodGet, "/v1/sources?"+q.Encode(), nil, &resp, 0); err != nil {
			return nil, 0, err
		}
		total = resp.Total
		for _, s := range resp.Sources {
			out = append(out, rag.SourceInfo{
				SourceURL: s.URL, Title: s.Title, DocType: s.DocType, ContentHash: s.ContentHash,
				Chunks: s.Chunks, Tokens: s.Tokens, CreatedAt: s.CreatedAt.Local(),
			})
		}
		offset += len(resp.Sources)
		if len(resp.Sources) < n || offset >= total || (limit > 0 && len(out) >= limit) {
			return out, total, nil
		}
	}
}

// SetURLRules sets the rules by which the store canonicalises source URLs
// and records them (rag.Engine.SetURLRules), through the owner's socket
// only (PUT /v1/owner/url-rules).
func (c *Client) SetURLRules(ctx context.Context, r rag.URLRules) error {
	return c.Do(ctx, http.MethodPut, URLRulesPath, r, nil, 0)
}

// Stats returns the store's statistics (GET /v1/stats).
func (c *Client) Stats(ctx context.Context) (rag.Stats, error) {
	var resp server.StatsJSON
	err := c.Do(ctx, http.MethodGet, "/v1/stats", nil, &resp, 0)
	if !resp.Store.LastSyncTime.IsZero() {
		resp.Store.LastSyncTime = resp.Store.LastSyncTime.Local()
	}
	return resp.Store, err
}

// ListPreferences lists the profile (GET /v1/preferences).
func (c *Client) ListPreferences(ctx context.Context) ([]prefs.Preference, error) {
	var resp struct {
		Preferences []prefs.Preference `json:"preferences"`
	}
	if err := c.Do(ctx, http.MethodGet, "/v1/preferences", nil, &resp, 0); err != nil {
		return nil, err
	}
	if len(resp.Preferences) == 0 {
		return nil, nil
	}
	return resp.Preferences, nil
}

// AddPreference adds a preference (POST /v1/preferences).
func (c *Client) AddPreference(ctx context.Context, t prefs.Type, content string) (prefs.Preference, error) {
	var resp struct {
		Preference prefs.Preference `json:"preference"`
	}
	err := c.Do(ctx, http.MethodPost, "/v1/preferences", server.PreferenceRequest{Type: string(t), Content: content}, &resp, 0)
	return resp.Preference, err
}

// RemovePreference removes one preference; false when there is none with
// that id.
func (c *Client) RemovePreference(ctx context.Context, id string) (bool, error) {
	err := c.Do(ctx, http.MethodDelete, "/v1/preferences?id="+url.QueryEscape(id), nil, nil, 0)
	var ae *APIError
	if errors.As(err, &ae) && ae.Status == http.StatusNotFound {
		return false, nil
	}
	return err == nil, err
}

// ClearPreferences removes every preference and returns how many there
// were.
func (c *Client) ClearPreferences(ctx context.Context) (int, error) {
	var resp struct {
		Removed int `json:"removed"`
	}
	err := c.Do(ctx, http.MethodDelete, "/v1/preferences?all=true", nil, &resp, 0)
	return resp.Removed, err
}

// Status asks the owner who it is and who uses it (GET /v1/owner).
func (c *Client) Status(ctx context.Context) (Status, error) {
	var st Status
	err := c.Do(ctx, http.MethodGet, StatusPath, nil, &st, 0)
	return st, err
}

// Handover asks the owner to hand the data directory over: it stops
// answering, finishes what it is doing, closes the store and exits,
// releasing the lock. It returns once the owner has agreed; wait for the
// lock (Join) to take over. An owner that does not hand over (`ragmem
// serve`) answers with an error wrapping ErrHandoverRefused.
func (c *Client) Handover(ctx context.Context) error {
	err := c.Do(ctx, http.MethodPost, HandoverPath, struct{}{}, nil, 0)
	var ae *APIError
	if errors.As(err, &ae) && ae.Status == http.StatusConflict {
		return fmt.Errorf("%w: %s", ErrHandoverRefused, ae.Message)
	}
	return err
}

// ErrLeaving: the owner said it is leaving (it stops). ErrHandingOver:
// it is leaving because another process takes over.
var (
	ErrLeaving     = errors.New("owner: the owner is leaving")
	ErrHandingOver = fmt.Errorf("%w: another process takes over", ErrLeaving)
)

// Attach keeps this process attached to the owner as a client of kind
// ("mcp"), so that the owner counts it (a background owner does not exit
// while it is attached) and `ragmem status` lists it. It returns when ctx
// ends (ctx's error), when the owner says it is leaving (ErrLeaving), or
// when the owner goes away (an error wrapping ErrGone). ready, if not nil,
// is called after the first attach.
func (c *Client) Attach(ctx context.Context, kind string, ready func()) error {
	path := AttachPath + "?" + url.Values{"pid": {strconv.Itoa(os.Getpid())}, "kind": {kind}}.Encode()
	for {
		ended, err := c.attachOnce(ctx, path, ready)
		ready = nil
		if err != nil {
			return err
		}
		switch ended {
		case "leaving":
			return ErrLeaving
		case "leaving handover":
			return ErrHandingOver
		case "renew":
			continue
		default:
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return &GoneError{Owner: c.info, Sent: true, Err: errors.New("the attach stream ended")}
		}
	}
}

// attachOnce holds one attach stream and returns its last line; ready,
// if not nil, is called when the owner has said "ok".
func (c *Client) attachOnce(ctx context.Context, path string, ready func()) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base+path, nil)
	if err != nil {
		return "", err
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	resp, err := c.hc.Do(req)
	if err != nil {
		return "", c.transportError(ctx, err, false)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		var eb server.ErrorBody
		if json.Unmarshal(b, &eb) == nil && eb.Error.Code != "" {
			return "", &APIError{Status: resp.StatusCode, Code: eb.Error.Code, Message: eb.Error.Message}
		}
		return "", &APIError{Status: resp.StatusCode, Message: strings.TrimSpace(string(b))}
	}
	// Each line comes within attachHeartbeat; a silent owner is a hung one.
	lines := make(chan string)
	done := make(chan struct{})
	var wg sync.WaitGroup
	defer func() {
		close(done)
		resp.Body.Close()
		wg.Wait()
	}()
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer close(lines)
		buf := make([]byte, 64)
		var line []byte
		for {
			n, err := resp.Body.Read(buf)
			for _, b := range buf[:n] {
				if b == '\n' {
					select {
					case lines <- string(line):
					case <-done:
						return
					}
					line = line[:0]
				} else if len(line) < 64 {
					line = append(line, b)
				}
			}
			if err != nil {
				return
			}
		}
	}()
	last := ""
	for {
		t := time.NewTimer(3 * attachHeartbeat)
		select {
		case l, ok := <-lines:
			t.Stop()
			if !ok {
				return last, nil
			}
			last = l
			if l == "ok" && ready != nil {
				ready()
				ready = nil
			}
			if strings.HasPrefix(l, "leaving") || l == "renew" {
				return l, nil
			}
		case <-t.C:
			return "", &GoneError{Owner: c.info, Sent: true, Err: errors.New("the owner stopped answering")}
		case <-ctx.Done():
			t.Stop()
			return "", ctx.Err()
		}
	}
}

// RemoveWhere removes the knowledge sources that pass where (POST
// /v1/sources:delete), as rag.Engine.RemoveWhere does; nil where needs
// all. Kept lists the sources of the memory and preference stores that
// passed and were left alone.
func (c *Client) RemoveWhere(ctx context.Context, where *rag.Expr, all, dryRun bool) (rag.WhereRemoval, error) {
	req := server.DeleteSourcesRequest{All: all, DryRun: dryRun}
	if where != nil {
		req.Filter = where.String()
	}
	var resp server.DeleteSourcesJSON
	if err := c.Do(ctx, http.MethodPost, "/v1/sources:delete", req, &resp, c.o.WriteTimeout); err != nil {
		return rag.WhereRemoval{}, err
	}
	out := rag.WhereRemoval{Chunks: resp.Chunks}
	conv := func(s rag.SourceJSON) rag.SourceInfo {
		return rag.SourceInfo{SourceURL: s.URL, Title: s.Title, DocType: s.DocType, ContentHash: s.ContentHash, Chunks: s.Chunks, Tokens: s.Tokens, CreatedAt: s.CreatedAt.Local()}
	}
	for _, s := range resp.Sources {
		out.Sources = append(out.Sources, conv(s))
	}
	for _, s := range resp.KeptSources {
		out.Kept = append(out.Kept, conv(s))
	}
	return out, nil
}

// SetAttrs changes a source's attributes without embedding it again
// (PATCH /v1/sources), as rag.Engine.SetAttrs does; an unknown source
// fails with an error wrapping rag.ErrNotFound.
func (c *Client) SetAttrs(ctx context.Context, sourceURL string, set map[string]string, unset []string) (int, error) {
	patch := map[string]*string{}
	for k, v := range set {
		patch[k] = &v
	}
	for _, k := range unset {
		if _, ok := patch[k]; ok {
			return 0, fmt.Errorf("%w: key %q is both set and removed", rag.ErrBadAttrs, k)
		}
		patch[k] = nil
	}
	var resp server.SetAttrsJSON
	err := c.Do(ctx, http.MethodPatch, "/v1/sources?url="+url.QueryEscape(sourceURL), server.SetAttrsRequest{Attrs: patch}, &resp, 0)
	var ae *APIError
	if errors.As(err, &ae) && ae.Status == http.StatusNotFound {
		return 0, fmt.Errorf("%w: %s", rag.ErrNotFound, ae.Message)
	}
	return resp.Changed, err
}

package rag

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/ragmem/ragmem/index"

	"github.com/ragmem/ragmem/internal/jsonbody"
	"github.com/ragmem/ragmem/prefs"
)

// Default timeouts of a Client's requests.
const (
	// DefaultTimeout bounds reads, searches and small writes.
	DefaultTimeout = time.Minute
	// DefaultWriteTimeout bounds a batch of documents, whose embedding may
	// take long with a slow embedder.
	DefaultWriteTimeout = 10 * time.Minute
)

// URLRulesPath is where a data directory's owner takes the store's URL
// rules (PUT): an owner-only route, served on its socket.
const URLRulesPath = "/v1/owner/url-rules"

// ClientOptions configure Dial. A nil *ClientOptions means all defaults.
type ClientOptions struct {
	// HTTPClient sends the requests. Default: a client of its own (the
	// owner's client dials its Unix socket).
	HTTPClient *http.Client
	// Timeout bounds each read or small write. Default DefaultTimeout.
	Timeout time.Duration
	// WriteTimeout bounds each batch of documents. Default
	// DefaultWriteTimeout.
	WriteTimeout time.Duration
	// TransportError, when set, turns a failed exchange (no answer) into
	// the error the client returns; sent says whether the request may
	// have reached the server. Default: the error as it is.
	TransportError func(ctx context.Context, err error, sent bool) error
	// Namespace is the namespace every request reaches (sent as
	// NamespaceHeader; with the main token any namespace may be named).
	// Default "": the token's own, or the default namespace.
	Namespace string
}

// NamespaceHeader selects the namespace of a request made with the main
// token.
const NamespaceHeader = "X-Ragmem-Namespace"

// Client is the Memory of a ragmem API (/v1) over HTTP: a `ragmem serve`
// on another port or host, or the owner of a data directory over its Unix
// socket. Its answers are the engine's: the same wire types, and failures
// as *Error with the API's code. Every request has a timeout. It is safe
// for concurrent use.
type Client struct {
	base  string
	token string
	hc    *http.Client
	o     ClientOptions
}

// Dial returns a client of the API at base ("http://host:port"), sending
// token as its bearer token. It sends nothing until the first call.
func Dial(base, token string, opts *ClientOptions) (*Client, error) {
	var o ClientOptions
	if opts != nil {
		o = *opts
	}
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("rag: %q is not the base URL of an API (like http://127.0.0.1:7070)", base)
	}
	if o.HTTPClient == nil {
		o.HTTPClient = &http.Client{}
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.WriteTimeout <= 0 {
		o.WriteTimeout = DefaultWriteTimeout
	}
	return &Client{base: strings.TrimRight(base, "/"), token: token, hc: o.HTTPClient, o: o}, nil
}

// Close closes idle connections.
func (c *Client) Close() error {
	c.hc.CloseIdleConnections()
	return nil
}

// Do sends a request to the API and decodes the JSON answer into out
// (when out is not nil): for the routes the contract does not cover (an
// owner's status, an export to a file). body is encoded as JSON unless it
// is nil. timeout 0 means ClientOptions.Timeout. An error answer is an
// *Error.
func (c *Client) Do(ctx context.Context, method, path string, body, out any, timeout time.Duration) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	if timeout <= 0 {
		timeout = c.o.Timeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	if c.o.Namespace != "" {
		req.Header.Set(NamespaceHeader, c.o.Namespace)
	}
	if rd != nil {
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
		var eb jsonbody.ErrorBody
		if json.Unmarshal(b, &eb) == nil && eb.Error.Code != "" {
			return &Error{Status: resp.StatusCode, Code: eb.Error.Code, Message: eb.Error.Message, RequestID: eb.Error.RequestID}
		}
		return &Error{Status: resp.StatusCode, Code: statusCode(resp.StatusCode), Message: strings.TrimSpace(string(b))}
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(b, out); err != nil {
		return fmt.Errorf("rag: unexpected answer to %s %s: %w", method, path, err)
	}
	return nil
}

// statusCode is the API's code of an answer without an error body.
func statusCode(status int) string {
	switch status {
	case http.StatusNotFound:
		return jsonbody.CodeNotFound
	case http.StatusBadRequest:
		return jsonbody.CodeBadRequest
	case http.StatusServiceUnavailable:
		return jsonbody.CodeUnavailable
	}
	return http.StatusText(status)
}

// transportError is a failed exchange: the caller's cancellation, or what
// ClientOptions.TransportError makes of it.
func (c *Client) transportError(ctx context.Context, err error, sent bool) error {
	if ctx.Err() != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return fmt.Errorf("rag: no answer from %s within the request's time limit: %w", c.base, ctx.Err())
		}
		return ctx.Err()
	}
	if c.o.TransportError != nil {
		return c.o.TransportError(ctx, err, sent)
	}
	return err
}

// maxBatchBytes is the largest body Index sends in one request; a single
// larger document goes alone.
const maxBatchBytes = 16 << 20

// Index indexes documents synchronously (see Memory). Documents are sent
// in as few requests as the API's size limits allow; each request is one
// atomic write.
func (c *Client) Index(ctx context.Context, req DocumentsRequest) (*DocumentsJSON, error) {
	if len(req.Documents) == 0 {
		return nil, badRequest("documents is empty")
	}
	out := &DocumentsJSON{Results: make([]DocumentResult, 0, len(req.Documents))}
	var batch []DocumentRequest
	size := 0
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		var resp DocumentsJSON
		if err := c.Do(ctx, http.MethodPost, "/v1/documents", DocumentsRequest{Documents: batch}, &resp, c.o.WriteTimeout); err != nil {
			return err
		}
		if len(resp.Results) != len(batch) {
			return fmt.Errorf("rag: %d results for %d documents", len(resp.Results), len(batch))
		}
		out.Results = append(out.Results, resp.Results...)
		batch, size = batch[:0], 0
		return nil
	}
	for _, d := range req.Documents {
		n := len(d.Content) + len(d.Title) + len(d.URL) + 256
		if len(batch) > 0 && (size+n > maxBatchBytes || len(batch) >= maxDocuments) {
			if err := flush(); err != nil {
				return out, err
			}
		}
		batch = append(batch, d)
		size += n
	}
	return out, flush()
}

// IndexPage queues a page (see Memory).
func (c *Client) IndexPage(ctx context.Context, req PageRequest) (*PageAccepted, error) {
	var out PageAccepted
	if err := c.Do(ctx, http.MethodPost, "/v1/pages", req, &out, 0); err != nil {
		return nil, err
	}
	return &out, nil
}

// Job reports a background job (see Memory).
func (c *Client) Job(ctx context.Context, id string) (*JobJSON, error) {
	var out JobJSON
	if err := c.Do(ctx, http.MethodGet, "/v1/jobs/"+url.PathEscape(id), nil, &out, 0); err != nil {
		return nil, err
	}
	return &out, nil
}

// Jobs lists the background jobs (see Memory).
func (c *Client) Jobs(ctx context.Context, req JobsRequest) (*JobsJSON, error) {
	q := url.Values{}
	if len(req.States) > 0 {
		q.Set("state", strings.Join(req.States, ","))
	}
	if req.Limit != 0 {
		q.Set("limit", strconv.Itoa(req.Limit))
	}
	var out JobsJSON
	if err := c.Do(ctx, http.MethodGet, "/v1/jobs?"+q.Encode(), nil, &out, 0); err != nil {
		return nil, err
	}
	return &out, nil
}

// noJob makes a 404 of a dead-job operation match ErrNoJob, as the
// engine's does.
func noJob(err error) error {
	var e *Error
	if errors.As(err, &e) && e.Code == jsonbody.CodeNotFound && e.Err == nil {
		e.Err = ErrNoJob
	}
	return err
}

// RetryJob queues a dead job again (see Memory).
func (c *Client) RetryJob(ctx context.Context, id string) (*JobJSON, error) {
	var out JobJSON
	if err := c.Do(ctx, http.MethodPost, "/v1/jobs/"+url.PathEscape(id)+"/retry", struct{}{}, &out, 0); err != nil {
		return nil, noJob(err)
	}
	return &out, nil
}

// DropJob deletes a dead job (see Memory).
func (c *Client) DropJob(ctx context.Context, id string) error {
	return noJob(c.Do(ctx, http.MethodDelete, "/v1/jobs/"+url.PathEscape(id), nil, nil, 0))
}

// Search retrieves passages (see Memory).
func (c *Client) Search(ctx context.Context, req SearchRequest) (*SearchJSON, error) {
	var out SearchJSON
	if err := c.Do(ctx, http.MethodPost, "/v1/search", req, &out, 0); err != nil {
		return nil, err
	}
	return &out, nil
}

// BuildContext builds the knowledge context for a model call (see
// Memory).
func (c *Client) BuildContext(ctx context.Context, req ContextRequest) (*ContextJSON, error) {
	var out ContextJSON
	if err := c.Do(ctx, http.MethodPost, "/v1/context", req, &out, 0); err != nil {
		return nil, err
	}
	return &out, nil
}

// Sources lists the stored sources (see Memory).
func (c *Client) Sources(ctx context.Context, req SourcesRequest) (*SourcesJSON, error) {
	q := url.Values{}
	if len(req.Types) > 0 {
		q.Set("type", strings.Join(req.Types, ","))
	}
	if req.Filter != "" {
		q.Set("filter", req.Filter)
	}
	if req.Offset != 0 {
		q.Set("offset", strconv.Itoa(req.Offset))
	}
	if req.Limit != 0 {
		q.Set("limit", strconv.Itoa(req.Limit))
	}
	var out SourcesJSON
	if err := c.Do(ctx, http.MethodGet, "/v1/sources?"+q.Encode(), nil, &out, 0); err != nil {
		return nil, err
	}
	return &out, nil
}

// Page returns a stored page's chunks (see Memory).
func (c *Client) Page(ctx context.Context, u string) (*PageJSON, error) {
	var out PageJSON
	if err := c.Do(ctx, http.MethodGet, "/v1/pages?url="+url.QueryEscape(u), nil, &out, 0); err != nil {
		return nil, err
	}
	return &out, nil
}

// ForgetPage removes a page (see Memory).
func (c *Client) ForgetPage(ctx context.Context, u string) (*ForgetJSON, error) {
	var out ForgetJSON
	if err := c.Do(ctx, http.MethodDelete, "/v1/pages?url="+url.QueryEscape(u), nil, &out, 0); err != nil {
		return nil, err
	}
	return &out, nil
}

// Remove deletes every chunk of a source (see Memory); 0 when there is no
// such source.
func (c *Client) Remove(ctx context.Context, u string) (int, error) {
	var out struct {
		Removed int `json:"removed"`
	}
	err := c.Do(ctx, http.MethodDelete, "/v1/sources?url="+url.QueryEscape(u), nil, &out, 0)
	if ErrorCode(err) == jsonbody.CodeNotFound {
		return 0, nil
	}
	return out.Removed, err
}

// Preferences lists the profile (see Memory).
func (c *Client) Preferences(ctx context.Context) ([]prefs.Preference, error) {
	var out struct {
		Preferences []prefs.Preference `json:"preferences"`
	}
	if err := c.Do(ctx, http.MethodGet, "/v1/preferences", nil, &out, 0); err != nil {
		return nil, err
	}
	if out.Preferences == nil {
		out.Preferences = []prefs.Preference{}
	}
	return out.Preferences, nil
}

// AddPreference adds a preference (see Memory).
func (c *Client) AddPreference(ctx context.Context, req PreferenceRequest) (*prefs.Preference, error) {
	var out struct {
		Preference prefs.Preference `json:"preference"`
	}
	if err := c.Do(ctx, http.MethodPost, "/v1/preferences", req, &out, 0); err != nil {
		return nil, err
	}
	return &out.Preference, nil
}

// RemovePreference removes one preference (see Memory).
func (c *Client) RemovePreference(ctx context.Context, id string) error {
	if strings.TrimSpace(id) == "" {
		return badRequest("id is required")
	}
	return c.Do(ctx, http.MethodDelete, "/v1/preferences?id="+url.QueryEscape(id), nil, nil, 0)
}

// ClearPreferences removes every preference (see Memory).
func (c *Client) ClearPreferences(ctx context.Context) (int, error) {
	var out struct {
		Removed int `json:"removed"`
	}
	err := c.Do(ctx, http.MethodDelete, "/v1/preferences?all=true", nil, &out, 0)
	return out.Removed, err
}

// DetectPreferences finds preference statements (see Memory).
func (c *Client) DetectPreferences(ctx context.Context, req DetectRequest) (*DetectJSON, error) {
	var out DetectJSON
	if err := c.Do(ctx, http.MethodPost, "/v1/preferences/detect", req, &out, 0); err != nil {
		return nil, err
	}
	return &out, nil
}

// SetURLRules sets the store's URL rules (see Memory): a route of a data
// directory's owner, on its socket only.
func (c *Client) SetURLRules(ctx context.Context, r index.URLRules) error {
	return c.Do(ctx, http.MethodPut, URLRulesPath, r, nil, 0)
}

// Stats describes the store (see Memory).
func (c *Client) Stats(ctx context.Context) (index.Stats, error) {
	var out struct {
		Store index.Stats `json:"store"`
	}
	err := c.Do(ctx, http.MethodGet, "/v1/stats", nil, &out, 0)
	if !out.Store.LastSyncTime.IsZero() {
		out.Store.LastSyncTime = out.Store.LastSyncTime.Local()
	}
	return out.Store, err
}

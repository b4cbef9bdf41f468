// Package rerank is a client of the /rerank protocol that reranking servers
// share: a query and documents in, one relevance score per document out.
// It speaks the variants in use:
//
//   - Cohere (POST /v1/rerank or /v2/rerank) and Jina (POST /v1/rerank):
//     {model, query, documents, top_n} → {results: [{index, relevance_score}]};
//   - llama.cpp's server started with --reranking (POST /rerank or
//     /v1/rerank) and vLLM (POST /rerank or /v1/rerank): the same shape;
//   - Hugging Face Text Embeddings Inference (POST /rerank):
//     {query, texts, truncate} → [{index, score}].
//
// The request's shape follows the URL (a path ending in /v1/rerank or
// /v2/rerank is Cohere's; a bare /rerank gets a request that carries the
// documents under both names, which TEI, llama.cpp and vLLM each read), or
// Options.API; the answer is read in either shape, whichever the server
// sends. Its calls go through an embed.Circuit, the circuit breaker the
// embedder uses: a reranker that times out or fails is given up on at once
// until the circuit lets a trial call through, and search keeps the fused
// order meanwhile (search.Options.Reranker).
package rerank

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/ragmem/ragmem/internal/embed"
)

// The protocols (Options.API).
const (
	APIAuto   = ""       // by the URL's path
	APICohere = "cohere" // Cohere, Jina, llama.cpp, vLLM: {query, documents, top_n}
	APITEI    = "tei"    // Hugging Face TEI: {query, texts}
)

// Defaults.
const (
	DefaultTimeout = 3 * time.Second
	// MaxDocumentBytes bounds each document sent: a reranker reads a
	// passage, not a book (a session unit may be long).
	MaxDocumentBytes = 8 << 10
	// maxResponseBytes bounds the answer read.
	maxResponseBytes = 4 << 20
)

// Errors.
var (
	// ErrUnavailable is wrapped by the errors of a reranker that is down
	// (its circuit is open, or a call failed in a way that counts as an
	// outage).
	ErrUnavailable = errors.New("rerank: reranker unavailable")
	// ErrBadResponse: the reranker answered with something that is not a
	// rerank response (not JSON, an index out of range or repeated, a
	// score that is not a finite number, a document left unscored).
	ErrBadResponse = errors.New("rerank: invalid response")
	// ErrBadOptions: the options cannot make a client.
	ErrBadOptions = errors.New("rerank: invalid options")
)

// Options configure New.
type Options struct {
	// URL is the rerank endpoint: "http://localhost:8080/rerank" (TEI,
	// llama.cpp, vLLM), "https://api.cohere.com/v2/rerank",
	// "https://api.jina.ai/v1/rerank". A URL without a path, or one
	// ending in /v1 or /v2, gets /rerank appended.
	URL string
	// API forces the request's shape: APICohere or APITEI. Default
	// APIAuto: by the path (see the package documentation).
	API string
	// Model names the model, for servers that serve several (Cohere and
	// Jina require it). Default none.
	Model string
	// APIKey is sent as "Authorization: Bearer KEY". Default none.
	APIKey string
	// Timeout bounds one call; running out of it counts as an outage.
	// Default DefaultTimeout.
	Timeout time.Duration
	// Breaker configures the circuit. Default: it opens after one outage
	// failure (Failures 1: a rerank is optional, so one slow call is all a
	// search should pay), and embed's defaults for the rest.
	Breaker *embed.BreakerOptions
	// Client is the HTTP client. Default a client of its own.
	Client *http.Client
}

// Client is a reranker over HTTP. It implements search.Reranker and is
// safe for concurrent use.
type Client struct {
	url     string
	api     string
	model   string
	key     string
	timeout time.Duration
	hc      *http.Client
	circuit *embed.Circuit
}

// New returns a client. It does not contact the server.
func New(o Options) (*Client, error) {
	u, err := url.Parse(strings.TrimSpace(o.URL))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("%w: the reranker URL %q is not an http or https URL", ErrBadOptions, redact(o.URL))
	}
	p := strings.TrimRight(u.Path, "/")
	if p == "" || strings.HasSuffix(p, "/v1") || strings.HasSuffix(p, "/v2") {
		p += "/rerank"
	}
	u.Path = p
	api := strings.ToLower(strings.TrimSpace(o.API))
	switch api {
	case APIAuto, APICohere, APITEI:
	case "jina", "llamacpp", "llama.cpp", "vllm":
		api = APICohere
	default:
		return nil, fmt.Errorf("%w: unknown reranker API %q (want cohere or tei)", ErrBadOptions, o.API)
	}
	if api == APIAuto && (strings.HasSuffix(p, "/v1/rerank") || strings.HasSuffix(p, "/v2/rerank")) {
		api = APICohere
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	bo := embed.BreakerOptions{Failures: 1}
	if o.Breaker != nil {
		bo = *o.Breaker
	}
	hc := o.Client
	if hc == nil {
		hc = &http.Client{}
	}
	return &Client{
		url: u.String(), api: api, model: o.Model, key: o.APIKey, timeout: o.Timeout, hc: hc,
		circuit: embed.NewCircuit(&bo, ErrUnavailable, outage),
	}, nil
}

// State reports the client's circuit breaker.
func (c *Client) State() embed.BreakerState { return c.circuit.State() }

// Rerank implements search.Reranker: one score per document, in the order
// of docs. While the circuit is open it fails at once.
func (c *Client) Rerank(ctx context.Context, query string, docs []string) ([]float64, error) {
	if len(docs) == 0 {
		return nil, nil
	}
	if err := c.circuit.Admit(); err != nil {
		return nil, err
	}
	cctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	scores, err := c.call(cctx, query, docs)
	if err != nil && ctx.Err() == nil && cctx.Err() != nil {
		err = &Error{reason: "it does not answer in time", err: fmt.Errorf("no answer within %s: %w", c.timeout, context.DeadlineExceeded)}
	}
	return scores, c.circuit.Done(ctx, err)
}

// request is the body sent: Cohere's fields, TEI's, or (auto) both.
type request struct {
	Model     string   `json:"model,omitempty"`
	Query     string   `json:"query"`
	Documents []string `json:"documents,omitempty"`
	TopN      int      `json:"top_n,omitempty"`
	Texts     []string `json:"texts,omitempty"`
	Truncate  *bool    `json:"truncate,omitempty"`
}

func (c *Client) call(ctx context.Context, query string, docs []string) ([]float64, error) {
	docs = clip(docs)
	body := request{Model: c.model, Query: query}
	if c.api != APITEI {
		body.Documents, body.TopN = docs, len(docs)
	}
	if c.api != APICohere {
		t := true
		body.Texts, body.Truncate = docs, &t
	}
	buf, err := json.Marshal(body)
	if err != nil {
		return nil, &Error{reason: "the request cannot be encoded", err: err}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, bytes.NewReader(buf))
	if err != nil {
		return nil, &Error{reason: "the request cannot be made", err: err}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	if c.key != "" {
		req.Header.Set("Authorization", "Bearer "+c.key)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, &Error{reason: embed.Reason(err), err: fmt.Errorf("request to %s failed: %w", redact(c.url), err)}
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes+1))
	if err != nil {
		return nil, &Error{reason: "its answer cannot be read", err: fmt.Errorf("reading the answer of %s: %w", redact(c.url), err)}
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return nil, &Error{Status: resp.StatusCode, reason: statusReason(resp.StatusCode),
			err: fmt.Errorf("%s returned HTTP %d: %s", redact(c.url), resp.StatusCode, snippet(data))}
	}
	if len(data) > maxResponseBytes {
		return nil, &Error{reason: "it returns invalid answers", err: fmt.Errorf("%w: the answer is larger than %d bytes", ErrBadResponse, maxResponseBytes)}
	}
	scores, err := ParseResponse(data, len(docs))
	if err != nil {
		return nil, &Error{reason: "it returns invalid answers", err: err}
	}
	return scores, nil
}

// clip cuts each document to MaxDocumentBytes, at a rune boundary.
func clip(docs []string) []string {
	var out []string
	for i, d := range docs {
		if len(d) <= MaxDocumentBytes {
			continue
		}
		if out == nil {
			out = append([]string(nil), docs...)
		}
		cut := MaxDocumentBytes
		for cut > 0 && d[cut]&0xC0 == 0x80 {
			cut--
		}
		out[i] = d[:cut]
	}
	if out == nil {
		return docs
	}
	return out
}

// item is one scored document of either shape.
type item struct {
	Index          *int     `json:"index"`
	RelevanceScore *float64 `json:"relevance_score"`
	Score          *float64 `json:"score"`
}

// ParseResponse reads a rerank answer for n documents, in either shape:
// an object whose "results" (Cohere, Jina, llama.cpp, vLLM; "data" is
// accepted too) lists {index, relevance_score}, or a bare list of {index,
// score} (TEI, and llama.cpp given "texts"). It returns the scores in the
// order of the documents. Every document must be scored exactly once, with
// an index in [0, n) and a finite score; anything else is an error
// wrapping ErrBadResponse.
func ParseResponse(data []byte, n int) ([]float64, error) {
	data = bytes.TrimSpace(data)
	var items []item
	switch {
	case len(data) > 0 && data[0] == '[':
		if err := json.Unmarshal(data, &items); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrBadResponse, err)
		}
	case len(data) > 0 && data[0] == '{':
		var obj struct {
			Results *[]item `json:"results"`
			Data    *[]item `json:"data"`
		}
		if err := json.Unmarshal(data, &obj); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrBadResponse, err)
		}
		switch {
		case obj.Results != nil:
			items = *obj.Results
		case obj.Data != nil:
			items = *obj.Data
		default:
			return nil, fmt.Errorf("%w: no \"results\" in the answer", ErrBadResponse)
		}
	default:
		return nil, fmt.Errorf("%w: the answer is not a JSON object or list", ErrBadResponse)
	}
	if len(items) != n {
		return nil, fmt.Errorf("%w: %d scores for %d documents", ErrBadResponse, len(items), n)
	}
	scores := make([]float64, n)
	seen := make([]bool, n)
	for k, it := range items {
		if it.Index == nil {
			return nil, fmt.Errorf("%w: result %d has no index", ErrBadResponse, k)
		}
		i := *it.Index
		if i < 0 || i >= n {
			return nil, fmt.Errorf("%w: result %d has index %d, out of [0, %d)", ErrBadResponse, k, i, n)
		}
		if seen[i] {
			return nil, fmt.Errorf("%w: document %d is scored twice", ErrBadResponse, i)
		}
		s := it.RelevanceScore
		if s == nil {
			s = it.Score
		}
		if s == nil {
			return nil, fmt.Errorf("%w: result %d has no relevance_score or score", ErrBadResponse, k)
		}
		if math.IsNaN(*s) || math.IsInf(*s, 0) {
			return nil, fmt.Errorf("%w: result %d's score is not a finite number", ErrBadResponse, k)
		}
		seen[i], scores[i] = true, *s
	}
	return scores, nil
}

// Error is a failed rerank call. Its Reason says what is wrong in words
// that name no address, query or key (for clients); Error has the detail
// (for logs).
type Error struct {
	Status int // the HTTP status, when the server answered with an error
	reason string
	err    error
}

func (e *Error) Error() string { return "rerank: " + e.err.Error() }

// Unwrap returns the failure.
func (e *Error) Unwrap() error { return e.err }

// Reason says what the failure means, in words.
func (e *Error) Reason() string { return e.reason }

func statusReason(code int) string {
	switch {
	case code == http.StatusUnauthorized || code == http.StatusForbidden:
		return fmt.Sprintf("it refuses the request (HTTP %d): check the reranker's API key", code)
	case code == http.StatusTooManyRequests || code >= 500:
		return fmt.Sprintf("it answers with errors (HTTP %d)", code)
	}
	return fmt.Sprintf("it refuses the request (HTTP %d)", code)
}

// outage reports whether a failure counts against the reranker: it cannot
// be reached, it does not answer in time, it answers 5xx or 429, or it
// answers something that is not a rerank answer. A request it refuses
// (another 4xx) is this request's problem, not the server's.
func outage(err error) bool {
	var e *Error
	if errors.As(err, &e) && e.Status != 0 {
		return e.Status == http.StatusTooManyRequests || e.Status == http.StatusRequestTimeout || e.Status >= 500
	}
	return err != nil
}

// snippet is the start of an error body, for logs.
func snippet(b []byte) string {
	if len(b) > 200 {
		b = append(b[:200:200], "..."...)
	}
	return strings.ToValidUTF8(strings.TrimSpace(string(b)), "\uFFFD")
}

// redact hides a URL's password and query (which may hold keys).
func redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(invalid URL)"
	}
	u.RawQuery = ""
	return u.Redacted()
}

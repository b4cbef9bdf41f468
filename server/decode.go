package server

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/ragmem/ragmem/chunk"
	"github.com/ragmem/ragmem/internal/jsonbody"
	"github.com/ragmem/ragmem/prefs"
	"github.com/ragmem/ragmem/rag"
	"github.com/ragmem/ragmem/search"
)

// Limits on request fields.
const (
	maxURLBytes     = 8 << 10
	maxTitleBytes   = 1 << 10
	maxQueryBytes   = 16 << 10
	maxMessageBytes = 64 << 10
	maxTopK         = 100
	// maxLocalTopK bounds topK and maxPerSource of requests on local
	// listeners: the user's own commands, which may ask what a local
	// engine answers (ragmem search --top-k 500).
	maxLocalTopK    = 1 << 20
	maxContextLimit = 10_000_000
	maxListLimit    = 1000
)

// pageRequest is the body of POST /v1/pages: a page to remember. Exactly one
// of HTML and Text is given.
// It is a plain value.
type pageRequest struct {
	URL    string `json:"url"`
	Title  string `json:"title,omitempty"`
	HTML   string `json:"html,omitempty"`
	Text   string `json:"text,omitempty"`
	Format string `json:"format,omitempty"` // for Text: "text" (default) or "markdown"
	// Attrs are attributes stored on every chunk of the page, to filter on
	// (rag.CheckAttrs says which keys and values are accepted).
	Attrs map[string]string `json:"attrs,omitempty"`
}

// SearchRequest is the body of POST /v1/search.
// It is a plain value.
type SearchRequest struct {
	Query     string         `json:"query"`
	TopK      int            `json:"topK,omitempty"`
	Mode      string         `json:"mode,omitempty"`      // hybrid (default), vector, fulltext
	Fusion    string         `json:"fusion,omitempty"`    // relative (default), rrf
	Threshold *float64       `json:"threshold,omitempty"` // similarity threshold; negative disables
	Filters   *SearchFilters `json:"filters,omitempty"`
	// Filter is a filter expression (rag.ParseFilter).
	Filter string `json:"filter,omitempty"`
	// MaxPerSource caps the results of one source (default 3; 0: no cap).
	MaxPerSource *int `json:"maxPerSource,omitempty"`
	// GroupBySource orders the results source by source.
	GroupBySource bool `json:"groupBySource,omitempty"`
	// KeepDuplicates keeps identical and near-identical chunks of other
	// sources as results of their own (default: collapsed into alsoAt).
	KeepDuplicates bool `json:"keepDuplicates,omitempty"`
}

// SearchFilters restrict a search.
// It is a plain value.
type SearchFilters struct {
	URL      string            `json:"url,omitempty"`      // only this source
	DocTypes []string          `json:"docTypes,omitempty"` // default ["knowledge"]
	Attrs    map[string]string `json:"attrs,omitempty"`    // exact attribute values
}

// ContextRequest is the body of POST /v1/context.
// It is a plain value.
type ContextRequest struct {
	Query              string `json:"query"`
	Model              string `json:"model,omitempty"`
	ModelContextLimit  int    `json:"modelContextLimit,omitempty"`
	SystemPrompt       string `json:"systemPrompt,omitempty"`
	SystemPromptTokens int    `json:"systemPromptTokens,omitempty"`
	ResponseReserve    int    `json:"responseReserve,omitempty"`
	// Filter restricts the knowledge to chunks matching a filter
	// expression (rag.ParseFilter).
	Filter          string `json:"filter,omitempty"`
	Mode            string `json:"mode,omitempty"`            // search mode; default the server's (hybrid)
	TopK            int    `json:"topK,omitempty"`            // chunks retrieved; default the server's (5)
	KnowledgeBudget int    `json:"knowledgeBudget,omitempty"` // base knowledge budget in tokens; default the server's (2000)
}

// PreferenceRequest is the body of POST /v1/preferences.
// It is a plain value.
type PreferenceRequest struct {
	Type    string `json:"type"`
	Content string `json:"content"`
}

// detectRequest is the body of POST /v1/preferences/detect.
// It is a plain value.
type detectRequest struct {
	Message string `json:"message"`
	Save    bool   `json:"save,omitempty"` // store the detected preference
}

func badRequest(format string, args ...any) *apiError {
	return errorf(http.StatusBadRequest, CodeBadRequest, fmt.Sprintf(format, args...))
}

// decodeJSON reads one JSON object from the body into v: unknown fields,
// trailing data, a wrong content type and an oversized body are errors.
func decodeJSON(r *http.Request, v any) *apiError {
	if err := jsonbody.ContentType(r.Header.Get("Content-Type")); err != nil {
		return errorf(http.StatusUnsupportedMediaType, CodeUnsupportedMedia, err.Error())
	}
	if r.Body == nil {
		return errorf(http.StatusBadRequest, CodeInvalidJSON, "request body is empty; send a JSON object")
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return errorf(http.StatusRequestEntityTooLarge, CodeTooLarge, tooLargeMsg(mbe.Limit))
		}
		return errorf(http.StatusBadRequest, CodeBadRequest, "reading the request body failed (the connection broke or timed out)")
	}
	return decodeBody(body, v)
}

// decodeBody decodes one JSON object from body into v.
func decodeBody(body []byte, v any) *apiError {
	if err := jsonbody.Decode(body, v); err != nil {
		return errorf(http.StatusBadRequest, CodeInvalidJSON, err.Error())
	}
	return nil
}

// checkText rejects invalid UTF-8 and over-long strings.
func checkText(field, s string, max int) *apiError {
	if !utf8.ValidString(s) {
		return badRequest("%s is not valid UTF-8", field)
	}
	if len(s) > max {
		return badRequest("%s is longer than %d bytes", field, max)
	}
	return nil
}

// checkSourceURL validates the URL of a source to read or forget, by the
// rules every surface shares (rag.CheckURL).
func checkSourceURL(field, raw string) (string, *apiError) {
	u, err := rag.CheckURL(raw)
	if err != nil {
		return "", badRequest("%s: %s", field, clientMessage(err, rag.ErrBadURL))
	}
	return u, nil
}

// validate checks a page request and returns the document text and format.
func (p *pageRequest) validate() (string, *apiError) {
	url, err := rag.CheckPageURL(p.URL)
	if errors.Is(err, rag.ErrReserved) {
		return "", errorf(http.StatusForbidden, CodeReserved, "url: "+clientMessage(err, rag.ErrReserved))
	}
	if err != nil {
		return "", badRequest("url: %s", clientMessage(err, rag.ErrBadURL))
	}
	if a := checkText("title", p.Title, maxTitleBytes); a != nil {
		return "", a
	}
	hasHTML, hasText := strings.TrimSpace(p.HTML) != "", strings.TrimSpace(p.Text) != ""
	switch {
	case hasHTML && hasText:
		return "", badRequest("give either html or text, not both")
	case !hasHTML && !hasText:
		return "", errorf(http.StatusUnprocessableEntity, CodeNoContent, "the page has no content: give html or text")
	}
	if hasHTML && p.Format != "" {
		return "", badRequest("format applies to text only; html is always read as HTML")
	}
	if _, err := p.textFormat(); err != nil {
		return "", badRequest("%v", err)
	}
	if err := rag.CheckAttrs(p.Attrs); err != nil {
		return "", badRequest("attrs: %s", clientMessage(err, rag.ErrBadAttrs))
	}
	return url, nil
}

// parseFilter reads the filter expression of a request (nil when none).
func parseFilter(field, s string) (*rag.Expr, *apiError) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	e, err := rag.ParseFilter(s)
	if err != nil {
		return nil, badRequest("%s: %s", field, clientMessage(err, rag.ErrBadFilter))
	}
	return e, nil
}

func (p *pageRequest) textFormat() (chunk.Format, error) {
	switch strings.ToLower(strings.TrimSpace(p.Format)) {
	case "", "text", "plain":
		return chunk.Text, nil
	case "markdown", "md":
		return chunk.Markdown, nil
	}
	return 0, fmt.Errorf("format %q is not text or markdown", p.Format)
}

// options validates a search request and returns the search options.
// maxK bounds topK and maxPerSource (maxTopK, or maxLocalTopK on a local
// listener).
func (q *SearchRequest) options(maxK int) (search.Options, *apiError) {
	var o search.Options
	if strings.TrimSpace(q.Query) == "" {
		return o, badRequest("query is required")
	}
	if a := checkText("query", q.Query, maxQueryBytes); a != nil {
		return o, a
	}
	if q.TopK < 0 || q.TopK > maxK {
		return o, badRequest("topK must be between 1 and %d", maxK)
	}
	// What the request leaves out stays zero: the engine's configuration
	// decides it (rag.Config.SearchOptions).
	o = search.Options{TopK: q.TopK, GroupBySource: q.GroupBySource, KeepDuplicates: q.KeepDuplicates}
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
	where, a := parseFilter("filter", q.Filter)
	if a != nil {
		return o, a
	}
	o.Where = where
	if q.MaxPerSource != nil {
		switch n := *q.MaxPerSource; {
		case n < 0 || n > maxK:
			return o, badRequest("maxPerSource must be between 0 (no cap) and %d", maxK)
		case n == 0:
			o.MaxPerSource = -1
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
			t = -1 // zero means "no threshold" to a client; search reads 0 as the default
		}
		o.SimilarityThreshold = t
	}
	if f := q.Filters; f != nil {
		if f.URL != "" {
			u, a := checkSourceURL("filters.url", f.URL)
			if a != nil {
				return o, a
			}
			o.SourceURL = u
		}
		for _, t := range f.DocTypes {
			switch t {
			case rag.DocKnowledge, rag.DocMemory, rag.DocPreference:
			default:
				return o, badRequest("filters.docTypes: unknown type %q (want knowledge, memory or preference)", t)
			}
		}
		o.DocTypes = f.DocTypes
		if len(f.Attrs) > 32 {
			return o, badRequest("filters.attrs has more than 32 entries")
		}
		for k, v := range f.Attrs {
			if a := checkText("filters.attrs key", k, 256); a != nil {
				return o, a
			}
			if a := checkText("filters.attrs value", v, 4096); a != nil {
				return o, a
			}
		}
		o.Attrs = f.Attrs
	}
	return o, nil
}

// validate checks a context request; maxK bounds topK (see
// SearchRequest.options).
func (c *ContextRequest) validate(maxK int) *apiError {
	if strings.TrimSpace(c.Query) == "" {
		return badRequest("query is required")
	}
	if a := checkText("query", c.Query, maxQueryBytes); a != nil {
		return a
	}
	if a := checkText("model", c.Model, 200); a != nil {
		return a
	}
	if a := checkText("systemPrompt", c.SystemPrompt, maxMessageBytes*4); a != nil {
		return a
	}
	for name, v := range map[string]int{"modelContextLimit": c.ModelContextLimit, "systemPromptTokens": c.SystemPromptTokens,
		"responseReserve": c.ResponseReserve, "knowledgeBudget": c.KnowledgeBudget} {
		if v < 0 || v > maxContextLimit {
			return badRequest("%s must be between 0 and %d", name, maxContextLimit)
		}
	}
	if c.TopK < 0 || c.TopK > maxK {
		return badRequest("topK must be between 1 and %d", maxK)
	}
	if _, err := search.ParseMode(c.Mode); err != nil {
		return badRequest("%v", err)
	}
	return nil
}

func (p *PreferenceRequest) validate() (prefs.Type, *apiError) {
	t, err := prefs.ParseType(p.Type)
	if err != nil {
		return "", badRequest("%v", err)
	}
	if a := checkText("content", p.Content, prefs.MaxContentLen); a != nil {
		return "", a
	}
	if strings.TrimSpace(p.Content) == "" {
		return "", badRequest("content is required")
	}
	return t, nil
}

func (d *detectRequest) validate() *apiError {
	if strings.TrimSpace(d.Message) == "" {
		return badRequest("message is required")
	}
	return checkText("message", d.Message, maxMessageBytes)
}

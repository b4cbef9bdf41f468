package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/ragmem/ragmem/internal/clean"
)

// WebResult is one web search hit.
type WebResult struct {
	Title     string    `json:"title"`
	URL       string    `json:"url"`
	Snippet   string    `json:"snippet"`            // plain text, HTML removed, at most maxSnippetRunes runes
	Published time.Time `json:"published,omitzero"` // when the page was published, if the engine knows
	Engine    string    `json:"engine,omitempty"`   // the engine(s) that found it, as the API reports them
}

// WebSearcher runs a web search. Implementations must be safe for concurrent
// use. A limit <= 0 means the implementation's default.
type WebSearcher interface {
	SearchWeb(ctx context.Context, query string, limit int) ([]WebResult, error)
}

// Errors of the web searchers.
var (
	ErrWebSearch     = errors.New("agent: web search failed")
	ErrWebConfig     = errors.New("agent: invalid web search configuration")
	ErrWebBadPayload = errors.New("agent: web search returned an unreadable response")
)

const (
	// DefaultWebLimit is the number of web results asked for when limit <= 0.
	DefaultWebLimit = 5
	// maxSnippetRunes caps a result's snippet.
	maxSnippetRunes = 1000
	// maxWebBody caps how much of a search response is read.
	maxWebBody    = 8 << 20
	maxWebLimit   = 50
	maxTitleRunes = 300
)

// SearXNGOptions configure NewSearXNG. A nil *SearXNGOptions means all
// defaults. It is a plain value, copied by NewSearXNG.
type SearXNGOptions struct {
	// APIKey, when set, is sent as "Authorization: Bearer KEY" (for an
	// instance behind an authenticating proxy). Default none.
	APIKey string
	// Language is the search language ("en", "de-CH", "all"). Default the
	// instance's default.
	Language string
	// Categories restricts the search ("general", "news", "it"...). Default
	// the instance's default (general).
	Categories []string
	// SafeSearch is 0 (off), 1 (moderate) or 2 (strict). Default the
	// instance's default.
	SafeSearch *int
	// HTTPClient sends the requests. Default a client with a 20 s timeout.
	HTTPClient *http.Client
}

// SearXNG searches through a SearXNG instance's JSON API
// (GET {baseURL}/search?q=…&format=json). The instance must allow the json
// format (search.formats in its settings.yml). It is safe for concurrent use.
type SearXNG struct {
	base   *url.URL
	opts   SearXNGOptions
	client *http.Client
}

// NewSearXNG returns a searcher for the SearXNG instance at baseURL, e.g.
// "http://localhost:8888". It does not contact the instance.
func NewSearXNG(baseURL string, opts *SearXNGOptions) (*SearXNG, error) {
	u, err := parseBase(baseURL)
	if err != nil {
		return nil, err
	}
	var o SearXNGOptions
	if opts != nil {
		o = *opts
	}
	if o.SafeSearch != nil && (*o.SafeSearch < 0 || *o.SafeSearch > 2) {
		return nil, fmt.Errorf("%w: SafeSearch must be 0, 1 or 2", ErrWebConfig)
	}
	c := o.HTTPClient
	if c == nil {
		c = &http.Client{Timeout: 20 * time.Second}
	}
	return &SearXNG{base: u, opts: o, client: c}, nil
}

func parseBase(raw string) (*url.URL, error) {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("%w: base URL %q must be an absolute http(s) URL", ErrWebConfig, raw)
	}
	u.RawQuery, u.Fragment = "", ""
	return u, nil
}

// SearchWeb implements WebSearcher.
func (s *SearXNG) SearchWeb(ctx context.Context, query string, limit int) ([]WebResult, error) {
	query = clean.Line(query)
	if query == "" {
		return nil, fmt.Errorf("%w: empty query", ErrWebSearch)
	}
	limit = webLimit(limit)
	u := *s.base
	u.Path = strings.TrimRight(u.Path, "/") + "/search"
	q := url.Values{"q": {query}, "format": {"json"}}
	if s.opts.Language != "" {
		q.Set("language", s.opts.Language)
	}
	if len(s.opts.Categories) > 0 {
		q.Set("categories", strings.Join(s.opts.Categories, ","))
	}
	if s.opts.SafeSearch != nil {
		q.Set("safesearch", strconv.Itoa(*s.opts.SafeSearch))
	}
	u.RawQuery = q.Encode()
	hdr := http.Header{"Accept": {"application/json"}}
	if s.opts.APIKey != "" {
		hdr.Set("Authorization", "Bearer "+s.opts.APIKey)
	}
	body, err := getJSON(ctx, s.client, u.String(), hdr, s.opts.APIKey)
	if err != nil {
		var se *webStatusError
		if errors.As(err, &se) && se.code == http.StatusForbidden {
			return nil, fmt.Errorf("%w (enable the json format in the instance's settings.yml: search.formats: [html, json])", err)
		}
		return nil, err
	}
	return parseSearXNG(body, limit)
}

// searxngResponse is the part of SearXNG's /search?format=json answer used here.
type searxngResponse struct {
	Results []struct {
		URL           string   `json:"url"`
		Title         string   `json:"title"`
		Content       string   `json:"content"`
		Engine        string   `json:"engine"`
		Engines       []string `json:"engines"`
		PublishedDate *string  `json:"publishedDate"`
	} `json:"results"`
}

// parseSearXNG reads a SearXNG JSON search response and returns at most limit
// results (DefaultWebLimit when limit <= 0): results without an http(s) URL
// are skipped, duplicates (same URL) dropped, HTML removed from titles and
// snippets. It never panics.
func parseSearXNG(body []byte, limit int) ([]WebResult, error) {
	var r searxngResponse
	if err := json.Unmarshal(body, &r); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrWebBadPayload, err)
	}
	limit = webLimit(limit)
	out := make([]WebResult, 0, min(limit, len(r.Results)))
	seen := map[string]bool{}
	for _, x := range r.Results {
		if len(out) >= limit {
			break
		}
		w := WebResult{URL: cleanURL(x.URL), Title: capRunes(plainText(x.Title), maxTitleRunes), Snippet: capRunes(plainText(x.Content), maxSnippetRunes)}
		if w.URL == "" || seen[w.URL] {
			continue
		}
		seen[w.URL] = true
		if w.Title == "" {
			w.Title = w.URL
		}
		eng := x.Engines
		if len(eng) == 0 && x.Engine != "" {
			eng = []string{x.Engine}
		}
		w.Engine = capRunes(clean.Line(strings.Join(eng, ",")), 100)
		if x.PublishedDate != nil {
			w.Published = parseDate(*x.PublishedDate)
		}
		out = append(out, w)
	}
	return out, nil
}

// BraveOptions configure NewBrave. A nil *BraveOptions means all defaults.
// It is a plain value, copied by NewBrave.
type BraveOptions struct {
	// BaseURL is the web search endpoint. Default
	// "https://api.search.brave.com/res/v1/web/search".
	BaseURL string
	// Country ("us", "de"...) and SearchLang ("en"...) refine the search.
	// Default Brave's defaults.
	Country, SearchLang string
	// HTTPClient sends the requests. Default a client with a 20 s timeout.
	HTTPClient *http.Client
}

// DefaultBraveURL is Brave's web search endpoint.
const DefaultBraveURL = "https://api.search.brave.com/res/v1/web/search"

// Brave searches with the Brave Search API (GET {BaseURL}?q=…&count=N with
// the X-Subscription-Token header). It is safe for concurrent use.
type Brave struct {
	base   *url.URL
	key    string
	opts   BraveOptions
	client *http.Client
}

// NewBrave returns a Brave Search API client with the given subscription
// token. It does not contact the API.
func NewBrave(apiKey string, opts *BraveOptions) (*Brave, error) {
	var o BraveOptions
	if opts != nil {
		o = *opts
	}
	if strings.TrimSpace(apiKey) == "" {
		return nil, fmt.Errorf("%w: the Brave Search API needs a subscription token", ErrWebConfig)
	}
	if o.BaseURL == "" {
		o.BaseURL = DefaultBraveURL
	}
	u, err := parseBase(o.BaseURL)
	if err != nil {
		return nil, err
	}
	c := o.HTTPClient
	if c == nil {
		c = &http.Client{Timeout: 20 * time.Second}
	}
	return &Brave{base: u, key: strings.TrimSpace(apiKey), opts: o, client: c}, nil
}

// SearchWeb implements WebSearcher.
func (b *Brave) SearchWeb(ctx context.Context, query string, limit int) ([]WebResult, error) {
	query = clean.Line(query)
	if query == "" {
		return nil, fmt.Errorf("%w: empty query", ErrWebSearch)
	}
	limit = min(webLimit(limit), 20) // Brave's maximum count
	u := *b.base
	q := url.Values{"q": {query}, "count": {strconv.Itoa(limit)}, "text_decorations": {"false"}}
	if b.opts.Country != "" {
		q.Set("country", b.opts.Country)
	}
	if b.opts.SearchLang != "" {
		q.Set("search_lang", b.opts.SearchLang)
	}
	u.RawQuery = q.Encode()
	hdr := http.Header{"Accept": {"application/json"}, "X-Subscription-Token": {b.key}}
	body, err := getJSON(ctx, b.client, u.String(), hdr, b.key)
	if err != nil {
		return nil, err
	}
	return parseBrave(body, limit)
}

// braveResponse is the part of Brave's web search answer used here.
type braveResponse struct {
	Web struct {
		Results []struct {
			Title       string `json:"title"`
			URL         string `json:"url"`
			Description string `json:"description"`
			PageAge     string `json:"page_age"`
			Profile     struct {
				Name string `json:"name"`
			} `json:"profile"`
		} `json:"results"`
	} `json:"web"`
}

// parseBrave reads a Brave Search API web search response, like
// parseSearXNG. It never panics.
func parseBrave(body []byte, limit int) ([]WebResult, error) {
	var r braveResponse
	if err := json.Unmarshal(body, &r); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrWebBadPayload, err)
	}
	limit = webLimit(limit)
	var out []WebResult
	seen := map[string]bool{}
	for _, x := range r.Web.Results {
		if len(out) >= limit {
			break
		}
		w := WebResult{URL: cleanURL(x.URL), Title: capRunes(plainText(x.Title), maxTitleRunes), Snippet: capRunes(plainText(x.Description), maxSnippetRunes), Engine: "brave"}
		if w.URL == "" || seen[w.URL] {
			continue
		}
		seen[w.URL] = true
		if w.Title == "" {
			w.Title = w.URL
		}
		w.Published = parseDate(x.PageAge)
		out = append(out, w)
	}
	return out, nil
}

func webLimit(n int) int {
	if n <= 0 {
		return DefaultWebLimit
	}
	return min(n, maxWebLimit)
}

type webStatusError struct {
	code int
	msg  string
}

func (e *webStatusError) Error() string { return e.msg }

// getJSON GETs u and returns its body, or an error wrapping ErrWebSearch that
// never contains secret.
func getJSON(ctx context.Context, c *http.Client, u string, hdr http.Header, secret string) ([]byte, error) {
	redact := func(s string) string {
		if secret != "" {
			s = strings.ReplaceAll(s, secret, "REDACTED")
		}
		return s
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, fmt.Errorf("%w: %s", ErrWebSearch, redact(err.Error()))
	}
	req.Header = hdr
	resp, err := c.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("%w: %s", ErrWebSearch, redact(err.Error()))
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxWebBody+1))
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("%w: reading the response: %s", ErrWebSearch, redact(err.Error()))
	}
	host := req.URL.Host
	if resp.StatusCode != http.StatusOK {
		msg := capRunes(clean.Line(plainText(string(body))), 300)
		hint := ""
		switch {
		case resp.StatusCode == http.StatusTooManyRequests:
			hint = " (rate limited; retry later)"
		case resp.StatusCode == http.StatusUnauthorized:
			hint = " (check the API key)"
		}
		return nil, fmt.Errorf("%w: %w", ErrWebSearch, &webStatusError{resp.StatusCode, redact(fmt.Sprintf("%s returned HTTP %d%s: %s", host, resp.StatusCode, hint, msg))})
	}
	if len(body) > maxWebBody {
		return nil, fmt.Errorf("%w: %s sent more than %d bytes", ErrWebBadPayload, host, maxWebBody)
	}
	return body, nil
}

var (
	tagRE   = regexp.MustCompile(`<[^<>]*>`)
	dateFmt = []string{time.RFC3339Nano, "2006-01-02T15:04:05", "2006-01-02 15:04:05", "2006-01-02"}
)

// plainText removes HTML tags and entities and normalises whitespace.
func plainText(s string) string {
	if strings.ContainsAny(s, "<&") {
		s = tagRE.ReplaceAllString(s, " ")
		s = html.UnescapeString(s)
	}
	return clean.Line(s)
}

func capRunes(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return strings.TrimSpace(string(r[:n])) + "…"
}

// cleanURL returns u when it is an absolute http(s) URL, else "".
func cleanURL(raw string) string {
	raw = strings.TrimSpace(raw)
	if raw == "" || len(raw) > 4096 || !utf8.ValidString(raw) {
		return ""
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return ""
	}
	return u.String()
}

func parseDate(s string) time.Time {
	s = strings.TrimSpace(s)
	for _, f := range dateFmt {
		if t, err := time.Parse(f, s); err == nil {
			return t.UTC()
		}
	}
	return time.Time{}
}

package rag

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/ragmem/ragmem/index"

	"github.com/ragmem/ragmem/internal/reserved"
)

// The rules for the URLs of pages, and for which sources a page may replace
// or remove, shared by every surface that writes pages (the HTTP API and the
// MCP tools), so that none lets through what another refuses. What belongs
// to the memory and preference stores is reserved.go's.

// Errors of the page rules.
var (
	// ErrBadURL: a page URL that is empty, too long, not valid UTF-8,
	// holds control characters or is not absolute. A reserved scheme
	// (preference:, memory:, memory-layer:) is ErrReserved.
	ErrBadURL = errors.New("rag: invalid page URL")
	// ErrNoPage: no page with that URL.
	ErrNoPage = errors.New("rag: no such page")
)

// maxURLBytes is the longest page URL accepted.
const maxURLBytes = 8 << 10

// checkURL trims raw and checks it as the URL of a source to read or
// forget: not empty, valid UTF-8, at most maxURLBytes, no control
// characters, absolute (with a scheme). The error wraps ErrBadURL and says
// what is wrong in words a client can act on.
func checkURL(raw string) (string, error) {
	u := strings.TrimSpace(raw)
	switch {
	case u == "":
		return "", fmt.Errorf("%w: the URL is empty", ErrBadURL)
	case !utf8.ValidString(u):
		return "", fmt.Errorf("%w: the URL is not valid UTF-8", ErrBadURL)
	case len(u) > maxURLBytes:
		return "", fmt.Errorf("%w: the URL is longer than %d bytes", ErrBadURL, maxURLBytes)
	}
	for _, r := range u {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) || r == '\u2028' || r == '\u2029' {
			return "", fmt.Errorf("%w: the URL contains control characters", ErrBadURL)
		}
	}
	p, err := url.Parse(u)
	if err != nil || p.Scheme == "" || (p.Host == "" && p.Opaque == "" && p.Path == "") {
		return "", fmt.Errorf("%w: %q is not an absolute URL (like https://example.com/page)", ErrBadURL, clipURL(u))
	}
	return u, nil
}

// CheckPageURL is checkURL for the URL of a page to store: the schemes of
// preferences and memories (preference:, memory:, memory-layer:) are
// reserved (ErrReserved); a URL with
// an authority ("scheme://…", file: aside) must name a host, and its port
// must be a number from 0 to 65535. It returns the URL without user info
// ("user:password@"): credentials are never stored (index.URLRules.Canonical
// drops them too, for every other way a page reaches the index).
func CheckPageURL(raw string) (string, error) {
	u, err := checkURL(raw)
	if err != nil {
		return "", err
	}
	if err := reservedScheme(u); err != nil {
		return "", err
	}
	p, err := url.Parse(u)
	if err != nil { // checkURL parsed it
		return "", fmt.Errorf("%w: %q is not a valid URL", ErrBadURL, clipURL(u))
	}
	_, rest, _ := strings.Cut(u, ":")
	if strings.HasPrefix(rest, "//") && !strings.EqualFold(p.Scheme, "file") {
		if p.Hostname() == "" {
			return "", fmt.Errorf("%w: %q names no host (like https://example.com/page)", ErrBadURL, clipURL(u))
		}
		if port := p.Port(); port != "" {
			if n, err := strconv.Atoi(port); err != nil || n > 65535 {
				return "", fmt.Errorf("%w: the port %s of %q is not a port number (0 to 65535)", ErrBadURL, clipURL(port), clipURL(u))
			}
		}
	}
	if p.User != nil {
		p.User = nil
		u = p.String()
	}
	return u, nil
}

func clipURL(u string) string {
	if len(u) <= 200 {
		return u
	}
	n := 200
	for n > 0 && !utf8.RuneStart(u[n]) {
		n--
	}
	return u[:n] + "…"
}

// pageSource returns what the store holds under a page URL (ok false when
// nothing), failing with ErrReserved when it is not a page (a memory or a
// preference).
func (e *Engine) pageSource(ctx context.Context, u string) (index.SourceInfo, bool, error) {
	if err := e.checkRemovable(ctx, u); err != nil {
		return index.SourceInfo{}, true, err // a store's source (or its patterns', "#whenToUse")
	}
	srcs, _, err := e.ix.Sources(ctx, index.Filter{SourceURL: u}, 0, 1)
	if raw := strings.TrimSpace(u); err == nil && len(srcs) == 0 && e.ix.CanonicalURL(raw) != raw {
		// A source stored before canonicalisation (with user info, say)
		// is still found, and removed, by the URL it was stored under.
		srcs, _, err = e.ix.Backend().Sources(ctx, index.Filter{SourceURL: raw}, 0, 1)
	}
	if err != nil || len(srcs) == 0 {
		return index.SourceInfo{}, false, err
	}
	if srcs[0].DocType != index.DocKnowledge {
		return srcs[0], true, fmt.Errorf("%w: %s is a %s source, not a page: it belongs to %s", ErrReserved, clipURL(u), srcs[0].DocType, reserved.Owner(srcs[0].DocType))
	}
	return srcs[0], true, nil
}

// PageUnchanged reports whether indexing d would change nothing (see
// engine.Index.Unchanged), with what the store holds under its URL; it fails
// with ErrReserved when d or that source is not a page's (reserved.go).
func (e *Engine) PageUnchanged(ctx context.Context, d index.Document) (index.SourceInfo, bool, error) {
	d.DocType = index.DocKnowledge
	if err := checkWritable(&d); err != nil {
		return index.SourceInfo{}, false, err
	}
	if _, _, err := e.pageSource(ctx, e.ix.CanonicalURL(d.SourceURL)); err != nil {
		return index.SourceInfo{}, false, err
	}
	return e.ix.Unchanged(ctx, d)
}

// IndexPageNow indexes a page (a knowledge document) now, by the page rules:
// its URL passes CheckPageURL, and it neither carries the memory store's
// attributes nor replaces a preference or a memory (ErrReserved).
func (e *Engine) IndexPageNow(ctx context.Context, d index.Document) (index.Result, error) {
	u, err := CheckPageURL(d.SourceURL)
	if err != nil {
		return index.Result{}, err
	}
	d.SourceURL, d.DocType = u, index.DocKnowledge
	if err := checkWritable(&d); err != nil {
		return index.Result{}, err
	}
	if _, _, err := e.pageSource(ctx, u); err != nil {
		return index.Result{}, err
	}
	return e.ix.Add(ctx, d)
}

// Forget removes a page and cancels its background indexing: after it
// returns, the page is gone and no job queued before the call brings it
// back (see engine.Index.RemoveSource). It reports the chunks deleted and
// the jobs cancelled, and fails with ErrNoPage when there is neither a page
// with that URL nor a queued one, and with ErrReserved for a preference or
// a memory (removed through their own stores).
func (e *Engine) Forget(ctx context.Context, raw string) (index.Removal, error) {
	u, err := checkURL(raw)
	if err != nil {
		return index.Removal{}, err
	}
	if s := reserved.Scheme(u); s != "" {
		return index.Removal{}, fmt.Errorf("%w: %s is the address of %s, not of a page", ErrReserved, clipURL(u), reserved.Owner(s))
	}
	if _, _, err := e.pageSource(ctx, u); err != nil {
		return index.Removal{}, err
	}
	rm, err := e.ix.RemoveSource(ctx, u)
	e.cal.Changed(rm.Chunks)
	switch {
	case err != nil:
		return rm, err
	case rm.Chunks == 0 && len(rm.Cancelled) == 0:
		return rm, fmt.Errorf("%w: %s", ErrNoPage, clipURL(u))
	}
	return rm, nil
}

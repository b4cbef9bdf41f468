package index

import (
	"net/url"
	"path"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"golang.org/x/net/idna"
)

// URL canonicalisation. Every source URL the index stores, removes, reads or
// filters on goes through CanonicalURL first, so that the HTTP API, the MCP
// tools, the CLI and Go callers all name one page the same way: variants of
// a page's URL (a #fragment, ?utm_source=…, an upper-case host, :443) are
// one source, not four.
//
// Only http and https URLs are rewritten. Any other source name (file://
// URLs, memory://, preference://, a plain id) is only trimmed: ragmem does
// not know what their parts mean.

// DefaultTrackingParams are the query parameters CanonicalURL removes by
// default: they say where a visitor came from, never which page it is. A
// name ending in "*" is a prefix ("utm_*" covers utm_source, utm_medium, …).
// Names are compared case-insensitively.
var DefaultTrackingParams = []string{
	"utm_*",                                // Google Analytics campaign tags
	"mtm_*", "pk_*", "piwik_*", "matomo_*", // Matomo campaign tags
	"fbclid", "gclid", "gclsrc", "dclid", "gbraid", "wbraid", "msclkid", "yclid",
	"twclid", "ttclid", "li_fat_id", "igshid", "epik", // ad-click ids
	"mc_cid", "mc_eid", // Mailchimp
	"_ga", "_gl", // Google Analytics linker
	"_hsenc", "_hsmi", "__hstc", "__hssc", "__hsfp", "hsctatracking", // HubSpot
	"mkt_tok",                   // Marketo
	"oly_anon_id", "oly_enc_id", // Omeda
	"vero_id", "vero_conv", // Vero
	"wickedid", "rb_clickid", "s_cid", "ref_src", "ref_url", "srsltid",
}

// URLRules configure CanonicalURL. The zero value is the default rules.
type URLRules struct {
	// KeepParams are query parameters kept even when they match
	// DefaultTrackingParams (a site that uses "ref_src" to choose what a
	// page shows). Exact names, compared case-insensitively. Default none.
	KeepParams []string
}

// CanonicalURL returns the canonical form of a source URL under the default
// rules; see URLRules.Canonical.
func CanonicalURL(raw string) string { return URLRules{}.Canonical(raw) }

// Canonical returns the canonical form of a source URL. For http and https
// URLs:
//
//   - user info ("user:password@") is removed: credentials a page's URL
//     carried are never stored, shown in answers or put into a model's
//     context, and the page is the same page without them;
//   - the scheme and host are lower-cased, and a default port (:80 for
//     http, :443 for https) or an empty one is dropped;
//   - an empty path becomes "/", and "." and ".." path segments are
//     resolved;
//   - percent-escapes are upper-cased, and escaped unreserved characters
//     (letters, digits, "-._~") are decoded;
//   - the fragment is dropped, except a client-side route ("#!/…" or
//     "#/…"), which names a page of a single-page application;
//   - tracking parameters (DefaultTrackingParams, less KeepParams) are
//     removed, the remaining parameters are sorted by name (stably, so
//     repeated names keep their order), and an empty query is dropped.
//
// Other URLs, and strings that do not parse as URLs, are returned trimmed of
// surrounding white space and otherwise unchanged. Canonical is idempotent:
// Canonical(Canonical(u)) == Canonical(u).
func (r URLRules) Canonical(raw string) string {
	s := strings.TrimSpace(raw)
	if len(s) < 7 || !utf8.ValidString(s) {
		return s
	}
	scheme, rest, ok := strings.Cut(s, ":")
	if !ok {
		return s
	}
	scheme = strings.ToLower(scheme)
	if scheme != "http" && scheme != "https" || !strings.HasPrefix(rest, "//") {
		return s
	}
	u, err := url.Parse(scheme + ":" + rest)
	if err != nil || u.Host == "" || u.Opaque != "" {
		return s
	}
	host := strings.ToLower(u.Hostname())
	if host == "" {
		return s
	}
	if strings.Contains(host, ":") { // IPv6 literal
		host = "[" + host + "]"
	} else if !isASCII(host) {
		// An internationalised name: the ASCII form browsers send
		// (UTS 46 mapping, then punycode); a name that is not valid
		// stays as written.
		if a, err := idna.Lookup.ToASCII(host); err == nil && a != "" {
			host = a
		}
	}
	port := u.Port()
	if n, err := strconv.Atoi(port); err == nil && n >= 0 && n <= 65535 {
		port = strconv.Itoa(n) // ":0443" is ":443"
	}
	if port != "" && !(scheme == "http" && port == "80" || scheme == "https" && port == "443") {
		host += ":" + port
	}
	var b strings.Builder
	b.Grow(len(s))
	b.WriteString(scheme)
	b.WriteString("://") // never the user info: see Canonical
	b.WriteString(host)
	b.WriteString(canonicalPath(u.EscapedPath()))
	if q := r.canonicalQuery(u.RawQuery); q != "" {
		b.WriteByte('?')
		b.WriteString(q)
	}
	if f := u.EscapedFragment(); strings.HasPrefix(f, "!") || strings.HasPrefix(f, "/") {
		b.WriteByte('#')
		b.WriteString(normalizeEscapes(f))
	}
	out := b.String()
	if _, err := url.Parse(out); err != nil {
		return s // never turn a parseable URL into one that is not
	}
	return out
}

// canonicalPath resolves dot segments and normalises escapes of an escaped
// path.
func canonicalPath(p string) string {
	if p == "" {
		return "/"
	}
	p = normalizeEscapes(p)
	if !strings.Contains(p, "/.") && !strings.HasPrefix(p, ".") {
		return p
	}
	trailing := strings.HasSuffix(p, "/") || strings.HasSuffix(p, "/.") || strings.HasSuffix(p, "/..")
	c := path.Clean("/" + p)
	if trailing && c != "/" {
		c += "/"
	}
	return c
}

// canonicalQuery drops tracking parameters and sorts the rest by name. It
// works on the raw query so that escapes the page chose ("a+b" vs "a%20b")
// are kept as they are, apart from normalizeEscapes.
func (r URLRules) canonicalQuery(raw string) string {
	if raw == "" {
		return ""
	}
	type param struct{ name, raw string }
	var ps []param
	for _, part := range strings.Split(raw, "&") {
		if part == "" {
			continue
		}
		name, _, _ := strings.Cut(part, "=")
		if n, err := url.QueryUnescape(name); err == nil {
			name = n
		}
		if r.tracking(name) {
			continue
		}
		ps = append(ps, param{name, normalizeEscapes(part)})
	}
	sort.SliceStable(ps, func(i, j int) bool { return ps[i].name < ps[j].name })
	parts := make([]string, len(ps))
	for i, p := range ps {
		parts[i] = p.raw
	}
	return strings.Join(parts, "&")
}

// tracking reports whether a parameter name is removed under r.
func (r URLRules) tracking(name string) bool {
	n := strings.ToLower(name)
	for _, k := range r.KeepParams {
		if strings.EqualFold(k, name) {
			return false
		}
	}
	for _, t := range DefaultTrackingParams {
		if p, ok := strings.CutSuffix(t, "*"); ok {
			if strings.HasPrefix(n, p) {
				return true
			}
		} else if n == t {
			return true
		}
	}
	return false
}

// normalizeEscapes upper-cases the hex digits of percent-escapes and decodes
// those of unreserved characters (RFC 3986 section 6.2.2).
func normalizeEscapes(s string) string {
	if !strings.Contains(s, "%") {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '%' && i+2 < len(s) && isHex(s[i+1]) && isHex(s[i+2]) {
			v := unhex(s[i+1])<<4 | unhex(s[i+2])
			if isUnreserved(v) {
				b.WriteByte(v)
			} else {
				b.WriteByte('%')
				b.WriteByte(upperHex(s[i+1]))
				b.WriteByte(upperHex(s[i+2]))
			}
			i += 2
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func unhex(c byte) byte {
	switch {
	case '0' <= c && c <= '9':
		return c - '0'
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10
	}
	return c - 'A' + 10
}

func upperHex(c byte) byte {
	if 'a' <= c && c <= 'f' {
		return c - 'a' + 'A'
	}
	return c
}

func isUnreserved(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '.' || c == '_' || c == '~'
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

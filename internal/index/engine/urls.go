package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/ragmem/ragmem/index"
)

// metaURLRules is the store setting that remembers the URL rules.
const metaURLRules = "urlRules"

// SetURLRules replaces the rules the index canonicalises source URLs with
// and records them in the store. Sources stored before keep their URLs.
func (ix *Index) SetURLRules(ctx context.Context, r index.URLRules) error {
	return ix.loadURLRules(ctx, &r)
}

// loadURLRules sets the rules from opts, recording them when they differ
// from the store's, or else from the store.
func (ix *Index) loadURLRules(ctx context.Context, opts *index.URLRules) error {
	stored, ok, err := ix.be.Meta(ctx, metaURLRules)
	if err != nil {
		return err
	}
	var have index.URLRules
	if ok {
		if err := json.Unmarshal([]byte(stored), &have); err != nil {
			ix.log.Warn("index: the store's URL rules are unreadable; using the defaults", "err", err)
			have = index.URLRules{}
		}
	}
	if opts == nil {
		ix.urls.Store(&have)
		return nil
	}
	want := index.URLRules{KeepParams: normalizeParams(opts.KeepParams)}
	ix.urls.Store(&want)
	if ok && slices.Equal(have.KeepParams, want.KeepParams) || !ok && len(want.KeepParams) == 0 {
		return nil
	}
	b, err := json.Marshal(want)
	if err != nil {
		return err
	}
	if err := ix.be.SetMeta(ctx, metaURLRules, string(b)); err != nil {
		return fmt.Errorf("index: record the URL rules: %w", err)
	}
	return nil
}

// normalizeParams sorts and deduplicates parameter names (compared
// case-insensitively, kept in lower case).
func normalizeParams(ps []string) []string {
	var out []string
	for _, p := range ps {
		if p = strings.ToLower(strings.TrimSpace(p)); p != "" {
			out = append(out, p)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// URLRules returns the rules the index canonicalises source URLs with.
func (ix *Index) URLRules() index.URLRules {
	return index.URLRules{KeepParams: slices.Clone(ix.rules().KeepParams)}
}

func (ix *Index) rules() *index.URLRules {
	if r := ix.urls.Load(); r != nil {
		return r
	}
	return &index.URLRules{}
}

// CanonicalURL returns the canonical form of a source URL under the index's
// rules: the URL the index stores a source under (see URLRules.Canonical).
func (ix *Index) CanonicalURL(u string) string { return ix.rules().Canonical(u) }

// findSource returns the stored source u names, canonical form first, then
// as given (a source stored before canonicalisation), and sets *u to the
// URL found.
func (ix *Index) findSource(ctx context.Context, u *string) ([]index.SourceInfo, error) {
	c := ix.CanonicalURL(*u)
	ex, _, err := ix.be.Sources(ctx, index.Filter{SourceURL: c}, 0, 1)
	if err != nil || len(ex) > 0 || c == strings.TrimSpace(*u) {
		*u = c
		return ex, err
	}
	raw := strings.TrimSpace(*u)
	ex, _, err = ix.be.Sources(ctx, index.Filter{SourceURL: raw}, 0, 1)
	*u = raw
	return ex, err
}

// canonFilter canonicalises the source URLs a filter names.
func (ix *Index) canonFilter(f index.Filter) index.Filter {
	if f.SourceURL != "" {
		f.SourceURL = ix.CanonicalURL(f.SourceURL)
	}
	if f.Where != nil {
		f.Where = ix.canonExpr(f.Where)
	}
	return f
}

// canonExpr returns e with its source values canonicalised (a copy where
// anything changes; e itself is never modified).
func (ix *Index) canonExpr(e *index.Expr) *index.Expr {
	switch e.Op {
	case index.OpAnd, index.OpOr, index.OpNot:
		var args []*index.Expr
		for i, a := range e.Args {
			c := ix.canonExpr(a)
			if c != a && args == nil {
				args = slices.Clone(e.Args)
			}
			if args != nil {
				args[i] = c
			}
		}
		if args == nil {
			return e
		}
		c := *e
		c.Args = args
		return &c
	}
	if e.Field != index.FieldSource || len(e.Values) == 0 {
		return e
	}
	vs := make([]string, len(e.Values))
	for i, v := range e.Values {
		if e.Op == index.OpPrefix {
			vs[i] = canonicalPrefix(v)
		} else {
			vs[i] = ix.CanonicalURL(v)
		}
	}
	if slices.Equal(vs, e.Values) {
		return e
	}
	c := *e
	c.Values = vs
	return &c
}

// canonicalPrefix canonicalises the start of an http(s) URL prefix: its
// scheme and host are lower-cased and a default port is dropped; the rest
// is kept as written (a prefix may end anywhere, even inside a parameter).
func canonicalPrefix(p string) string {
	scheme, rest, ok := strings.Cut(p, "://")
	if !ok {
		return p
	}
	ls := strings.ToLower(scheme)
	if ls != "http" && ls != "https" {
		return p
	}
	end := strings.IndexAny(rest, "/?#")
	if end < 0 {
		end = len(rest) // the host may go on: "https://docs." matches "https://docs.rs/"
	}
	host := strings.ToLower(rest[:end])
	if strings.Contains(host, "@") {
		return ls + "://" + rest // user info: leave the authority as written
	}
	switch {
	case end == len(rest):
	case ls == "http" && strings.HasSuffix(host, ":80"):
		host = strings.TrimSuffix(host, ":80")
	case ls == "https" && strings.HasSuffix(host, ":443"):
		host = strings.TrimSuffix(host, ":443")
	}
	return ls + "://" + host + rest[end:]
}

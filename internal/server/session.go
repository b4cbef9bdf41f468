package server

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
)

// The web UI never sees the API token in a URL. ragmem serve prints a link
// with a one-time login code (LoginURL): opening it exchanges the code for a
// session cookie (HttpOnly, SameSite=Strict, Secure over TLS) and redirects
// to the UI, so the only URL the browser keeps holds a spent code. Without a
// link, the UI asks for the token in a form and exchanges it the same way
// (POST /ui/session), so the token never enters the address bar, the
// history or the page's storage either.
//
// A session is bound to the token it was opened with: rotating that token
// ends it. Requests authenticated by the cookie must carry the header
// X-Ragmem-UI (which no cross-site form or image can send) on top of
// SameSite=Strict and the server's origin checks.

const (
	// SessionCookie is the web UI's session cookie.
	SessionCookie = "ragmem_session"
	// UIHeader must accompany every request authenticated by the session
	// cookie.
	UIHeader = "X-Ragmem-UI"
	// DefaultLoginTTL is how long a login link works (once).
	DefaultLoginTTL = 15 * time.Minute
	// DefaultSessionTTL is how long a web UI session lasts without use.
	DefaultSessionTTL = 12 * time.Hour
	// maxSessions bounds the sessions (and login codes) kept; the oldest go.
	maxSessions = 1000
)

// sessions holds login codes and web UI sessions, by their SHA-256. It is
// safe for concurrent use.
type sessions struct {
	mu    sync.Mutex
	codes map[[32]byte]grant
	live  map[[32]byte]grant
	ttl   time.Duration
}

// grant is what a code or a session stands for: a token, by its digest.
type grant struct {
	token   [32]byte
	expires time.Time
}

func newSessions(ttl time.Duration) *sessions {
	return &sessions{codes: map[[32]byte]grant{}, live: map[[32]byte]grant{}, ttl: ttl}
}

func randomSecret() (string, error) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("server: generate a secret: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(b[:]), nil
}

// add stores a new secret for tok in m and returns it.
func (ss *sessions) add(m map[[32]byte]grant, tok [32]byte, ttl time.Duration, now time.Time) (string, error) {
	secret, err := randomSecret()
	if err != nil {
		return "", err
	}
	ss.mu.Lock()
	defer ss.mu.Unlock()
	prune(m, now)
	m[sha256.Sum256([]byte(secret))] = grant{token: tok, expires: now.Add(ttl)}
	return secret, nil
}

// prune drops expired entries, and the oldest beyond maxSessions.
func prune(m map[[32]byte]grant, now time.Time) {
	for k, g := range m {
		if !now.Before(g.expires) {
			delete(m, k)
		}
	}
	for len(m) >= maxSessions {
		var oldest [32]byte
		first := true
		var t time.Time
		for k, g := range m {
			if first || g.expires.Before(t) {
				oldest, t, first = k, g.expires, false
			}
		}
		delete(m, oldest)
	}
}

// redeem spends a login code and returns the token it stands for.
func (ss *sessions) redeem(code string, now time.Time) ([32]byte, bool) {
	d := sha256.Sum256([]byte(code))
	ss.mu.Lock()
	defer ss.mu.Unlock()
	g, ok := ss.codes[d]
	delete(ss.codes, d) // once, even if expired
	if !ok || !now.Before(g.expires) {
		return [32]byte{}, false
	}
	return g.token, true
}

// session returns the token of a live session and extends it.
func (ss *sessions) session(secret string, now time.Time) ([32]byte, bool) {
	d := sha256.Sum256([]byte(secret))
	ss.mu.Lock()
	defer ss.mu.Unlock()
	g, ok := ss.live[d]
	if !ok || !now.Before(g.expires) {
		delete(ss.live, d)
		return [32]byte{}, false
	}
	g.expires = now.Add(ss.ttl)
	ss.live[d] = g
	return g.token, true
}

func (ss *sessions) end(secret string) {
	ss.mu.Lock()
	delete(ss.live, sha256.Sum256([]byte(secret)))
	ss.mu.Unlock()
}

// LoginURL returns a link to the web UI at base (the server's own URL,
// such as http://127.0.0.1:7437) that logs the browser in once, within
// ttl (DefaultLoginTTL when 0), with the main token. The link holds a
// one-time code, never the token.
func (s *Server) LoginURL(base string, ttl time.Duration) (string, error) {
	if ttl <= 0 {
		ttl = DefaultLoginTTL
	}
	tok, ok := s.tokens.main()
	if !ok {
		return "", ErrNoToken
	}
	code, err := s.sessions.add(s.sessions.codes, tok.digest, ttl, s.o.Now())
	if err != nil {
		return "", err
	}
	return strings.TrimRight(base, "/") + "/ui/login?code=" + url.QueryEscape(code), nil
}

func (s *Server) setSession(w http.ResponseWriter, r *http.Request, tok [32]byte) bool {
	secret, err := s.sessions.add(s.sessions.live, tok, s.sessions.ttl, s.o.Now())
	if err != nil {
		WriteError(w, r, http.StatusInternalServerError, CodeInternal, "internal error")
		return false
	}
	http.SetCookie(w, &http.Cookie{
		Name: SessionCookie, Value: secret, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode,
		Secure: r.TLS != nil, MaxAge: int(s.sessions.ttl / time.Second),
	})
	return true
}

// login redeems a login link's code: a session cookie, then the UI.
func (s *Server) login(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Referrer-Policy", "no-referrer")
	code := r.URL.Query().Get("code")
	tok, ok := s.sessions.redeem(code, s.o.Now())
	if ok {
		if _, live := s.tokens.byDigest(tok); !live {
			ok = false // rotated since the link was made
		}
	}
	if !ok {
		if !s.failedAuth(w, r) {
			return
		}
		http.Redirect(w, r, "/?login=expired", http.StatusSeeOther)
		return
	}
	if !s.setSession(w, r, tok) {
		return
	}
	http.Redirect(w, r, "/", http.StatusSeeOther)
}

// newSession exchanges a token, sent by the UI's form in a JSON body, for a
// session cookie.
func (s *Server) newSession(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get(UIHeader) == "" {
		WriteError(w, r, http.StatusForbidden, CodeForbidden, "this endpoint is for the web UI")
		return
	}
	if !s.limitBody(w, r, stateOf(r)) { // set by ServeHTTP, which releases what it reserves
		return
	}
	var req struct {
		Token string `json:"token"`
	}
	if e := decodeJSON(r, &req); e != nil {
		writeAPIError(w, r, e)
		return
	}
	tok, ok := s.tokens.lookup(strings.TrimSpace(req.Token))
	if !ok {
		if !s.failedAuth(w, r) {
			return
		}
		WriteError(w, r, http.StatusUnauthorized, CodeUnauthorized, "invalid token (ragmem token show prints the current one)")
		return
	}
	if !s.setSession(w, r, tok.digest) {
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"namespace": tok.namespace})
}

// endSession logs the UI out.
func (s *Server) endSession(w http.ResponseWriter, r *http.Request) {
	if c, err := r.Cookie(SessionCookie); err == nil {
		s.sessions.end(c.Value)
	}
	http.SetCookie(w, &http.Cookie{Name: SessionCookie, Value: "", Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil, MaxAge: -1})
	writeJSON(w, http.StatusOK, map[string]any{"loggedOut": true})
}

// sessionToken returns the token behind a request's session cookie, when
// it has one and the request comes from the UI.
func (s *Server) sessionToken(r *http.Request) (storedToken, bool, error) {
	c, err := r.Cookie(SessionCookie)
	if err != nil {
		return storedToken{}, false, nil
	}
	if r.Header.Get(UIHeader) == "" {
		return storedToken{}, false, errors.New("a request with the session cookie must send the " + UIHeader + " header")
	}
	d, ok := s.sessions.session(c.Value, s.o.Now())
	if !ok {
		return storedToken{}, false, nil
	}
	tok, ok := s.tokens.byDigest(d)
	return tok, ok, nil
}

// byDigest returns the stored token with digest d.
func (ts *tokenStore) byDigest(d [32]byte) (storedToken, bool) {
	for _, t := range ts.current() {
		if subtle.ConstantTimeCompare(d[:], t.digest[:]) == 1 {
			return t, true
		}
	}
	return storedToken{}, false
}

// main returns the main token (namespace "").
func (ts *tokenStore) main() (storedToken, bool) {
	for _, t := range ts.current() {
		if t.namespace == "" {
			return t, true
		}
	}
	return storedToken{}, false
}

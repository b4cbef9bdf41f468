package server

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/ragmem/ragmem/internal/perm"
	"github.com/ragmem/ragmem/internal/wal"
)

// tokenFileName is the name of the token file in the data directory.
const tokenFileName = "server-tokens.json"

// tokenPrefix starts every token, so that a leaked one is recognisable.
const tokenPrefix = "rgm_"

// Token is one API token. A token with an empty Namespace is the main
// token: it may use any namespace through the X-Ragmem-Namespace header. A
// token with a Namespace can only ever reach that namespace. Token is a
// plain value. The functions on token files (EnsureToken, RotateToken,
// Tokens) may be called from several processes: every write replaces the
// file atomically, and the last writer wins.
type Token struct {
	Secret    string    `json:"token"`
	Namespace string    `json:"namespace"`
	Created   time.Time `json:"created"`
}

// Fingerprint identifies the token in logs and listings without revealing
// it: the first 8 hex digits of its SHA-256.
func (t Token) Fingerprint() string {
	d := sha256.Sum256([]byte(t.Secret))
	return hex.EncodeToString(d[:4])
}

type tokenFile struct {
	Version int     `json:"version"`
	Tokens  []Token `json:"tokens"`
}

// TokenPath returns the token file of a data directory.
func TokenPath(dir string) string { return filepath.Join(dir, tokenFileName) }

func newSecret() (string, error) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("server: generate token: %w", err)
	}
	return tokenPrefix + base64.RawURLEncoding.EncodeToString(b[:]), nil
}

// readTokens reads the token file, refusing one another user could have
// written (internal/perm: another owner, group or world write, a link).
func readTokens(path string) (tokenFile, error) {
	var tf tokenFile
	if err := checkDir(filepath.Dir(path)); err != nil {
		return tf, err
	}
	if err := perm.CheckFile(path); err != nil {
		return tf, fmt.Errorf("server: the token file: %w", err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return tf, err
	}
	if err := json.Unmarshal(b, &tf); err != nil {
		return tf, fmt.Errorf("server: token file %s is damaged (%v); move it aside and run ragmem token rotate", path, err)
	}
	return tf, nil
}

// checkDir applies internal/perm's rule to the data directory of the token
// file, or to where it will be created.
func checkDir(dir string) error {
	if _, err := os.Stat(dir); err != nil {
		if err := perm.BeforeCreate(dir); err != nil {
			return fmt.Errorf("server: the data directory: %w", err)
		}
		return nil
	}
	if _, err := perm.Dir(dir); err != nil {
		return fmt.Errorf("server: the data directory: %w", err)
	}
	return nil
}

// writeTokens writes the file atomically with mode 0600 (internal/wal:
// temporary file, fsync, rename, fsync of the directory).
func writeTokens(path string, tf tokenFile) error {
	tf.Version = 1
	sort.Slice(tf.Tokens, func(i, j int) bool { return tf.Tokens[i].Namespace < tf.Tokens[j].Namespace })
	b, err := json.MarshalIndent(tf, "", "  ")
	if err != nil {
		return err
	}
	if err := checkDir(filepath.Dir(path)); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	return wal.WriteFile(wal.OS{}, path, &wal.WriteOptions{Shared: true}, func(w io.Writer) error {
		_, err := w.Write(append(b, '\n'))
		return err
	})
}

// EnsureToken returns the main token of the data directory, creating the
// token file (mode 0600) with a new random token when there is none.
// created reports whether it did; the caller prints a new token once.
func EnsureToken(dir string) (token string, created bool, err error) {
	path := TokenPath(dir)
	tf, err := readTokens(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return "", false, err
	}
	for _, t := range tf.Tokens {
		if t.Namespace == "" {
			return t.Secret, false, nil
		}
	}
	s, err := RotateToken(dir, "")
	return s, err == nil, err
}

// RotateToken replaces the token of namespace ("" for the main token) with
// a new random one, or adds it, and returns it. A running server accepts the
// new token and refuses the old one within a second.
func RotateToken(dir, namespace string) (string, error) {
	if namespace != "" && !validNamespace(namespace) {
		return "", fmt.Errorf("%w %q: %s", ErrBadNamespace, namespace, namespaceRule)
	}
	path := TokenPath(dir)
	tf, err := readTokens(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return "", err
	}
	s, err := newSecret()
	if err != nil {
		return "", err
	}
	kept := tf.Tokens[:0]
	for _, t := range tf.Tokens {
		if t.Namespace != namespace {
			kept = append(kept, t)
		}
	}
	tf.Tokens = append(kept, Token{Secret: s, Namespace: namespace, Created: time.Now().UTC()})
	if err := writeTokens(path, tf); err != nil {
		return "", fmt.Errorf("server: write token file: %w", err)
	}
	return s, nil
}

// Tokens lists the tokens of a data directory.
func Tokens(dir string) ([]Token, error) {
	tf, err := readTokens(TokenPath(dir))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	return tf.Tokens, err
}

// tokenStore answers which token a request carries. It re-reads the token
// file when it changes (checked at most once a second), so that rotation
// takes effect without a restart. It is safe for concurrent use.
type tokenStore struct {
	path string
	log  *slog.Logger

	mu      sync.Mutex
	checked time.Time
	file    os.FileInfo // of the file last read; rotation replaces the file (a new inode)
	refused bool        // the file was refused (perm): checked again every time until fixed
	tokens  []storedToken
}

type storedToken struct {
	digest    [32]byte
	namespace string
	id        string // short fingerprint for logs and rate-limit keys
}

func newTokenStore(path string, log *slog.Logger) (*tokenStore, error) {
	ts := &tokenStore{path: path, log: log}
	if err := ts.reload(true); err != nil {
		return nil, err
	}
	if len(ts.tokens) == 0 {
		return nil, ErrNoToken
	}
	return ts, nil
}

// reload re-reads the file when it was replaced or its size or
// modification time changed.
func (ts *tokenStore) reload(force bool) error {
	fi, err := os.Stat(ts.path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return ErrNoToken
		}
		return err
	}
	if !force && !ts.refused && ts.file != nil && os.SameFile(fi, ts.file) && fi.ModTime().Equal(ts.file.ModTime()) && fi.Size() == ts.file.Size() {
		return nil
	}
	ts.refused = false
	// A file another user could have written (planted, or replaced in a
	// directory open to them) is refused: nobody gets in with its tokens.
	// One others may read is made private again; the token is a password.
	note, err := perm.File(ts.path)
	if err != nil {
		ts.log.Error("the token file is refused: no token is accepted until it is fixed", "file", ts.path, "err", err)
		ts.tokens, ts.file, ts.refused = nil, fi, true
		return fmt.Errorf("server: the token file: %w", err)
	}
	if note != "" {
		ts.log.Warn(note, "file", ts.path)
	} else if p := fi.Mode().Perm(); p&0o077 != 0 {
		ts.log.Error("the token file can be read by other users and could not be made private; fix its mode (chmod 600) and rotate the tokens (ragmem token rotate)",
			"file", ts.path, "mode", fmt.Sprintf("%04o", p))
	}
	tf, err := readTokens(ts.path)
	if err != nil {
		return err
	}
	toks := make([]storedToken, 0, len(tf.Tokens))
	for _, t := range tf.Tokens {
		if !strings.HasPrefix(t.Secret, tokenPrefix) || len(t.Secret) < len(tokenPrefix)+16 {
			continue
		}
		d := sha256.Sum256([]byte(t.Secret))
		toks = append(toks, storedToken{digest: d, namespace: t.Namespace, id: hex.EncodeToString(d[:4])})
	}
	ts.tokens, ts.file = toks, fi
	return nil
}

// lookup returns the token matching secret. Every stored token is compared
// in constant time, so timing tells nothing about which one nearly matched.
func (ts *tokenStore) lookup(secret string) (storedToken, bool) {
	toks := ts.current()
	d := sha256.Sum256([]byte(secret))
	var found storedToken
	ok := 0
	for _, t := range toks {
		m := subtle.ConstantTimeCompare(d[:], t.digest[:])
		if m == 1 {
			found = t
		}
		ok |= m
	}
	return found, ok == 1
}

// current returns the tokens, re-reading the file when it changed (checked
// at most once a second).
func (ts *tokenStore) current() []storedToken {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if now := time.Now(); now.Sub(ts.checked) >= time.Second {
		ts.checked = now
		switch err := ts.reload(false); {
		case errors.Is(err, ErrNoToken):
			ts.tokens = nil // the file was removed: nobody gets in
		case err != nil:
			// Unreadable or damaged: keep the tokens we have, so that a
			// half-finished manual edit does not lock every client out.
		}
	}
	return ts.tokens
}

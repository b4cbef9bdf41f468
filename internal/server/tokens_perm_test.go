package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ragmem/ragmem/internal/perm"
	"github.com/ragmem/ragmem/internal/server"
)

// TestDataDirectoryIsTheUsers is item 5 of issue 25: a data directory that
// others may write is refused with the fix, and a token file that another
// user planted (owned by them, in a directory that was left open) is never
// used: not at start, not when it replaces the file under a running
// server, whose tokens then all stop working until the user fixes it.
// Owners need root (chown); the modes are checked as any user.
func TestDataDirectoryIsTheUsers(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if _, _, err := server.EnsureToken(dir); err != nil {
		t.Fatal(err)
	}
	os.Chmod(dir, 0o777)
	_, err := server.New(context.Background(), dir, &server.Options{Logger: quietLogger()})
	if !errors.Is(err, perm.ErrUnsafe) || !strings.Contains(err.Error(), "chmod go-w "+dir) {
		t.Fatalf("a 0777 data directory: %v", err)
	}
	if _, err := server.Tokens(dir); err == nil || !strings.Contains(err.Error(), "chmod go-w") {
		t.Fatalf("token list in a 0777 data directory: %v", err)
	}
	os.Chmod(dir, 0o700)
	if os.Geteuid() != 0 {
		t.Skip("planting another user's file needs root")
	}
	// A running server; the directory is opened to others, and another
	// user replaces the token file with one of their own.
	var logs bytes.Buffer
	srv, err := server.New(context.Background(), dir, &server.Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	hs := httptest.NewServer(srv)
	defer hs.Close()
	ts := &testServer{t: t, dir: dir, srv: srv, url: hs.URL, hs: hs}
	mine, err := server.Tokens(dir)
	if err != nil || len(mine) != 1 {
		t.Fatal(mine, err)
	}
	ts.token = mine[0].Secret
	ts.must(http.StatusOK, "GET", "/v1/stats", nil)
	planted := server.Token{Secret: "rgm_planted-by-another-user-0123456789", Created: time.Now()}
	b, _ := json.Marshal(map[string]any{"version": 1, "tokens": []server.Token{planted}})
	tmp := filepath.Join(dir, "planted.json")
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(tmp, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, server.TokenPath(dir)); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		time.Sleep(300 * time.Millisecond)
		p := ts.req("GET", "/v1/stats", nil, "Authorization", "Bearer "+planted.Secret)
		if p.status == http.StatusOK {
			t.Fatalf("the planted token was accepted: %s", p.body)
		}
		if r := ts.req("GET", "/v1/stats", nil); r.status == http.StatusUnauthorized || time.Now().After(deadline) {
			break // the file changed: no token is accepted until it is fixed
		}
	}
	if r := ts.req("GET", "/v1/stats", nil); r.status != http.StatusUnauthorized {
		t.Fatalf("the user's token after the file was replaced: %d", r.status)
	}
	if !strings.Contains(logs.String(), "the token file is refused") || !strings.Contains(logs.String(), "uid 65534") {
		t.Errorf("the log does not say why:\n%s", logs.String())
	}
	// The user removes the planted file and rotates: back in.
	if _, err := server.RotateToken(dir, ""); err == nil {
		t.Fatal("rotation over another user's token file")
	}
	os.Remove(server.TokenPath(dir))
	tok, err := server.RotateToken(dir, "")
	if err != nil {
		t.Fatal(err)
	}
	ts.token = tok
	deadline = time.Now().Add(5 * time.Second)
	for ts.req("GET", "/v1/stats", nil).status != http.StatusOK {
		if time.Now().After(deadline) {
			t.Fatal("the new token is not accepted")
		}
		time.Sleep(200 * time.Millisecond)
	}
}

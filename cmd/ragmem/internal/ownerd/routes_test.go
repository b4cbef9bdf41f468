package ownerd

import (
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/ragmem/ragmem/internal/export"
	"github.com/ragmem/ragmem/internal/owner"
)

// TestOwnerRouteInputs: the owner's export and import routes take only an
// absolute, clean path, a JSON body of known fields and a key of the right
// size; anything else is a 400 before a file is touched.
func TestOwnerRouteInputs(t *testing.T) {
	for p, ok := range map[string]bool{"/tmp/backup.ragmem": true, "": false, "backup.ragmem": false, "/tmp/../etc/x": false, "/tmp//x": false} {
		w := httptest.NewRecorder()
		if got := servePath(w, httptest.NewRequest(http.MethodPost, ExportPath, nil), p); got != ok || (!ok && w.Code != http.StatusBadRequest) {
			t.Errorf("servePath(%q) = %v (status %d), want %v", p, got, w.Code, ok)
		}
	}
	for body, ok := range map[string]bool{`{"path":"/x","mode":"merge"}`: true, `{"path":"/x","extra":1}`: false, `{"path":`: false} {
		w := httptest.NewRecorder()
		var ir ImportRequest
		got := decodeOwnerRequest(w, httptest.NewRequest(http.MethodPost, ImportPath, strings.NewReader(body)), &ir)
		if got != ok || (!ok && w.Code != http.StatusBadRequest) || (ok && (ir.Path != "/x" || ir.Mode != "merge")) {
			t.Errorf("decodeOwnerRequest(%s) = %v (status %d, %+v), want %v", body, got, w.Code, ir, ok)
		}
	}
	for n, ok := range map[int]bool{0: true, export.KeySize: true, export.KeySize - 1: false, export.KeySize + 1: false} {
		var key []byte
		if n > 0 {
			key = make([]byte, n)
		}
		if err := checkKey(key); (err == nil) != ok {
			t.Errorf("checkKey(%d bytes) = %v", n, err)
		}
	}
	if _, err := ImportInto(t.Context(), nil, nil, "overwrite", nil); err == nil || !strings.Contains(err.Error(), "unknown mode") {
		t.Errorf("an unknown import mode: %v", err)
	}
}

func TestDescribeOwner(t *testing.T) {
	old := os.Args
	defer func() { os.Args = old }()
	os.Args = []string{"/usr/bin/ragmem", "search", "two words", strings.Repeat("x", 300)}
	cl := CommandLine()
	if !strings.HasPrefix(cl, `ragmem search "two words" xxx`) || !strings.HasSuffix(cl, "…") || len(cl) != 200+len("…") {
		t.Errorf("CommandLine() = %q", cl)
	}
	for k, want := range map[owner.Kind]string{owner.KindServe: "ragmem serve", owner.KindDaemon: "the background owner started by ragmem mcp", owner.KindCLI: "a ragmem command"} {
		if got := DescribeKind(k, ""); got != want {
			t.Errorf("DescribeKind(%s) = %q, want %q", k, got, want)
		}
	}
	if got := DescribeKind(owner.KindCLI, "ragmem index docs"); got != "ragmem index docs" {
		t.Errorf("a command's owner is named by its command line, got %q", got)
	}
}

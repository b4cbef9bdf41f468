package server_test

import (
	"strings"
	"testing"

	"github.com/ragmem/ragmem/server"
)

// TestBinaryTextIsRefused: text that is binary data (a NUL, control bytes)
// is a page with no text to index, 422, never a 500.
func TestBinaryTextIsRefused(t *testing.T) {
	ts := newTestServer(t, nil)
	for _, body := range []string{
		`{"url":"https://a.example/nul","text":"nul \u0000 inside"}`,
		`{"url":"https://a.example/ctl","text":"` + strings.Repeat(`\u0001\u0002 `, 100) + `","format":"markdown"}`,
	} {
		r := ts.req("POST", "/v1/pages", body)
		if r.status != 422 || r.errCode() != server.CodeNoContent || !strings.Contains(string(r.body), "binary") {
			t.Errorf("%.60s: %d %s", body, r.status, r.body)
		}
	}
}

package server

import (
	"net/http"
	"strings"
	"testing"

	"github.com/ragmem/ragmem/rag"
)

// TestDecodeJSONContentTypes covers the content-type rule of decodeJSON.
func TestDecodeJSONContentTypes(t *testing.T) {
	for ct, ok := range map[string]bool{
		"": false, "application/json": true, "application/json; charset=utf-8": true, "application/merge-patch+json": true,
		"text/plain": false, "application/x-www-form-urlencoded": false, "multipart/form-data; boundary=x": false, ";;": false,
	} {
		r, _ := http.NewRequest("POST", "/", strings.NewReader(`{"query":"x"}`))
		if ct != "" {
			r.Header.Set("Content-Type", ct)
		}
		var q rag.SearchRequest
		a := decodeJSON(r, &q)
		if (a == nil) != ok {
			t.Errorf("%q: %v", ct, a)
		}
		if a != nil && a.status != http.StatusUnsupportedMediaType {
			t.Errorf("%q: status %d", ct, a.status)
		}
	}
}

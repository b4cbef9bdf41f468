package server

import (
	"net/http"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/ragmem/ragmem/chunk"
	"github.com/ragmem/ragmem/index"
	"github.com/ragmem/ragmem/search"
)

// FuzzDecodeRequest feeds arbitrary bodies to every request decoder and
// validator: they must never panic, must answer 4xx with a code and a
// message, and what they accept must satisfy the API's limits. Seeds are in
// testdata/fuzz/FuzzDecodeRequest.
func FuzzDecodeRequest(f *testing.F) {
	f.Add(uint8(0), []byte(`{"url":"https://a.example/","html":"<p>x</p>"}`))
	f.Add(uint8(1), []byte(`{"query":"otters","topK":3,"mode":"fulltext","threshold":-1,"filters":{"docTypes":["knowledge"]}}`))
	f.Add(uint8(2), []byte(`{"query":"otters","model":"gpt-4o","modelContextLimit":8192}`))
	f.Add(uint8(3), []byte(`{"type":"style","content":"concise"}`))
	f.Add(uint8(4), []byte(`{"message":"I'm a nurse","save":true}`))
	f.Add(uint8(5), []byte(`{"documents":[{"url":"file:///home/me/a.md","content":"# A","format":"markdown","attrs":{"team":"search"}},{"url":"memory://x","content":"<p>x</p>","format":"html","type":"memory","extracted":true}]}`))
	f.Fuzz(func(t *testing.T, kind uint8, body []byte) {
		check := func(a *apiError) {
			if a == nil {
				return
			}
			if a.status < 400 || a.status > 499 || a.code == "" || a.message == "" || !utf8.ValidString(a.message) {
				t.Fatalf("bad error %+v", a)
			}
		}
		switch kind % 6 {
		case 0:
			var p pageRequest
			a := decodeBody(body, &p)
			check(a)
			if a != nil {
				return
			}
			u, a := p.validate()
			check(a)
			if a == nil {
				if u == "" || len(u) > maxURLBytes || !utf8.ValidString(u) || strings.ContainsAny(u, "\r\n\x00") {
					t.Fatalf("accepted url %q", u)
				}
				if (strings.TrimSpace(p.HTML) == "") == (strings.TrimSpace(p.Text) == "") {
					t.Fatalf("accepted html %q text %q", p.HTML, p.Text)
				}
			}
		case 1:
			var q SearchRequest
			a := decodeBody(body, &q)
			check(a)
			if a != nil {
				return
			}
			o, a := q.options(maxTopK)
			check(a)
			if a == nil {
				if o.TopK < 0 || o.TopK > maxTopK || strings.TrimSpace(q.Query) == "" {
					t.Fatalf("accepted %+v", o)
				}
				// "" leaves the mode to the engine's configuration.
				if o.Mode != "" && o.Mode != search.Hybrid && o.Mode != search.Vector && o.Mode != search.FullText {
					t.Fatalf("accepted mode %q", o.Mode)
				}
			}
		case 2:
			var c ContextRequest
			a := decodeBody(body, &c)
			check(a)
			if a == nil {
				a = c.validate(maxTopK)
				check(a)
				if a == nil && (c.ModelContextLimit < 0 || c.ResponseReserve < 0 || c.SystemPromptTokens < 0) {
					t.Fatalf("accepted %+v", c)
				}
			}
		case 3:
			var p PreferenceRequest
			a := decodeBody(body, &p)
			check(a)
			if a == nil {
				_, a = p.validate()
				check(a)
			}
		case 4:
			var d detectRequest
			a := decodeBody(body, &d)
			check(a)
			if a == nil {
				check(d.validate())
			}
		case 5:
			var req DocumentsRequest
			a := decodeBody(body, &req)
			check(a)
			if a != nil {
				return
			}
			for i := range req.Documents {
				d, a := req.Documents[i].document(i)
				check(a)
				if a != nil {
					continue
				}
				if d.SourceURL == "" || !utf8.ValidString(d.SourceURL) || strings.ContainsAny(d.SourceURL, "\r\n\x00") ||
					!utf8.ValidString(d.Content) || index.CheckAttrs(d.Attrs) != nil ||
					(d.DocType != index.DocKnowledge && d.DocType != index.DocMemory) || (d.Extracted && d.Format != chunk.HTML) {
					t.Fatalf("accepted %+v", d)
				}
			}
		}
	})
}

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
		var q SearchRequest
		a := decodeJSON(r, &q)
		if (a == nil) != ok {
			t.Errorf("%q: %v", ct, a)
		}
		if a != nil && a.status != http.StatusUnsupportedMediaType {
			t.Errorf("%q: status %d", ct, a.status)
		}
	}
}

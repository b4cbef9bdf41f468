package rag

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/ragmem/ragmem/chunk"
	"github.com/ragmem/ragmem/index"
	"github.com/ragmem/ragmem/prefs"
	"github.com/ragmem/ragmem/search"
)

// decode reads a wire request. A body that does not decode is the
// binding's refusal (invalid_json), not the checks': what decoded of it is
// checked all the same.
func decode(body []byte, v any) error {
	_ = json.Unmarshal(body, v)
	return nil
}

// FuzzWireRequest feeds arbitrary bodies to every wire request's checks:
// they must never panic, a refusal is an *Error with a code and a
// message, and what they accept must satisfy the API's limits.
func FuzzWireRequest(f *testing.F) {
	f.Add(uint8(0), []byte(`{"url":"https://a.example/","html":"<p>x</p>"}`))
	f.Add(uint8(1), []byte(`{"query":"otters","topK":3,"mode":"fulltext","threshold":-1,"filters":{"docTypes":["knowledge"]}}`))
	f.Add(uint8(2), []byte(`{"query":"otters","model":"gpt-4o","modelContextLimit":8192}`))
	f.Add(uint8(3), []byte(`{"type":"style","content":"concise"}`))
	f.Add(uint8(4), []byte(`{"message":"I'm a nurse","save":true}`))
	f.Add(uint8(5), []byte(`{"documents":[{"url":"file:///home/me/a.md","content":"# A","format":"markdown","attrs":{"team":"search"}},{"url":"memory://x","content":"<p>x</p>","format":"html","type":"memory","extracted":true}]}`))
	f.Fuzz(func(t *testing.T, kind uint8, body []byte) {
		check := func(err error) {
			if err == nil {
				return
			}
			var e *Error
			if !errors.As(err, &e) || e.Code == "" || e.Message == "" || !utf8.ValidString(e.Message) || ErrorCode(err) == "internal" {
				t.Fatalf("bad error %#v", err)
			}
		}
		switch kind % 6 {
		case 0:
			var p PageRequest
			a := decode(body, &p)
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
			a := decode(body, &q)
			check(a)
			if a != nil {
				return
			}
			o, a := q.options()
			check(a)
			if a == nil {
				if o.TopK < 0 || o.TopK > MaxTopK || strings.TrimSpace(q.Query) == "" {
					t.Fatalf("accepted %+v", o)
				}
				// "" leaves the mode to the engine's configuration.
				if o.Mode != "" && o.Mode != search.Hybrid && o.Mode != search.Vector && o.Mode != search.FullText {
					t.Fatalf("accepted mode %q", o.Mode)
				}
			}
		case 2:
			var c ContextRequest
			a := decode(body, &c)
			check(a)
			if a == nil {
				a = c.validate()
				check(a)
				if a == nil && (c.ModelContextLimit < 0 || c.ResponseReserve < 0 || c.SystemPromptTokens < 0) {
					t.Fatalf("accepted %+v", c)
				}
			}
		case 3:
			var p PreferenceRequest
			a := decode(body, &p)
			check(a)
			if _, err := prefs.ParseType(p.Type); err == nil && a == nil && p.Type == "" {
				t.Fatalf("an empty preference type parsed")
			}
		case 4:
			var d DetectRequest
			a := decode(body, &d)
			check(a)
			_ = a
		case 5:
			var req DocumentsRequest
			a := decode(body, &req)
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

package jsonbody

import (
	"strings"
	"testing"
)

// TestDecodeRefusesAmbiguousBodies: a body whose meaning depends on the
// decoder is refused rather than read one way in silence: a key given twice
// in one object (encoding/json keeps the last; other parsers the first), a
// top-level key given twice in two cases (both fill one struct field), and
// a \u escape of a lone UTF-16 surrogate (encoding/json turns it into
// U+FFFD, as it would bytes of invalid UTF-8, which are refused).
func TestDecodeRefusesAmbiguousBodies(t *testing.T) {
	type req struct {
		URL   string            `json:"url"`
		Attrs map[string]string `json:"attrs"`
		Sub   *struct {
			Q string `json:"q"`
		} `json:"sub"`
	}
	for body, want := range map[string]string{
		`{"url":"a","url":"b"}`:                            `duplicate key "url"`,
		`{"url":"a","\u0075rl":"b"}`:                       `duplicate key "url"`,
		`{"url":"a","URL":"b"}`:                            `duplicate key "URL"`,
		`{"attrs":{"k":"1","k":"2"}}`:                      `duplicate key "k"`,
		`{"sub":{"q":"1","q":"2"}}`:                        `duplicate key "q"`,
		`{"url":"a\ud800"}`:                                "lone UTF-16 surrogate",
		`{"url":"a\udc00b"}`:                               "lone UTF-16 surrogate",
		`{"url":"\ud800\u0041"}`:                           "lone UTF-16 surrogate",
		`{"attrs":{"k\uDBFF":"v"}}`:                        "lone UTF-16 surrogate",
		`{"url":"` + strings.Repeat("x", 100) + `\uD800"}`: "at byte 108",
	} {
		var v req
		err := Decode([]byte(body), &v)
		if err == nil || !strings.Contains(err.Error(), want) || !strings.HasPrefix(err.Error(), "invalid JSON: ") {
			t.Errorf("%s: error %v, want it to say %q", body, err, want)
		}
	}
	// What stays accepted: a surrogate pair, an escaped backslash before a
	// u, the same key in different objects or in two cases inside a map.
	for _, body := range []string{
		`{"url":"\ud83d\ude00"}`,
		`{"url":"\\ud800"}`,
		`{"url":"a","sub":{"q":"url"},"attrs":{"url":"x","URL":"y","Url":"z"}}`,
		`{"attrs":{"a":"1"},"sub":{"q":"1"}}`,
	} {
		var v req
		if err := Decode([]byte(body), &v); err != nil {
			t.Errorf("%s: %v", body, err)
		}
	}
}

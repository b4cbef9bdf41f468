package jsonbody

import (
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
)

func TestContentType(t *testing.T) {
	for _, ct := range []string{"application/json", "application/json; charset=utf-8", "application/problem+json", "Application/JSON"} {
		if err := ContentType(ct); err != nil {
			t.Errorf("%q refused: %v", ct, err)
		}
	}
	for _, ct := range []string{"text/plain", "application/x-www-form-urlencoded", ";;;", "text/" + strings.Repeat("x", 500)} {
		err := ContentType(ct)
		if err == nil || !strings.Contains(err.Error(), "is not JSON") || len(err.Error()) > 200 {
			t.Errorf("%.20q: %v", ct, err)
		}
	}
	// No Content-Type is not taken for JSON.
	for _, ct := range []string{"", "  "} {
		if err := ContentType(ct); err == nil || !strings.Contains(err.Error(), "no Content-Type") {
			t.Errorf("%q: %v", ct, err)
		}
	}
}

func TestDecode(t *testing.T) {
	type req struct {
		Query string `json:"query"`
		TopK  int    `json:"topK"`
	}
	var ok req
	if err := Decode([]byte(` {"query":"q","topK":3} `), &ok); err != nil || ok.Query != "q" || ok.TopK != 3 {
		t.Fatalf("valid body: %+v, %v", ok, err)
	}
	for body, want := range map[string]string{
		"":                         "request body is empty",
		"  \n ":                    "request body is empty",
		`{"query":`:                "invalid JSON: the object is not complete",
		`{"query":"q",}`:           "invalid JSON: syntax error at byte",
		`{"topK":"three"}`:         `invalid JSON: field "topK" must be int, not string`,
		`[1,2]`:                    "invalid JSON: expected",
		`{"other":1}`:              `invalid JSON: json: unknown field "other"`,
		`{"query":"q"} {"x":1}`:    "invalid JSON: unexpected data after the object",
		"{\"query\":\"\xff\xfe\"}": "not valid UTF-8 (from byte 10)",
		"{\"query\":\"caf\xe9\"}":  "not valid UTF-8 (from byte 13)",
	} {
		var v req
		err := Decode([]byte(body), &v)
		if want == "" {
			if err != nil {
				t.Errorf("%q: %v", body, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: error %v, want it to contain %q", body, err, want)
		}
	}
}

// Write and WriteError produce the one envelope both handlers share.
func TestWriteError(t *testing.T) {
	rec := httptest.NewRecorder()
	WriteError(rec, http.StatusNotFound, CodeNotFound, "no <such> thing", "req-1")
	want := `{"error":{"code":"not_found","message":"no <such> thing","requestId":"req-1"}}` + "\n"
	if rec.Code != http.StatusNotFound || rec.Body.String() != want {
		t.Fatalf("%d %q", rec.Code, rec.Body.String())
	}
	h := rec.Header()
	if h.Get("Content-Type") != "application/json; charset=utf-8" || h.Get("Content-Length") != strconv.Itoa(len(want)) || h.Get("Cache-Control") != "no-store" {
		t.Fatalf("headers %v", h)
	}
	rec = httptest.NewRecorder()
	WriteError(rec, http.StatusBadRequest, CodeBadRequest, "x", "")
	if got := rec.Body.String(); got != `{"error":{"code":"bad_request","message":"x"}}`+"\n" {
		t.Fatalf("without a request id: %q", got)
	}
	rec = httptest.NewRecorder()
	Write(rec, http.StatusOK, map[string]any{"bad": func() {}})
	if rec.Code != http.StatusInternalServerError || !strings.Contains(rec.Body.String(), `"code":"internal"`) {
		t.Fatalf("unencodable value: %d %q", rec.Code, rec.Body.String())
	}
}

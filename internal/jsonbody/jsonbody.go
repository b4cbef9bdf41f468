// Package jsonbody reads and writes the JSON bodies of ragmem's HTTP
// handlers (server and memory/memhttp) by one set of rules. Requests: a JSON
// content type, valid UTF-8, exactly one object, no unknown fields, nothing
// after it; its errors are written for the client who sent the body.
// Responses: one JSON line (Write), and errors as one envelope,
// {"error": {"code", "message", "requestId"}} (WriteError), with the codes
// listed here.
package jsonbody

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"strings"
	"unicode/utf8"

	"github.com/ragmem/ragmem/internal/clean"
)

// ContentType checks a Content-Type header: application/json or a +json
// type pass; a missing one does not (a body is never guessed to be JSON).
func ContentType(ct string) error {
	if strings.TrimSpace(ct) == "" {
		return errors.New("the request has no Content-Type; send the JSON body with Content-Type: application/json")
	}
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil || (mt != "application/json" && !strings.HasSuffix(mt, "+json")) {
		return fmt.Errorf("content type %q is not JSON; send application/json", clean.Clip(ct, 100))
	}
	return nil
}

// Decode decodes exactly one JSON object from body into v, refusing unknown
// fields and trailing data.
func Decode(body []byte, v any) error {
	if len(bytes.TrimSpace(body)) == 0 {
		return errors.New("request body is empty; send a JSON object")
	}
	if !utf8.Valid(body) {
		// encoding/json would quietly replace the bad bytes.
		return fmt.Errorf("invalid JSON: the body is not valid UTF-8 (from byte %d)", invalidAt(body))
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return errors.New("invalid JSON: " + describe(err))
	}
	var extra json.RawMessage
	if err := dec.Decode(&extra); err != io.EOF {
		return errors.New("invalid JSON: unexpected data after the object")
	}
	if at := loneSurrogate(body); at >= 0 {
		// encoding/json would quietly replace it with U+FFFD.
		return fmt.Errorf("invalid JSON: a \\u escape of a lone UTF-16 surrogate at byte %d (not a character)", at)
	}
	return duplicateKeys(body)
}

// loneSurrogate returns the offset of the first \u escape in a string of
// the valid JSON body that is a UTF-16 surrogate not in a pair, or -1.
func loneSurrogate(body []byte) int {
	hex := func(i int) (rune, bool) { // the \uXXXX at i
		if i+6 > len(body) || body[i] != '\\' || body[i+1] != 'u' {
			return 0, false
		}
		var r rune
		for _, c := range body[i+2 : i+6] {
			switch {
			case '0' <= c && c <= '9':
				r = r<<4 | rune(c-'0')
			case 'a' <= c && c <= 'f':
				r = r<<4 | rune(c-'a'+10)
			case 'A' <= c && c <= 'F':
				r = r<<4 | rune(c-'A'+10)
			default:
				return 0, false
			}
		}
		return r, true
	}
	in := false
	for i := 0; i < len(body); i++ {
		switch c := body[i]; {
		case c == '"':
			in = !in
		case in && c == '\\':
			r, ok := hex(i)
			switch {
			case !ok:
				i++ // \" \\ \n ...: skip the escaped byte
			case 0xD800 <= r && r < 0xDC00:
				if r2, ok := hex(i + 6); !ok || r2 < 0xDC00 || r2 > 0xDFFF {
					return i
				}
				i += 11
			case 0xDC00 <= r && r <= 0xDFFF:
				return i
			default:
				i += 5
			}
		}
	}
	return -1
}

// duplicateKeys refuses a key given twice in one object of the valid JSON
// body: encoding/json keeps the last, other parsers the first. Keys of the
// top-level object, which encoding/json matches to struct fields ignoring
// case, are compared ignoring case.
func duplicateKeys(body []byte) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	type frame struct {
		object bool
		keys   map[string]bool
		key    bool // the next string token is a key
	}
	var stack []frame
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return errors.New("invalid JSON: " + describe(err))
		}
		top := len(stack) - 1
		isKey := top >= 0 && stack[top].object && stack[top].key
		if top >= 0 && stack[top].object {
			stack[top].key = !stack[top].key
		}
		switch t := tok.(type) {
		case json.Delim:
			switch t {
			case '{':
				stack = append(stack, frame{object: true, keys: map[string]bool{}, key: true})
			case '[':
				stack = append(stack, frame{})
			default:
				stack = stack[:top]
				if top > 0 && stack[top-1].object {
					stack[top-1].key = true // the value is complete
				}
			}
			continue
		case string:
			if isKey {
				k := t
				if top == 0 {
					k = strings.ToLower(t)
				}
				if stack[top].keys[k] {
					return fmt.Errorf("invalid JSON: duplicate key %q (at byte %d); give each key once", clean.Clip(t, 100), dec.InputOffset())
				}
				stack[top].keys[k] = true
			}
		}
	}
}

// describe says what is wrong with a body in terms of its bytes and fields.
func describe(err error) string {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		return fmt.Sprintf("syntax error at byte %d: %v", se.Offset, se)
	case errors.As(err, &te):
		if te.Field != "" {
			return fmt.Sprintf("field %q must be %s, not %s", te.Field, te.Type, te.Value)
		}
		return fmt.Sprintf("expected %s, not %s", te.Type, te.Value)
	case errors.Is(err, io.ErrUnexpectedEOF):
		return "the object is not complete"
	}
	return clean.Clip(err.Error(), 300)
}

// invalidAt returns the offset of the first byte of b that is not part of
// valid UTF-8.
func invalidAt(b []byte) int {
	for i := 0; i < len(b); {
		r, size := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && size <= 1 {
			return i
		}
		i += size
	}
	return len(b)
}

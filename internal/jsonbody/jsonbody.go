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
	return nil
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

package server

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"unicode/utf8"

	"github.com/ragmem/ragmem/internal/jsonbody"
)

// Limits on request fields.
const (
	maxURLBytes     = 8 << 10
	maxTitleBytes   = 1 << 10
	maxQueryBytes   = 16 << 10
	maxMessageBytes = 64 << 10
	// maxTopK bounds topK and maxPerSource of a remote client's requests;
	// on local listeners (the user's own commands, which may ask what a
	// local engine answers: ragmem search --top-k 500) the contract's
	// bound holds (rag.MaxTopK).
	maxTopK = 100
)

func badRequest(format string, args ...any) *apiError {
	return errorf(http.StatusBadRequest, CodeBadRequest, fmt.Sprintf(format, args...))
}

// decodeJSON reads one JSON object from the body into v: unknown fields,
// trailing data, a wrong content type and an oversized body are errors.
func decodeJSON(r *http.Request, v any) *apiError {
	if err := jsonbody.ContentType(r.Header.Get("Content-Type")); err != nil {
		return errorf(http.StatusUnsupportedMediaType, CodeUnsupportedMedia, err.Error())
	}
	if r.Body == nil {
		return errorf(http.StatusBadRequest, CodeInvalidJSON, "request body is empty; send a JSON object")
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return errorf(http.StatusRequestEntityTooLarge, CodeTooLarge, tooLargeMsg(mbe.Limit))
		}
		return errorf(http.StatusBadRequest, CodeBadRequest, "reading the request body failed (the connection broke or timed out)")
	}
	return decodeBody(body, v)
}

// decodeBody decodes one JSON object from body into v.
func decodeBody(body []byte, v any) *apiError {
	if err := jsonbody.Decode(body, v); err != nil {
		return errorf(http.StatusBadRequest, CodeInvalidJSON, err.Error())
	}
	return nil
}

// checkText rejects invalid UTF-8 and over-long strings.
func checkText(field, s string, max int) *apiError {
	if !utf8.ValidString(s) {
		return badRequest("%s is not valid UTF-8", field)
	}
	if len(s) > max {
		return badRequest("%s is longer than %d bytes", field, max)
	}
	return nil
}

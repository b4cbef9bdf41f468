package jsonbody

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"
)

// Error codes of the JSON error body, the vocabulary of every ragmem HTTP
// handler: stable, machine-readable, documented in docs/server.md.
const (
	CodeBadRequest       = "bad_request"
	CodeInvalidJSON      = "invalid_json"
	CodeUnauthorized     = "unauthorized"
	CodeForbidden        = "forbidden"
	CodeOriginNotAllowed = "origin_not_allowed"
	CodeHostNotAllowed   = "host_not_allowed"
	CodeNotFound         = "not_found"
	CodeMethodNotAllowed = "method_not_allowed"
	CodeTooLarge         = "payload_too_large"
	CodeUnsupportedMedia = "unsupported_media_type"
	CodeNoContent        = "no_content"
	CodeTooComplex       = "page_too_complex"
	CodeTooManyChunks    = "too_many_chunks"
	CodeQuotaExceeded    = "quota_exceeded"
	CodeDiskFull         = "insufficient_storage"
	CodeConflict         = "conflict"
	CodeReserved         = "reserved" // what belongs to the memory or preference store, written only through their APIs
	CodeRateLimited      = "rate_limited"
	CodeQueueFull        = "queue_full"
	CodeMatchesAll       = "matches_all" // a removal by filter that would take every source, without all
	CodeUnavailable      = "unavailable"
	CodeInternal         = "internal"
)

// ErrorBody is the JSON body of every error response:
// {"error": {"code", "message", "requestId"}}.
type ErrorBody struct {
	Error ErrorDetail `json:"error"`
}

// ErrorDetail describes an error: a stable machine-readable code, a message
// for people, and the request id to quote in a bug report (when the handler
// has one).
type ErrorDetail struct {
	Code      string `json:"code"`
	Message   string `json:"message"`
	RequestID string `json:"requestId,omitempty"`
}

// WriteError writes the JSON error body with status.
func WriteError(w http.ResponseWriter, status int, code, message, requestID string) {
	Write(w, status, ErrorBody{Error: ErrorDetail{Code: code, Message: message, RequestID: requestID}})
}

// Write writes v as JSON with status: one line, HTML characters not
// escaped, with Content-Length and Cache-Control: no-store. A value that
// cannot be encoded gives a 500 error body instead.
func Write(w http.ResponseWriter, status int, v any) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		status = http.StatusInternalServerError
		buf.Reset()
		buf.WriteString(`{"error":{"code":"internal","message":"response could not be encoded"}}` + "\n")
	}
	h := w.Header()
	h.Set("Content-Type", "application/json; charset=utf-8")
	h.Set("Content-Length", strconv.Itoa(buf.Len()))
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
)

// Errors of the server package.
var (
	// ErrNoToken is returned by New when the token file has no token.
	ErrNoToken = errors.New("server: no API token; run ragmem serve once or ragmem token rotate")
	// ErrBadNamespace is returned for a namespace name that is not allowed.
	ErrBadNamespace = errors.New("server: invalid namespace name")
	// ErrTooManyNamespaces is returned when every open namespace is busy
	// and Options.MaxNamespaces are open.
	ErrTooManyNamespaces = errors.New("server: too many namespaces in use")
	// ErrClosed is returned once the server is shutting down.
	ErrClosed = errors.New("server: shutting down")
	// ErrRouteConflict is returned by Handle for a pattern that conflicts
	// with a registered one.
	ErrRouteConflict = errors.New("server: route conflicts with a registered route")
)

// Error codes of the JSON error body {"error": {"code", "message"}}.
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
	CodeRateLimited      = "rate_limited"
	CodeQueueFull        = "queue_full"
	CodeUnavailable      = "unavailable"
	CodeInternal         = "internal"
)

// ErrorBody is the JSON body of every error response.
// It is a plain value.
type ErrorBody struct {
	Error ErrorDetail `json:"error"`
}

// ErrorDetail describes an error: a stable machine-readable code, a message
// for people, and the request id to quote in a bug report.
// It is a plain value.
type ErrorDetail struct {
	Code      string `json:"code"`
	Message   string `json:"message"`
	RequestID string `json:"requestId,omitempty"`
}

// apiError is an error with its HTTP status and code.
type apiError struct {
	status  int
	code    string
	message string
}

func (e *apiError) Error() string { return e.message }

func errorf(status int, code, message string) *apiError {
	return &apiError{status: status, code: code, message: message}
}

// WriteError writes the JSON error body with status. Handlers mounted with
// Handle use it so that every error of the API looks the same.
func WriteError(w http.ResponseWriter, r *http.Request, status int, code, message string) {
	id := ""
	if st := stateOf(r); st != nil {
		id = st.id
		st.errCode = code
	}
	if status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Bearer realm="ragmem"`)
	}
	writeJSON(w, status, ErrorBody{Error: ErrorDetail{Code: code, Message: message, RequestID: id}})
}

func writeAPIError(w http.ResponseWriter, r *http.Request, e *apiError) {
	WriteError(w, r, e.status, e.code, e.message)
}

// WriteJSON writes v as JSON with status.
func WriteJSON(w http.ResponseWriter, status int, v any) { writeJSON(w, status, v) }

func writeJSON(w http.ResponseWriter, status int, v any) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	err := enc.Encode(v)
	b := bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
	if err != nil {
		status = http.StatusInternalServerError
		b = []byte(`{"error":{"code":"internal","message":"response could not be encoded"}}`)
	}
	h := w.Header()
	h.Set("Content-Type", "application/json; charset=utf-8")
	h.Set("Content-Length", strconv.Itoa(len(b)+1))
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}

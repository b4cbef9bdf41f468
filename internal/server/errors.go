package server

import (
	"errors"
	"net/http"

	"github.com/ragmem/ragmem/internal/jsonbody"
	"github.com/ragmem/ragmem/internal/pathless"
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

// Error codes of the JSON error body {"error": {"code", "message"}}: the
// vocabulary internal/jsonbody holds for every ragmem HTTP handler.
const (
	CodeBadRequest       = jsonbody.CodeBadRequest
	CodeInvalidJSON      = jsonbody.CodeInvalidJSON
	CodeUnauthorized     = jsonbody.CodeUnauthorized
	CodeForbidden        = jsonbody.CodeForbidden
	CodeOriginNotAllowed = jsonbody.CodeOriginNotAllowed
	CodeHostNotAllowed   = jsonbody.CodeHostNotAllowed
	CodeNotFound         = jsonbody.CodeNotFound
	CodeMethodNotAllowed = jsonbody.CodeMethodNotAllowed
	CodeTooLarge         = jsonbody.CodeTooLarge
	CodeUnsupportedMedia = jsonbody.CodeUnsupportedMedia
	CodeNoContent        = jsonbody.CodeNoContent
	CodeTooComplex       = jsonbody.CodeTooComplex
	CodeTooManyChunks    = jsonbody.CodeTooManyChunks
	CodeQuotaExceeded    = jsonbody.CodeQuotaExceeded
	CodeDiskFull         = jsonbody.CodeDiskFull
	CodeConflict         = jsonbody.CodeConflict
	CodeReserved         = jsonbody.CodeReserved
	CodeRateLimited      = jsonbody.CodeRateLimited
	CodeQueueFull        = jsonbody.CodeQueueFull
	CodeMatchesAll       = jsonbody.CodeMatchesAll
	CodeUnavailable      = jsonbody.CodeUnavailable
	CodeInternal         = jsonbody.CodeInternal
)

// ErrorBody is the JSON body of every error response (internal/jsonbody's
// envelope, shared with the agent-memory endpoints).
type ErrorBody = jsonbody.ErrorBody

// ErrorDetail describes an error: a stable machine-readable code, a message
// for people, and the request id to quote in a bug report.
type ErrorDetail = jsonbody.ErrorDetail

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
	jsonbody.WriteError(w, status, code, publicMessage(r, message), id)
}

// publicMessage is msg as the client of r may read it: the server's file
// paths are replaced (internal/pathless) unless r came from the user's own
// process on a local listener (IsLocal), which sees its own files' paths.
// The handler that wrote msg logs what it needs with the request id.
func publicMessage(r *http.Request, msg string) string {
	if r == nil || IsLocal(r) {
		return msg
	}
	return pathless.Message(msg)
}

func writeAPIError(w http.ResponseWriter, r *http.Request, e *apiError) {
	WriteError(w, r, e.status, e.code, e.message)
}

// WriteJSON writes v as JSON with status.
func WriteJSON(w http.ResponseWriter, status int, v any) { jsonbody.Write(w, status, v) }

func writeJSON(w http.ResponseWriter, status int, v any) { jsonbody.Write(w, status, v) }

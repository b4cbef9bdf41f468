package rag

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"syscall"

	"github.com/ragmem/ragmem/index"

	"github.com/ragmem/ragmem/internal/jsonbody"
)

// Errors of the contract (Memory) beyond the store's, for errors.Is.
var (
	// ErrNotFound: no such page, job, source or preference.
	ErrNotFound = errors.New("rag: not found")
	// ErrBadRequest: a request the contract refuses (a missing query, an
	// unknown mode, a malformed filter, ...).
	ErrBadRequest = errors.New("rag: bad request")
	// ErrQueueFull: the background indexer could not take the page.
	ErrQueueFull = errors.New("rag: the indexing queue is full")
	// ErrUnavailable: the memory cannot answer now (shutting down,
	// locked by another process, ...); retry later.
	ErrUnavailable = errors.New("rag: unavailable")
)

// Error is a failure of a Memory operation with the API's error code
// ("bad_request", "not_found", "reserved", ...: the code of the HTTP API's
// error body), the same from both implementations. errors.Is matches the
// sentinel of its code (CodeError): ErrNotFound for not_found, ErrReserved
// for reserved, and so on.
type Error struct {
	Code    string // the API's error code
	Message string // for people
	// Status is the HTTP status of an answer of the API (0 in process).
	Status int
	// RequestID is the server's id of the request, to quote in a bug
	// report ("" in process).
	RequestID string
	// Err is the error it wraps in process (nil from a client).
	Err error
}

func (e *Error) Error() string {
	if e.Message == "" {
		return "rag: " + e.Code
	}
	return e.Message
}

// Unwrap returns the error it wraps and the sentinel of its code.
func (e *Error) Unwrap() []error {
	var out []error
	if e.Err != nil {
		out = append(out, e.Err)
	}
	if s := codeSentinel[e.Code]; s != nil {
		out = append(out, s)
	}
	return out
}

// codeSentinel is the sentinel each API error code stands for.
var codeSentinel = map[string]error{
	jsonbody.CodeBadRequest:    ErrBadRequest,
	jsonbody.CodeInvalidJSON:   ErrBadRequest,
	jsonbody.CodeNotFound:      ErrNotFound,
	jsonbody.CodeReserved:      ErrReserved,
	jsonbody.CodeTooManyChunks: ErrTooManyChunks,
	jsonbody.CodeQuotaExceeded: ErrQuotaExceeded,
	jsonbody.CodeNoContent:     ErrEmptyDocument,
	jsonbody.CodeQueueFull:     ErrQueueFull,
	jsonbody.CodeMatchesAll:    ErrMatchesAll,
	jsonbody.CodeUnavailable:   ErrUnavailable,
}

// ErrorCode is the API's error code of err: what the HTTP API answers and
// what an *Error from either implementation carries. An error the API does
// not describe to its clients is "internal".
func ErrorCode(err error) string {
	var e *Error
	switch {
	case err == nil:
		return ""
	case errors.As(err, &e) && e.Code != "":
		return e.Code
	case errors.Is(err, ErrMatchesAll):
		return jsonbody.CodeMatchesAll
	case errors.Is(err, ErrReserved):
		return jsonbody.CodeReserved
	case errors.Is(err, ErrNoJob), errors.Is(err, ErrNotFound), errors.Is(err, ErrNoPage):
		return jsonbody.CodeNotFound
	case errors.Is(err, ErrBadRequest), errors.Is(err, ErrBadURL), errors.Is(err, index.ErrBadFilter), errors.Is(err, index.ErrBadAttrs):
		return jsonbody.CodeBadRequest
	case errors.Is(err, ErrTooManyChunks):
		return jsonbody.CodeTooManyChunks
	case errors.Is(err, ErrQuotaExceeded):
		return jsonbody.CodeQuotaExceeded
	case errors.Is(err, ErrEmptyDocument), errors.Is(err, ErrBinaryContent):
		return jsonbody.CodeNoContent
	case errors.Is(err, ErrQueueFull):
		return jsonbody.CodeQueueFull
	case errors.Is(err, syscall.ENOSPC), errors.Is(err, syscall.EDQUOT):
		return jsonbody.CodeDiskFull
	case errors.Is(err, ErrUnavailable), errors.Is(err, ErrClosed), errors.Is(err, ErrLocked), errors.Is(err, ErrQueueLocked),
		errors.Is(err, context.DeadlineExceeded):
		return jsonbody.CodeUnavailable
	}
	return jsonbody.CodeInternal
}

// badRequest is a refused request: an *Error with code bad_request.
func badRequest(format string, args ...any) error {
	return &Error{Code: jsonbody.CodeBadRequest, Message: fmt.Sprintf(format, args...), Err: ErrBadRequest}
}

// notFound is an *Error with code not_found.
func notFound(format string, args ...any) error {
	return &Error{Code: jsonbody.CodeNotFound, Message: fmt.Sprintf(format, args...), Err: ErrNotFound}
}

// ClientMessage is the message of an error whose text from its sentinel
// on was written for the client, without the sentinel's package prefix
// ("index: quota exceeded: ..." gives "quota exceeded: ...").
func ClientMessage(err, sentinel error) string {
	msg := err.Error()
	if i := strings.Index(msg, sentinel.Error()); i >= 0 {
		msg = msg[i:]
	}
	if pkg, _, ok := strings.Cut(sentinel.Error(), ": "); ok {
		msg = strings.TrimPrefix(msg, pkg+": ")
	}
	return msg
}

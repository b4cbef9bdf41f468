package embed

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"syscall"
	"time"
)

// ErrUnavailable is wrapped by the errors of a [Breaker] while its embedder
// is down: the breaker is open, or a call failed in a way that says the
// server is unreachable or misbehaving. Callers treat it as an outage:
// search answers from full text alone, background indexing waits.
var ErrUnavailable = errors.New("embed: embedder unavailable")

// UnavailableError is the error a [Breaker] returns during an outage. It
// wraps ErrUnavailable and the failure behind it. It is a plain value.
type UnavailableError struct {
	Cause   error     // the failure that made the embedder count as down
	RetryAt time.Time // when the breaker lets a call through again (zero: at once)
}

func (e *UnavailableError) Error() string {
	if e.Cause == nil {
		return ErrUnavailable.Error()
	}
	return ErrUnavailable.Error() + ": " + e.Cause.Error()
}

// Unwrap returns ErrUnavailable and the cause.
func (e *UnavailableError) Unwrap() []error { return []error{ErrUnavailable, e.Cause} }

// Defaults of BreakerOptions.
const (
	DefaultBreakerFailures = 3
	DefaultBreakerOpenFor  = 10 * time.Second
	DefaultBreakerMaxOpen  = 2 * time.Minute
	DefaultQueryTimeout    = 3 * time.Second
)

// BreakerOptions configure NewBreaker. A nil *BreakerOptions means all
// defaults. It is a plain value.
type BreakerOptions struct {
	// Failures is how many outage failures in a row open the breaker.
	// Default 3.
	Failures int
	// OpenFor is how long the breaker stays open before it lets one trial
	// call through (half-open). Each failed trial doubles it, up to
	// MaxOpenFor. Default 10 s.
	OpenFor time.Duration
	// MaxOpenFor caps OpenFor's doubling. Default 2 minutes.
	MaxOpenFor time.Duration
	// QueryTimeout bounds one EmbedQuery call (a search waits for it),
	// retries of the wrapped embedder included; running out of it is an
	// outage failure. Document embedding has no such bound. Default 3 s;
	// negative means none.
	QueryTimeout time.Duration
	// Now returns the current time (tests). Default time.Now.
	Now func() time.Time
}

// BreakerState describes a Breaker. It is a plain value.
type BreakerState struct {
	State    string    `json:"state"`              // "closed" (working), "open" (failing fast) or "half-open" (a trial call is allowed)
	Failures int       `json:"failures,omitempty"` // outage failures in a row
	Cause    string    `json:"cause,omitempty"`    // the last outage failure
	Since    time.Time `json:"since,omitzero"`     // when it opened
	RetryAt  time.Time `json:"retryAt,omitzero"`   // when it lets a trial call through
}

// Breaker is a circuit breaker around an Embedder. After Failures outage
// failures in a row (the server refuses connections, times out, answers
// 5xx or 429 through all its retries, or answers vectors of the wrong
// dimension or an invalid response) it opens: every call fails at once with
// an *UnavailableError until OpenFor has passed. Then it lets one call
// through (half-open): success closes it, failure opens it again for twice
// as long. Other errors (a request the server refuses, the caller's context
// ending) pass through and do not count.
//
// A Breaker has the Identity and Dimension of the embedder it wraps and
// implements QueryEmbedder. It is safe for concurrent use.
type Breaker struct {
	inner Embedder
	o     BreakerOptions

	mu       sync.Mutex
	failures int
	cause    error
	since    time.Time // opened at; zero when closed
	retryAt  time.Time
	openFor  time.Duration
	trial    bool // a half-open trial call is in flight
	expect   int  // vector length required; 0: the wrapped embedder's Dimension
}

// ExpectDimension makes vectors of any length but d an outage failure (a
// server now running another model), for a caller whose stored vectors
// have d dimensions. 0 restores the default: the wrapped embedder's
// Dimension, when it knows it.
func (b *Breaker) ExpectDimension(d int) {
	b.mu.Lock()
	b.expect = max(d, 0)
	b.mu.Unlock()
}

// NewBreaker wraps e. Wrapping a *Breaker returns it unchanged.
func NewBreaker(e Embedder, opts *BreakerOptions) *Breaker {
	if b, ok := e.(*Breaker); ok {
		return b
	}
	var o BreakerOptions
	if opts != nil {
		o = *opts
	}
	if o.Failures <= 0 {
		o.Failures = DefaultBreakerFailures
	}
	if o.OpenFor <= 0 {
		o.OpenFor = DefaultBreakerOpenFor
	}
	if o.MaxOpenFor <= 0 {
		o.MaxOpenFor = DefaultBreakerMaxOpen
	}
	o.MaxOpenFor = max(o.MaxOpenFor, o.OpenFor)
	if o.QueryTimeout == 0 {
		o.QueryTimeout = DefaultQueryTimeout
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return &Breaker{inner: e, o: o, openFor: o.OpenFor}
}

// Unwrap returns the wrapped embedder.
func (b *Breaker) Unwrap() Embedder { return b.inner }

// Identity implements Embedder.
func (b *Breaker) Identity() string { return b.inner.Identity() }

// Dimension implements Embedder.
func (b *Breaker) Dimension() int { return b.inner.Dimension() }

// Embed implements Embedder.
func (b *Breaker) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	if err := b.admit(); err != nil {
		return nil, err
	}
	vs, err := b.inner.Embed(ctx, texts)
	if err == nil {
		err = b.checkVectors(vs, len(texts))
	}
	return vs, b.done(ctx, err)
}

// EmbedQuery implements QueryEmbedder, with the wrapped embedder's query
// form when it has one, within QueryTimeout.
func (b *Breaker) EmbedQuery(ctx context.Context, text string) ([]float32, error) {
	if err := b.admit(); err != nil {
		return nil, err
	}
	qctx := context.WithValue(ctx, queryCall{}, true)
	if b.o.QueryTimeout > 0 {
		var cancel context.CancelFunc
		qctx, cancel = context.WithTimeout(qctx, b.o.QueryTimeout)
		defer cancel()
	}
	var v []float32
	var err error
	if qe, ok := b.inner.(QueryEmbedder); ok {
		v, err = qe.EmbedQuery(qctx, text)
		if err == nil {
			err = b.checkVectors([][]float32{v}, 1)
		}
	} else {
		var vs [][]float32
		vs, err = b.inner.Embed(qctx, []string{text})
		if err == nil {
			err = b.checkVectors(vs, 1)
		}
		if err == nil {
			v = vs[0]
		}
	}
	if err != nil && ctx.Err() == nil && qctx.Err() != nil {
		err = fmt.Errorf("embedding the query took longer than %s: %w", b.o.QueryTimeout, err)
	}
	return v, b.done(ctx, err)
}

// queryCall marks the context of a query's embedding (Breaker.EmbedQuery):
// a search waits for it, so an embedder fails it at once when its server
// cannot be reached instead of retrying.
type queryCall struct{}

// isQuery reports whether ctx is a query's embedding.
func isQuery(ctx context.Context) bool {
	q, _ := ctx.Value(queryCall{}).(bool)
	return q
}

// unreachable reports whether err says the server is not there at all: the
// connection was refused (nothing listens on its port), the host or the
// network cannot be reached, or its name does not resolve. A timeout is
// not: a server may be slow.
func unreachable(err error) bool {
	if err == nil {
		return false
	}
	var dns *net.DNSError
	return errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.EHOSTUNREACH) ||
		errors.Is(err, syscall.ENETUNREACH) || (errors.As(err, &dns) && dns.IsNotFound)
}

// checkVectors verifies the count and the length of the vectors: an answer
// of the wrong shape is a misbehaving server, never a record to store.
func (b *Breaker) checkVectors(vs [][]float32, n int) error {
	if len(vs) != n {
		return fmt.Errorf("%w: %d vectors for %d texts", ErrBadResponse, len(vs), n)
	}
	b.mu.Lock()
	want := b.expect
	b.mu.Unlock()
	if want == 0 {
		want = b.inner.Dimension()
	}
	for i, v := range vs {
		if len(v) == 0 || (want > 0 && len(v) != want) {
			return fmt.Errorf("%w: the embedder returned a vector of %d dimensions for text %d, want %d; "+
				"is the embedding server running the model this store was built with?", ErrDimensionMismatch, len(v), i, want)
		}
	}
	return nil
}

// admit lets a call through, or fails fast while the breaker is open.
func (b *Breaker) admit() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.since.IsZero() {
		return nil
	}
	now := b.o.Now()
	if now.Before(b.retryAt) || b.trial {
		return &UnavailableError{Cause: b.cause, RetryAt: b.retryAt}
	}
	b.trial = true // half-open: this call is the trial
	return nil
}

// done records a call's outcome and returns the error to give its caller.
func (b *Breaker) done(ctx context.Context, err error) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	wasTrial := b.trial
	b.trial = false
	if err == nil || !outage(ctx, err) {
		if err == nil || ctx.Err() == nil {
			// The server answered: it is up.
			b.failures, b.cause, b.since, b.retryAt, b.openFor = 0, nil, time.Time{}, time.Time{}, b.o.OpenFor
		}
		return err
	}
	b.failures++
	b.cause = err
	now := b.o.Now()
	switch {
	case wasTrial:
		b.openFor = min(2*b.openFor, b.o.MaxOpenFor)
		b.retryAt = now.Add(b.openFor)
	case b.since.IsZero() && b.failures >= b.o.Failures:
		b.since = now
		b.retryAt = now.Add(b.openFor)
	}
	return &UnavailableError{Cause: err, RetryAt: b.retryAt}
}

// outage reports whether err says the embedder is down rather than that
// the caller gave up or the server refused this input.
func outage(ctx context.Context, err error) bool {
	if ctx.Err() != nil {
		return false // the caller's own deadline or cancellation
	}
	var ne net.Error
	switch {
	case errors.Is(err, ErrUnavailable), errors.Is(err, ErrRetriesExhausted), errors.Is(err, ErrDimensionMismatch),
		errors.Is(err, ErrBadResponse), errors.Is(err, context.DeadlineExceeded),
		errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET), errors.As(err, &ne):
		return true
	}
	return false
}

// State reports the breaker's state.
func (b *Breaker) State() BreakerState {
	b.mu.Lock()
	defer b.mu.Unlock()
	st := BreakerState{State: "closed", Failures: b.failures}
	if b.cause != nil {
		st.Cause = b.cause.Error()
	}
	if !b.since.IsZero() {
		st.State, st.Since, st.RetryAt = "open", b.since, b.retryAt
		if !b.o.Now().Before(b.retryAt) {
			st.State = "half-open"
		}
	}
	return st
}

// Reason says in words what an embedding failure means ("connection
// refused to 127.0.0.1:11434", "it does not answer in time", "it returns
// vectors of another dimension ..."), without the error's own text, which
// may name the endpoint's path, its query or its credentials: for messages
// to people who cannot see the server's log. Only an unreachable server's
// address (host and port) is named.
func Reason(err error) string {
	var ne net.Error
	var se *StatusError
	switch {
	case errors.As(err, &se) && (se.StatusCode == 401 || se.StatusCode == 403):
		if se.Hint != "" {
			return fmt.Sprintf("it refuses the request (HTTP %d): %s", se.StatusCode, se.Hint)
		}
		return fmt.Sprintf("it refuses the request (HTTP %d): check the API key", se.StatusCode)
	case errors.As(err, &se) && (se.StatusCode == 429 || se.StatusCode >= 500):
		return fmt.Sprintf("it keeps answering with errors (HTTP %d)", se.StatusCode)
	case errors.As(err, &se):
		return fmt.Sprintf("it refuses the request (HTTP %d)", se.StatusCode)
	case errors.Is(err, ErrDimensionMismatch):
		return "it returns vectors of another dimension than the store's (is it serving another model?)"
	case errors.Is(err, ErrBadResponse):
		return "it returns invalid answers"
	case errors.Is(err, ErrRetriesExhausted):
		return "it keeps answering with errors"
	case unreachable(err):
		return unreachableReason(err)
	case errors.Is(err, context.DeadlineExceeded):
		return "it does not answer in time"
	case errors.As(err, &ne):
		return "it cannot be reached"
	case errors.Is(err, ErrUnavailable):
		return "it failed repeatedly; it is tried again shortly"
	}
	return "it failed"
}

// unreachableReason names why an unreachable server is (see unreachable),
// with its address only: host and port, or the name that did not resolve.
func unreachableReason(err error) string {
	var dns *net.DNSError
	if errors.As(err, &dns) && dns.IsNotFound {
		return "no such host " + dns.Name
	}
	what := "connection refused"
	switch {
	case errors.Is(err, syscall.EHOSTUNREACH):
		what = "no route to host"
	case errors.Is(err, syscall.ENETUNREACH):
		what = "network unreachable"
	}
	var op *net.OpError
	if errors.As(err, &op) && op.Addr != nil {
		return what + " to " + op.Addr.String()
	}
	return what
}

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

// UnavailableError is the error a [Breaker] (or another [Circuit]) returns
// during an outage. It wraps ErrUnavailable (or the Circuit's own sentinel,
// Kind) and the failure behind it.
type UnavailableError struct {
	Cause   error     // the failure that made the server count as down
	RetryAt time.Time // when the breaker lets a call through again (zero: at once)
	// Kind is the sentinel the error wraps: nil means ErrUnavailable (the
	// embedder); a Circuit made for another server (the reranker) names
	// its own.
	Kind error
}

func (e *UnavailableError) kind() error {
	if e.Kind == nil {
		return ErrUnavailable
	}
	return e.Kind
}

func (e *UnavailableError) Error() string {
	if e.Cause == nil {
		return e.kind().Error()
	}
	return e.kind().Error() + ": " + e.Cause.Error()
}

// Unwrap returns the sentinel (ErrUnavailable unless Kind names another)
// and the cause.
func (e *UnavailableError) Unwrap() []error { return []error{e.kind(), e.Cause} }

// Defaults of BreakerOptions.
const (
	DefaultBreakerFailures = 3
	DefaultBreakerOpenFor  = 10 * time.Second
	DefaultBreakerMaxOpen  = 2 * time.Minute
	DefaultQueryTimeout    = 3 * time.Second
)

// BreakerOptions configure NewBreaker. A nil *BreakerOptions means all
// defaults.
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

// BreakerState describes a Breaker.
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
	c     *Circuit

	mu     sync.Mutex
	expect int // vector length required; 0: the wrapped embedder's Dimension
}

// Circuit is the state machine of a circuit breaker, shared by the
// embedder's [Breaker] and the other model servers a search calls (the
// reranker of internal/rerank), so that every server is given up on and
// tried again the same way. After Failures outage failures in a row it
// opens: Admit fails at once with an *UnavailableError until OpenFor has
// passed. Then it admits one call (half-open): success closes it, failure
// opens it again for twice as long, up to MaxOpenFor. What counts as an
// outage is the Circuit's outage function; the caller's own cancellation
// never does. BreakerOptions.QueryTimeout is the caller's to apply. It is
// safe for concurrent use.
type Circuit struct {
	o      BreakerOptions
	kind   error                                     // the sentinel of its UnavailableErrors (nil: ErrUnavailable)
	outage func(ctx context.Context, err error) bool // whether err says the server is down

	mu       sync.Mutex
	failures int
	cause    error
	since    time.Time // opened at; zero when closed
	retryAt  time.Time
	openFor  time.Duration
	trial    bool // a half-open trial call is in flight
}

// NewCircuit returns a closed circuit for a server other than the
// embedder: its UnavailableErrors wrap kind, and isOutage says which
// failures count against the server (the caller's cancellation is never
// asked about). A nil isOutage counts what a Breaker counts.
func NewCircuit(opts *BreakerOptions, kind error, isOutage func(error) bool) *Circuit {
	o := breakerDefaults(opts)
	c := &Circuit{o: o, kind: kind, outage: outage, openFor: o.OpenFor}
	if isOutage != nil {
		c.outage = func(ctx context.Context, err error) bool { return ctx.Err() == nil && isOutage(err) }
	}
	return c
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
	o := breakerDefaults(opts)
	return &Breaker{inner: e, o: o, c: &Circuit{o: o, outage: outage, openFor: o.OpenFor}}
}

// breakerDefaults fills what opts leaves zero.
func breakerDefaults(opts *BreakerOptions) BreakerOptions {
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
	return o
}

// Unwrap returns the wrapped embedder.
func (b *Breaker) Unwrap() Embedder { return b.inner }

// Identity implements Embedder.
func (b *Breaker) Identity() string { return b.inner.Identity() }

// Dimension implements Embedder.
func (b *Breaker) Dimension() int { return b.inner.Dimension() }

// Embed implements Embedder.
func (b *Breaker) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	if err := b.c.Admit(); err != nil {
		return nil, err
	}
	vs, err := b.inner.Embed(ctx, texts)
	if err == nil {
		err = b.checkVectors(vs, len(texts))
	}
	return vs, b.c.Done(ctx, err)
}

// EmbedQuery implements QueryEmbedder, with the wrapped embedder's query
// form when it has one, within QueryTimeout.
func (b *Breaker) EmbedQuery(ctx context.Context, text string) ([]float32, error) {
	if err := b.c.Admit(); err != nil {
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
	return v, b.c.Done(ctx, err)
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

// Admit lets a call through, or fails fast with an *UnavailableError while
// the circuit is open. Every admitted call must be followed by Done.
func (c *Circuit) Admit() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.since.IsZero() {
		return nil
	}
	now := c.o.Now()
	if now.Before(c.retryAt) || c.trial {
		return &UnavailableError{Cause: c.cause, RetryAt: c.retryAt, Kind: c.kind}
	}
	c.trial = true // half-open: this call is the trial
	return nil
}

// Done records an admitted call's outcome and returns the error to give its
// caller: err itself, or an *UnavailableError wrapping it when it counts as
// an outage.
func (c *Circuit) Done(ctx context.Context, err error) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	wasTrial := c.trial
	c.trial = false
	if err == nil || !c.outage(ctx, err) {
		if err == nil || ctx.Err() == nil {
			// The server answered: it is up.
			c.failures, c.cause, c.since, c.retryAt, c.openFor = 0, nil, time.Time{}, time.Time{}, c.o.OpenFor
		}
		return err
	}
	c.failures++
	c.cause = err
	now := c.o.Now()
	switch {
	case wasTrial:
		c.openFor = min(2*c.openFor, c.o.MaxOpenFor)
		c.retryAt = now.Add(c.openFor)
	case c.since.IsZero() && c.failures >= c.o.Failures:
		c.since = now
		c.retryAt = now.Add(c.openFor)
	}
	return &UnavailableError{Cause: err, RetryAt: c.retryAt, Kind: c.kind}
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
func (b *Breaker) State() BreakerState { return b.c.State() }

// State reports the circuit's state.
func (c *Circuit) State() BreakerState {
	c.mu.Lock()
	defer c.mu.Unlock()
	st := BreakerState{State: "closed", Failures: c.failures}
	if c.cause != nil {
		st.Cause = c.cause.Error()
	}
	if !c.since.IsZero() {
		st.State, st.Since, st.RetryAt = "open", c.since, c.retryAt
		if !c.o.Now().Before(c.retryAt) {
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

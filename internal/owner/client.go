package owner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/ragmem/ragmem/internal/server"
	"github.com/ragmem/ragmem/rag"
)

// ClientOptions configure NewClient. A nil *ClientOptions means all
// defaults.
type ClientOptions struct {
	// Token is the bearer token. Default: the main token of the data
	// directory's token file.
	Token string
	// Timeout bounds each read or small write. Default rag.DefaultTimeout.
	Timeout time.Duration
	// WriteTimeout bounds each batch of documents. Default
	// rag.DefaultWriteTimeout.
	WriteTimeout time.Duration
	// Namespace is the namespace every request reaches (sent as
	// server.NamespaceHeader; with the main token any namespace may be
	// named). Default "": the default namespace.
	Namespace string
}

// Client talks to an owner over its Unix socket. It is a rag.Memory (the
// embedded *rag.Client: the /v1 API, with the same results as the local
// engine) plus the owner's own routes: Status, Handover, Attach. Every
// request has a timeout, and an owner that goes away fails the request at
// once with an error wrapping ErrGone (see GoneError for whether it had
// been sent). It is safe for concurrent use.
type Client struct {
	*rag.Client
	o     ClientOptions // with the defaults filled in
	info  Info
	base  string
	token string
	hc    *http.Client
}

// NewClient returns a client of the owner that info describes, for the
// data directory dir (whose token file it reads unless opts gives one).
func NewClient(dir string, info Info, opts *ClientOptions) (*Client, error) {
	var o ClientOptions
	if opts != nil {
		o = *opts
	}
	if o.Token == "" {
		tok, err := mainToken(dir)
		if err != nil {
			return nil, err
		}
		o.Token = tok
	}
	sock := info.Socket
	tr := &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return dial(ctx, sock)
		},
		MaxIdleConnsPerHost:   4,
		IdleConnTimeout:       30 * time.Second,
		ResponseHeaderTimeout: 0, // the request's context bounds it
		DisableCompression:    true,
	}
	if o.Timeout <= 0 {
		o.Timeout = rag.DefaultTimeout
	}
	if o.WriteTimeout <= 0 {
		o.WriteTimeout = rag.DefaultWriteTimeout
	}
	c := &Client{o: o, info: info, base: "http://localhost", token: o.Token, hc: &http.Client{Transport: tr}}
	rc, err := rag.Dial(c.base, o.Token, &rag.ClientOptions{HTTPClient: c.hc, Timeout: o.Timeout, WriteTimeout: o.WriteTimeout, TransportError: c.transportError, Namespace: o.Namespace})
	if err != nil {
		return nil, err
	}
	c.Client = rc
	return c, nil
}

func mainToken(dir string) (string, error) {
	toks, err := server.Tokens(dir)
	if err != nil {
		return "", fmt.Errorf("owner: read the API token: %w", err)
	}
	for _, t := range toks {
		if t.Namespace == "" {
			return t.Secret, nil
		}
	}
	return "", fmt.Errorf("owner: no API token in %s (the owner creates it when it starts)", server.TokenPath(dir))
}

// Owner returns what the owner file said about the owner.
func (c *Client) Owner() Info { return c.info }

// HTTPClient returns the HTTP client that reaches the owner (over its
// socket), for other protocols on the same server (MCP).
func (c *Client) HTTPClient() *http.Client { return c.hc }

// Namespace returns the namespace the client's requests reach ("" the
// default one).
func (c *Client) Namespace() string { return c.o.Namespace }

// Token returns the bearer token the client sends.
func (c *Client) Token() string { return c.token }

// GoneError reports that the owner went away (died, was stopped, handed
// over) before answering. It wraps ErrGone.
type GoneError struct {
	Owner Info
	// Sent is false when the request certainly did not reach the owner
	// (the connection could not be made): it is safe to retry any request.
	// When true, a write may or may not have been applied.
	Sent bool
	Err  error
}

func (e *GoneError) Error() string {
	who := "the owner"
	if e.Owner.PID > 0 {
		who = fmt.Sprintf("the owner (pid %d, %s)", e.Owner.PID, e.Owner.Kind)
	}
	if !e.Sent {
		return fmt.Sprintf("%s cannot be reached: %v", who, e.Err)
	}
	return fmt.Sprintf("%s went away before answering: %v", who, e.Err)
}

func (e *GoneError) Unwrap() []error { return []error{ErrGone, e.Err} }

// transportError classifies a failed exchange: the caller's cancellation,
// a timeout, or an owner gone (dial errors mean the request was not sent).
func (c *Client) transportError(ctx context.Context, err error, sent bool) error {
	if ctx.Err() != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return fmt.Errorf("owner: no answer from the owner (pid %d) within the request's time limit: %w", c.info.PID, ctx.Err())
		}
		return ctx.Err()
	}
	var oe *net.OpError
	if errors.As(err, &oe) && oe.Op == "dial" {
		return &GoneError{Owner: c.info, Sent: false, Err: err}
	}
	if errors.Is(err, syscall.ENOENT) || errors.Is(err, syscall.ECONNREFUSED) {
		return &GoneError{Owner: c.info, Sent: false, Err: err}
	}
	var ue *url.Error
	if !sent && errors.As(err, &ue) {
		sent = true // the connection was made: the request may have been read
	}
	return &GoneError{Owner: c.info, Sent: sent, Err: err}
}

// Status asks the owner who it is and who uses it (GET /v1/owner).
func (c *Client) Status(ctx context.Context) (Status, error) {
	var st Status
	err := c.Do(ctx, http.MethodGet, StatusPath, nil, &st, 0)
	return st, err
}

// Handover asks the owner to hand the data directory over: it stops
// answering, finishes what it is doing, closes the store and exits,
// releasing the lock. It returns once the owner has agreed; wait for the
// lock (Join) to take over. An owner that does not hand over (`ragmem
// serve`) answers with an error wrapping ErrHandoverRefused.
func (c *Client) Handover(ctx context.Context) error {
	err := c.Do(ctx, http.MethodPost, HandoverPath, struct{}{}, nil, 0)
	var ae *rag.Error
	if errors.As(err, &ae) && ae.Status == http.StatusConflict {
		return fmt.Errorf("%w: %s", ErrHandoverRefused, ae.Message)
	}
	return err
}

// ErrLeaving: the owner said it is leaving (it stops). ErrHandingOver:
// it is leaving because another process takes over.
var (
	ErrLeaving     = errors.New("owner: the owner is leaving")
	ErrHandingOver = fmt.Errorf("%w: another process takes over", ErrLeaving)
)

// Attach keeps this process attached to the owner as a client of kind
// ("mcp"), so that the owner counts it (a background owner does not exit
// while it is attached) and `ragmem status` lists it. It returns when ctx
// ends (ctx's error), when the owner says it is leaving (ErrLeaving), or
// when the owner goes away (an error wrapping ErrGone). ready, if not nil,
// is called after the first attach.
func (c *Client) Attach(ctx context.Context, kind string, ready func()) error {
	path := AttachPath + "?" + url.Values{"pid": {strconv.Itoa(os.Getpid())}, "kind": {kind}}.Encode()
	for {
		ended, err := c.attachOnce(ctx, path, ready)
		ready = nil
		if err != nil {
			return err
		}
		switch ended {
		case "leaving":
			return ErrLeaving
		case "leaving handover":
			return ErrHandingOver
		case "renew":
			continue
		default:
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return &GoneError{Owner: c.info, Sent: true, Err: errors.New("the attach stream ended")}
		}
	}
}

// attachOnce holds one attach stream and returns its last line; ready,
// if not nil, is called when the owner has said "ok".
func (c *Client) attachOnce(ctx context.Context, path string, ready func()) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base+path, nil)
	if err != nil {
		return "", err
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	resp, err := c.hc.Do(req)
	if err != nil {
		return "", c.transportError(ctx, err, false)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		var eb server.ErrorBody
		if json.Unmarshal(b, &eb) == nil && eb.Error.Code != "" {
			return "", &rag.Error{Status: resp.StatusCode, Code: eb.Error.Code, Message: eb.Error.Message}
		}
		return "", &rag.Error{Status: resp.StatusCode, Code: http.StatusText(resp.StatusCode), Message: strings.TrimSpace(string(b))}
	}
	// Each line comes within attachHeartbeat; a silent owner is a hung one.
	lines := make(chan string)
	done := make(chan struct{})
	var wg sync.WaitGroup
	defer func() {
		close(done)
		resp.Body.Close()
		wg.Wait()
	}()
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer close(lines)
		buf := make([]byte, 64)
		var line []byte
		for {
			n, err := resp.Body.Read(buf)
			for _, b := range buf[:n] {
				if b == '\n' {
					select {
					case lines <- string(line):
					case <-done:
						return
					}
					line = line[:0]
				} else if len(line) < 64 {
					line = append(line, b)
				}
			}
			if err != nil {
				return
			}
		}
	}()
	last := ""
	for {
		t := time.NewTimer(3 * attachHeartbeat)
		select {
		case l, ok := <-lines:
			t.Stop()
			if !ok {
				return last, nil
			}
			last = l
			if l == "ok" && ready != nil {
				ready()
				ready = nil
			}
			if strings.HasPrefix(l, "leaving") || l == "renew" {
				return l, nil
			}
		case <-t.C:
			return "", &GoneError{Owner: c.info, Sent: true, Err: errors.New("the owner stopped answering")}
		case <-ctx.Done():
			t.Stop()
			return "", ctx.Err()
		}
	}
}

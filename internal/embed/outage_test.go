package embed_test

import (
	"context"
	"errors"
	"net"
	"net/url"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ragmem/ragmem/internal/embed"
	"github.com/ragmem/ragmem/internal/embed/embedtest"
)

// TestQueryKnowsARefusedConnectionAtOnce: a query to an OpenAI-compatible
// server whose port is closed fails at once, retries configured or not (a
// search waits for it), and the reason names the cause and the address;
// the kept-alive connection to the server that was there is no obstacle.
// Indexing still retries: a server restarting comes back.
func TestQueryKnowsARefusedConnectionAtOnce(t *testing.T) {
	srv := embedtest.New(t, 16)
	b := embed.NewBreaker(srv.Embedder(t, 0), nil) // default retries (5) and query time limit (3 s)
	ctx := context.Background()
	if _, err := b.EmbedQuery(ctx, "herons"); err != nil { // a connection now kept alive
		t.Fatal(err)
	}
	u, _ := url.Parse(srv.BaseURL())
	srv.Set(embedtest.Refused)
	for i := range 2 {
		start := time.Now()
		_, err := b.EmbedQuery(ctx, "storks wade")
		took := time.Since(start)
		if !errors.Is(err, embed.ErrUnavailable) || took > 100*time.Millisecond {
			t.Fatalf("query %d: %v after %s", i, err, took)
		}
		if r := embed.Reason(err); r != "connection refused to "+u.Host {
			t.Errorf("query %d: reason %q", i, r)
		}
	}
	start := time.Now()
	_, err := srv.Embedder(t, 2).Embed(ctx, []string{"cranes"})
	if !errors.Is(err, embed.ErrRetriesExhausted) || time.Since(start) < 500*time.Millisecond {
		t.Errorf("indexing gave up after %s without its retries: %v", time.Since(start), err)
	}
}

// TestQueryTimeLimitSpentOnce: a server that accepts the connection and
// never answers costs a query its time limit once: the query cache does
// not try the embedder again after it ran out of its own time.
func TestQueryTimeLimitSpentOnce(t *testing.T) {
	srv := embedtest.New(t, 16)
	srv.Set(embedtest.Hang)
	b := embed.NewBreaker(srv.Embedder(t, 0), &embed.BreakerOptions{QueryTimeout: 300 * time.Millisecond})
	c := embed.NewQueryCache(nil)
	start := time.Now()
	_, err := c.Embed(context.Background(), b, "herons")
	took := time.Since(start)
	if !errors.Is(err, embed.ErrUnavailable) || took > 2*time.Second || srv.Calls() != 1 {
		t.Fatalf("%v after %s, %d requests", err, took, srv.Calls())
	}
	if r := embed.Reason(err); r != "it does not answer in time" {
		t.Errorf("reason %q", r)
	}
}

// TestReasonNamesTheAddressOnly: an unreachable server is named by its
// host and port, never by the URL's path, query or credentials.
func TestReasonNamesTheAddressOnly(t *testing.T) {
	for _, c := range []struct {
		err  error
		want string
	}{
		{&net.OpError{Op: "dial", Net: "tcp", Addr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 11434}, Err: &net.OpError{Err: syscall.ECONNREFUSED}}, "connection refused to 127.0.0.1:11434"},
		{&url.Error{Op: "Post", URL: "http://user:secret@embed.example/v1/embeddings?key=k", Err: &net.DNSError{Err: "no such host", Name: "embed.example", IsNotFound: true}}, "no such host embed.example"},
		{context.DeadlineExceeded, "it does not answer in time"},
	} {
		got := embed.Reason(&embed.UnavailableError{Cause: c.err})
		if got != c.want || strings.Contains(got, "secret") {
			t.Errorf("Reason(%v) = %q, want %q", c.err, got, c.want)
		}
	}
}

package weaviate

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/ragmem/ragmem/index"
	"github.com/ragmem/ragmem/index/driver"
	"github.com/ragmem/ragmem/index/indextest"
	"github.com/ragmem/ragmem/internal/wvtest"
)

func TestParseURL(t *testing.T) {
	for _, c := range []struct {
		url, opt, base, grpc string
	}{
		{"http://127.0.0.1:8080", "", "http://127.0.0.1:8080", "127.0.0.1:50051"},
		{"http://127.0.0.1:8080/", "", "http://127.0.0.1:8080", "127.0.0.1:50051"},
		{"http://h:8080?grpc=g:7", "", "http://h:8080", "g:7"},
		{"http://h:8080?grpc=:7", "", "http://h:8080", "h:7"},
		{"http://h:8080?grpc=g:7", "o:9", "http://h:8080", "o:9"},
		{"http://[::1]:8080", "", "http://[::1]:8080", "[::1]:50051"},
		{"https://abc.c0.europe-west3.gcp.weaviate.cloud", "", "https://abc.c0.europe-west3.gcp.weaviate.cloud", "grpc-abc.c0.europe-west3.gcp.weaviate.cloud:443"},
		{"https://old.weaviate.network", "", "https://old.weaviate.network", "grpc-old.weaviate.network:443"},
		{"https://db.example.com", "", "https://db.example.com", "db.example.com:50051"},
	} {
		u, g, err := parseURL(c.url, c.opt)
		if err != nil {
			t.Errorf("parseURL(%q, %q): %v", c.url, c.opt, err)
			continue
		}
		if base := u.Scheme + "://" + u.Host; base != c.base || g != c.grpc {
			t.Errorf("parseURL(%q, %q) = %s, %s; want %s, %s", c.url, c.opt, base, g, c.base, c.grpc)
		}
	}
	for _, bad := range []string{"", "127.0.0.1:8080", "ftp://x", "http://h:1/path", "http://h?x=1", "http://h?grpc=a:1&grpc=b:2",
		"http://h?grpc=nohost", "http://h?grpc=h:0", "http://h?grpc=h:99999", "http://u:p@h:1", "http://h#frag"} {
		if _, _, err := parseURL(bad, ""); !errors.Is(err, ErrConfig) {
			t.Errorf("parseURL(%q): %v, want ErrConfig", bad, err)
		}
	}
}

func FuzzParseURL(f *testing.F) {
	for _, s := range []string{"http://127.0.0.1:8080", "https://x.weaviate.cloud?grpc=:1", "http://h?grpc=%zz", "http://[::1", "http://h?grpc=[::1]:5"} {
		f.Add(s, "")
	}
	f.Add("http://h:1", "g:2")
	f.Fuzz(func(t *testing.T, raw, opt string) {
		u, g, err := parseURL(raw, opt)
		if err != nil {
			if !errors.Is(err, ErrConfig) {
				t.Fatalf("parseURL(%q, %q): %v is not ErrConfig", raw, opt, err)
			}
			return
		}
		if u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
			t.Fatalf("parseURL(%q) accepted %v", raw, u)
		}
		h, p, err := net.SplitHostPort(g)
		if err != nil || h == "" || p == "" {
			t.Fatalf("parseURL(%q, %q): gRPC address %q", raw, opt, g)
		}
	})
}

func TestParseVersion(t *testing.T) {
	for s, want := range map[string][2]int{"1.35.2": {1, 35}, "v1.29.0-rc.1": {1, 29}, "2.0": {2, 0}, " 1.28.4 ": {1, 28}} {
		if v, ok := parseVersion(s); !ok || v != want {
			t.Errorf("parseVersion(%q) = %v %v, want %v", s, v, ok, want)
		}
	}
	for _, s := range []string{"", "1", "x.y", "1.x.3", "-1.2"} {
		if v, ok := parseVersion(s); ok {
			t.Errorf("parseVersion(%q) = %v, want no version", s, v)
		}
	}
}

func FuzzParseVersion(f *testing.F) {
	for _, s := range []string{"1.35.2", "v1.29.0-rc.1", "", "1.", "99999999999999999999.1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if v, ok := parseVersion(s); ok && (v[0] < 0 || v[1] < 0) {
			t.Fatalf("parseVersion(%q) = %v", s, v)
		}
	})
}

// TestOldServerRefused: a server that reports a version without the gRPC
// calls the backend needs is refused at Open with a clear error. The
// server is an httptest server answering the two REST endpoints Open reads
// before it connects to gRPC, as Weaviate 1.28 does.
func TestOldServerRefused(t *testing.T) {
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/v1/.well-known/ready":
		case "/v1/meta":
			fmt.Fprint(w, `{"hostname":"http://[::]:8080","version":"1.28.3","modules":{}}`)
		default:
			http.NotFound(w, r)
		}
	}))
	defer ts.Close()
	_, err := Open(context.Background(), ts.URL, nil)
	if !errors.Is(err, ErrServer) || !strings.Contains(err.Error(), "Weaviate 1.28.3") || !strings.Contains(err.Error(), "1.29 or later") {
		t.Fatalf("Open on Weaviate 1.28.3: %v", err)
	}
}

// TestRPCErrors: every gRPC failure becomes one of the package's errors,
// and gRPC's own wording never reaches the message.
func TestRPCErrors(t *testing.T) {
	b := &Backend{grpcAddr: "127.0.0.1:50051", timeout: time.Second}
	ctx := context.Background()
	for _, c := range []struct {
		err  error
		want error
		says string
	}{
		{status.Error(codes.Unavailable, `connection error: desc = "transport: Error while dialing: dial tcp 127.0.0.1:50051: connect: connection refused"`),
			ErrUnavailable, "cannot reach Weaviate's gRPC API at 127.0.0.1:50051 (Error while dialing: dial tcp 127.0.0.1:50051: connect: connection refused)"},
		{status.Error(codes.DeadlineExceeded, "context deadline exceeded"), ErrUnavailable, "no answer from 127.0.0.1:50051 within 1s"},
		{status.Error(codes.ResourceExhausted, "too many requests"), ErrUnavailable, "too many requests"},
		{status.Error(codes.Unauthenticated, "invalid api key"), ErrServer, "the server refused the credentials (API key): invalid api key"},
		{status.Error(codes.PermissionDenied, "forbidden"), ErrServer, "permission denied: forbidden"},
		{status.Error(codes.Unimplemented, "unknown method Aggregate"), ErrServer, "Weaviate 1.29 or later is needed"},
		{status.Error(codes.Unknown, "could not find class Ragmem_x in schema"), ErrServer, "search: could not find class Ragmem_x in schema"},
		{status.Error(codes.Unknown, "extract auth: unauthorized: invalid api key"), ErrServer, "the server refused the credentials (API key): extract auth"},
		{status.Error(codes.Unknown, "cannot achieve consistency level QUORUM: read error"), ErrUnavailable, "cannot achieve consistency level"},
		{errors.New("plain"), ErrServer, "search: plain"},
	} {
		got := b.rpcErr(ctx, "search", c.err)
		if !errors.Is(got, c.want) || !strings.Contains(got.Error(), c.says) {
			t.Errorf("rpcErr(%v) = %v; want %v saying %q", c.err, got, c.want, c.says)
		}
		if s := got.Error(); strings.Contains(s, "rpc error") || strings.Contains(s, "code =") || strings.Contains(s, "desc =") {
			t.Errorf("rpcErr(%v) leaks gRPC's wording: %v", c.err, got)
		}
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if got := b.rpcErr(cctx, "search", status.Error(codes.Canceled, "context canceled")); !errors.Is(got, context.Canceled) {
		t.Errorf("cancelled: %v", got)
	}
}

// splitBackendURL returns the REST base and the gRPC address of a backend
// URL as wvtest gives it.
func splitBackendURL(t *testing.T, raw string) (string, string) {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	return u.Scheme + "://" + u.Host, u.Query().Get("grpc")
}

// TestGRPCUnreachable: a server whose REST API answers but whose gRPC port
// is not where the URL says fails at Open, at once, saying how to name the
// port.
func TestGRPCUnreachable(t *testing.T) {
	rest, _ := splitBackendURL(t, wvtest.URL(t))
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := l.Addr().String()
	l.Close()
	start := time.Now()
	_, err = Open(context.Background(), rest+"?grpc="+closed, &Options{Namespace: uniqueNS(t, "nogrpc")})
	if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "gRPC API at "+closed) || !strings.Contains(err.Error(), "?grpc=host:port") {
		t.Fatalf("Open with a closed gRPC port: %v", err)
	}
	if strings.Contains(err.Error(), "rpc error") {
		t.Fatalf("gRPC's wording leaks: %v", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("took %v", d)
	}
}

// TestTLS opens the backend through an https URL: REST and gRPC both go
// over TLS, with the certificate trusted through Options.HTTPClient; a
// client that does not trust it is refused.
func TestTLS(t *testing.T) {
	rest, grpcAddr := splitBackendURL(t, wvtest.URL(t))
	turl, client := wvtest.TLSFront(t, rest, grpcAddr)
	ctx := context.Background()
	if _, err := Open(ctx, turl, &Options{Namespace: uniqueNS(t, "tls")}); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("Open without trusting the certificate: %v", err)
	}
	b, err := Open(ctx, turl, &Options{Namespace: uniqueNS(t, "tls"), HTTPClient: client})
	if err != nil {
		t.Fatalf("Open over TLS: %v", err)
	}
	defer b.Drop(ctx)
	smoke(t, b)
	// The gRPC side needs TLS too: the same URL in plain http reaches the
	// TLS listener without it and fails.
	_, err = Open(ctx, rest+"?grpc="+url.QueryEscape(mustQuery(t, turl)), &Options{Namespace: uniqueNS(t, "tls")})
	if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "gRPC API") {
		t.Fatalf("plain gRPC to a TLS listener: %v", err)
	}
}

func mustQuery(t *testing.T, raw string) string {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	return u.Query().Get("grpc")
}

// smoke writes a few records and reads them back through every kind of
// query.
func smoke(t *testing.T, b *Backend) {
	t.Helper()
	ctx := context.Background()
	var put []index.Record
	for i := 0; i < 6; i++ {
		put = append(put, indextest.Rec(fmt.Sprintf("https://smoke.example/%d", i/2), i%2, fmt.Sprintf("smoke test otter %d", i), uint64(i+1)))
	}
	if err := b.Apply(ctx, &driver.Batch{Put: put}); err != nil {
		t.Fatalf("Apply: %v", err)
	}
	if err := b.SetMeta(ctx, "embedder", "x"); err != nil {
		t.Fatalf("SetMeta: %v", err)
	}
	if v, ok, err := b.Meta(ctx, "embedder"); err != nil || !ok || v != "x" {
		t.Fatalf("Meta = %q %v %v", v, ok, err)
	}
	if hs, err := b.SearchText(ctx, "otter", 10, index.Filter{}); err != nil || len(hs) != 6 {
		t.Fatalf("SearchText: %d, %v", len(hs), err)
	}
	if hs, err := b.SearchVector(ctx, put[3].Vector, 1, index.Filter{}); err != nil || len(hs) != 1 || hs[0].Record.ID != put[3].ID {
		t.Fatalf("SearchVector: %v, %v", hs, err)
	}
	if hs, err := b.SearchHybrid(ctx, driver.HybridQuery{Text: "otter 3", Vector: put[3].Vector, K: 3, Alpha: 0.5}); err != nil || len(hs) == 0 {
		t.Fatalf("SearchHybrid: %v, %v", hs, err)
	}
	if st, err := b.Stats(ctx); err != nil || st.Records != 6 || st.Sources != 3 {
		t.Fatalf("Stats = %+v, %v", st, err)
	}
	if rs, err := b.Source(ctx, "https://smoke.example/1"); err != nil || len(rs) != 2 || rs[1].Position != 1 {
		t.Fatalf("Source: %v, %v", rs, err)
	}
}

// TestAPIKey runs a server that admits one API key and no anonymous
// requests: the key opens the backend and serves gRPC queries and writes
// (the key travels with them); no key, or a gRPC connection without it, is
// refused with a clear error.
func TestAPIKey(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a server of its own")
	}
	nd := wvtest.StartWith(t, 1, wvtest.Options{APIKey: "s3cret-key"})[0]
	ctx := context.Background()
	if _, err := Open(ctx, nd.Backend, &Options{Namespace: "keyed"}); !errors.Is(err, ErrServer) || !strings.Contains(err.Error(), "refused the credentials") {
		t.Fatalf("Open without a key: %v", err)
	}
	if _, err := Open(ctx, nd.Backend, &Options{Namespace: "keyed", APIKey: "wrong"}); !errors.Is(err, ErrServer) {
		t.Fatalf("Open with a wrong key: %v", err)
	}
	b, err := Open(ctx, nd.Backend, &Options{Namespace: "keyed", APIKey: "s3cret-key"})
	if err != nil {
		t.Fatalf("Open with the key: %v", err)
	}
	defer b.Close()
	smoke(t, b)
	// The same backend on a gRPC connection without the key.
	b.apiKey = ""
	_ = b.conn.Close()
	if err := b.dial(ctx, false); err != nil {
		t.Fatal(err)
	}
	_, err = b.SearchText(ctx, "otter", 3, index.Filter{})
	if !errors.Is(err, ErrServer) || !strings.Contains(err.Error(), "refused the credentials") || strings.Contains(err.Error(), "rpc error") {
		t.Fatalf("gRPC search without the key: %v", err)
	}
}

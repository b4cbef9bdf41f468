// Package weaviate is a ragmem storage backend (index/driver.Backend) on a
// Weaviate server or cluster, version 1.29 or later.
//
// Every query (BM25, vector, hybrid, fetches by id or source, listings,
// counts) and every object write or delete goes through Weaviate's gRPC API
// (service weaviate.v1.Weaviate: Search, Aggregate, BatchObjects,
// BatchDelete); collection schemas, settings and write intents read by id
// (at the consistency level), and the readiness and version checks use the
// REST API. Neither is deprecated. The GraphQL API,
// which Weaviate deprecated and turns off by default in later releases, is
// never used: the tests run the server with DISABLE_GRAPHQL and behind a
// proxy that refuses /v1/graphql (internal/wvtest).
//
// Each namespace is one Weaviate collection (class "Ragmem_<namespace>")
// whose objects are ragmem's chunk records: the metadata are properties, the
// vector is the object's own vector (vectorizer "none": ragmem's embedder
// supplies it) under cosine distance. BM25 runs over a "terms" property that
// holds the record's title, heading path and text analysed exactly as the
// local backend analyses them (bleve's English analyzer: lower case, stop
// words, Porter stems), so that the two backends agree on what a query
// matches; Weaviate computes the BM25 scores. Store-level settings (the
// embedder identity) and the write intents described below live in a
// shared "RagmemMeta" collection.
//
// # What Apply guarantees
//
// Weaviate has no multi-object transactions: each object write is atomic,
// a batch is not. Apply therefore runs a small intent protocol so that a
// batch ends wholly applied or wholly undone, even across a crash:
//
//  1. It records an intent object (pending) naming the objects the batch
//     will create and the ones it will delete.
//  2. It writes the new records. Replacing a source writes its new chunks
//     under new ids (ids derive from the content hash) next to the old ones.
//  3. It marks the intent committed: this single-object write is the commit
//     point.
//  4. It deletes the old records, then the intent.
//
// If step 2 fails, Apply deletes what it created and returns the error; the
// old version is untouched. If the process dies before step 3, the next
// Open or Apply of the namespace in any process rolls the batch back (once
// the intent is older than Options.IntentTimeout, so that a slow live writer
// is not undone); after step 3 it rolls it forward. What is not guaranteed:
//
//   - Readers do not consult intents. While one Apply runs, between its steps
//     2 and 4 (the time of one batch-delete request), a search can see both
//     the old and the new chunks of a replaced source, and during step 2
//     some of the new ones. After a crash that window lasts until recovery.
//   - Overwriting a record under an existing id replaces that object in
//     place: that record is atomic by itself, but is not undone when the rest
//     of the batch rolls back.
//   - Writers in different processes are not serialised against each other;
//     writers in one process are.
//
// Durability is Weaviate's: a write is acknowledged once the replicas the
// consistency level asks for (Options.ConsistencyLevel, default QUORUM) have
// written it to their write-ahead logs.
//
// A *Backend is safe for concurrent use.
package weaviate

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	pb "github.com/weaviate/weaviate/grpc/generated/protocol/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health/grpc_health_v1"

	"github.com/ragmem/ragmem/index/driver"
)

// Errors of this package; each is wrapped once with %w.
var (
	// ErrUnavailable: the server could not be reached or did not answer.
	ErrUnavailable = errors.New("weaviate: server unavailable")
	// ErrSchema: the namespace's collection exists with a different schema.
	ErrSchema = errors.New("weaviate: schema differs")
	// ErrServer: the server refused a request.
	ErrServer = errors.New("weaviate: server error")
	// ErrConfig: the options are invalid.
	ErrConfig = errors.New("weaviate: invalid configuration")
)

// Consistency levels of reads and writes on a replicated collection.
const (
	One    = "ONE"
	Quorum = "QUORUM"
	All    = "ALL"
)

// defaultGRPCPort is the port of Weaviate's gRPC API unless the server's
// GRPC_PORT says otherwise.
const defaultGRPCPort = 50051

// minVersion is the oldest server whose gRPC API has what the backend uses:
// the Aggregate call (Weaviate 1.28.4 and 1.29) and query vectors in the
// "vectors" fields of NearVector and Hybrid (1.29).
var minVersion = [2]int{1, 29}

// Options configure Open. A nil *Options means all defaults.
type Options struct {
	// Namespace names the collection: "Ragmem_<Namespace>". Letters, digits
	// and underscores, at most 64. Default "default".
	Namespace string
	// APIKey authenticates with an API key (Authorization: Bearer, on REST
	// and gRPC requests). Default none: anonymous access.
	APIKey string
	// GRPCAddress is the host:port of the server's gRPC API, which serves
	// every query and write. Default: the URL's "grpc" parameter
	// (http://host:8080?grpc=host:50052), else the URL's host on port
	// 50051, except for Weaviate Cloud hosts (*.weaviate.cloud,
	// *.weaviate.network), whose gRPC API is grpc-<host>:443. gRPC uses TLS
	// exactly when the URL is https, with the TLS settings of HTTPClient's
	// transport when it has any.
	GRPCAddress string
	// ConsistencyLevel of reads and writes: One, Quorum or All. Default Quorum.
	ConsistencyLevel string
	// Replicas is the replication factor of a collection Open creates; an
	// existing collection keeps its own. Default 1.
	Replicas int
	// Shards is the shard count of a collection Open creates. Default 1.
	Shards int
	// Timeout bounds each request. Default 60s.
	Timeout time.Duration
	// IntentTimeout is how old another writer's unfinished batch must be
	// before recovery rolls it back. Default 10 minutes.
	IntentTimeout time.Duration
	// BatchSize is the number of objects per write request. Default 200.
	BatchSize int
	// HTTPClient sends the REST requests. Default a client of its own.
	HTTPClient *http.Client
	// Logger receives recovery reports. Default slog.Default().
	Logger *slog.Logger
	// Now returns the current time (tests). Default time.Now.
	Now func() time.Time
}

// Backend is a Weaviate storage backend. It is safe for concurrent use.
type Backend struct {
	http     *http.Client
	ownHTTP  bool
	baseURL  string
	apiKey   string
	conn     *grpc.ClientConn
	rpc      pb.WeaviateClient
	grpcAddr string
	timeout  time.Duration
	class    string
	ns       string
	cl       pb.ConsistencyLevel
	clName   string
	batch    int
	intentTO time.Duration
	log      *slog.Logger
	now      func() time.Time

	// replicated and metaReplicated: whether the collections have more than
	// one replica; Weaviate accepts a consistency level only then.
	replicated, metaReplicated bool

	applyMu   sync.Mutex // serialises Apply and recovery
	dim       atomic.Int64
	lastSync  atomic.Int64 // unix nanos of the last acknowledged mutation
	closed    atomic.Bool
	closeOnce sync.Once
}

var _ driver.Backend = (*Backend)(nil)
var _ driver.HybridSearcher = (*Backend)(nil)

var nsRE = regexp.MustCompile(`^[A-Za-z0-9_]{1,64}$`)

// ClassName returns the collection that holds namespace ns.
func ClassName(ns string) string { return "Ragmem_" + ns }

// MetaClass is the collection holding every namespace's settings and intents.
const MetaClass = "RagmemMeta"

// Open connects to the Weaviate server whose REST API is at rawURL (for
// example "http://127.0.0.1:8080"; a "grpc" parameter names the gRPC API's
// host:port when it is not the default, see Options.GRPCAddress), checks
// that both APIs answer and that the server is recent enough, and creates
// the namespace's collection or checks that the existing one has ragmem's
// schema. Unfinished batches left by a crashed writer are recovered.
func Open(ctx context.Context, rawURL string, opts *Options) (*Backend, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Namespace == "" {
		o.Namespace = "default"
	}
	if !nsRE.MatchString(o.Namespace) {
		return nil, fmt.Errorf("%w: namespace %q must be 1–64 letters, digits or underscores", ErrConfig, o.Namespace)
	}
	var cl pb.ConsistencyLevel
	switch o.ConsistencyLevel = strings.ToUpper(o.ConsistencyLevel); o.ConsistencyLevel {
	case "", Quorum:
		o.ConsistencyLevel, cl = Quorum, pb.ConsistencyLevel_CONSISTENCY_LEVEL_QUORUM
	case One:
		cl = pb.ConsistencyLevel_CONSISTENCY_LEVEL_ONE
	case All:
		cl = pb.ConsistencyLevel_CONSISTENCY_LEVEL_ALL
	default:
		return nil, fmt.Errorf("%w: consistency level %q (want ONE, QUORUM or ALL)", ErrConfig, o.ConsistencyLevel)
	}
	if o.Replicas <= 0 {
		o.Replicas = 1
	}
	if o.Shards <= 0 {
		o.Shards = 1
	}
	if o.Timeout <= 0 {
		o.Timeout = 60 * time.Second
	}
	if o.IntentTimeout <= 0 {
		o.IntentTimeout = 10 * time.Minute
	}
	if o.BatchSize <= 0 {
		o.BatchSize = 200
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	u, grpcAddr, err := parseURL(rawURL, o.GRPCAddress)
	if err != nil {
		return nil, err
	}
	b := &Backend{
		http:     o.HTTPClient,
		baseURL:  u.Scheme + "://" + u.Host,
		apiKey:   o.APIKey,
		grpcAddr: grpcAddr,
		timeout:  o.Timeout,
		class:    ClassName(o.Namespace),
		ns:       o.Namespace,
		cl:       cl,
		clName:   o.ConsistencyLevel,
		batch:    o.BatchSize,
		intentTO: o.IntentTimeout,
		log:      o.Logger,
		now:      o.Now,
	}
	if b.http == nil {
		b.http = &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone(), Timeout: o.Timeout}
		b.ownHTTP = true
	}
	// Check the server first, with our own request, so that an unreachable
	// server is one clear error.
	if err := b.ping(ctx); err != nil {
		b.release()
		return nil, err
	}
	if err := b.checkVersion(ctx); err != nil {
		b.release()
		return nil, err
	}
	if err := b.dial(ctx, u.Scheme == "https"); err != nil {
		b.release()
		return nil, err
	}
	if err := b.ensureSchema(ctx, o.Replicas, o.Shards); err != nil {
		b.release()
		return nil, err
	}
	b.applyMu.Lock()
	err = b.recoverIntents(ctx, true)
	b.applyMu.Unlock()
	if err != nil {
		b.release()
		return nil, err
	}
	return b, nil
}

// parseURL checks the REST URL and works out the gRPC address (see
// Options.GRPCAddress).
func parseURL(rawURL, grpcAddr string) (*url.URL, string, error) {
	u, err := url.Parse(strings.TrimSpace(rawURL))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil {
		return nil, "", fmt.Errorf("%w: Weaviate URL %q must look like http://host:port", ErrConfig, rawURL)
	}
	if u.Path != "" && u.Path != "/" || u.Fragment != "" {
		return nil, "", fmt.Errorf("%w: Weaviate URL %q must not have a path", ErrConfig, rawURL)
	}
	q, err := url.ParseQuery(u.RawQuery)
	if err != nil {
		return nil, "", fmt.Errorf("%w: Weaviate URL %q: %w", ErrConfig, rawURL, err)
	}
	for k, v := range q {
		if k != "grpc" || len(v) != 1 {
			return nil, "", fmt.Errorf("%w: Weaviate URL %q: the only parameter it takes is grpc=host:port, once", ErrConfig, rawURL)
		}
	}
	if grpcAddr == "" {
		grpcAddr = q.Get("grpc")
	}
	host := u.Hostname()
	if grpcAddr == "" {
		grpcAddr = net.JoinHostPort(host, strconv.Itoa(defaultGRPCPort))
		if h := strings.ToLower(host); strings.HasSuffix(h, ".weaviate.cloud") || strings.HasSuffix(h, ".weaviate.network") {
			grpcAddr = net.JoinHostPort("grpc-"+host, "443")
		}
	}
	gh, gp, err := net.SplitHostPort(grpcAddr)
	if err != nil {
		return nil, "", fmt.Errorf("%w: gRPC address %q must be host:port", ErrConfig, grpcAddr)
	}
	if p, err := strconv.Atoi(gp); err != nil || p <= 0 || p > 65535 {
		return nil, "", fmt.Errorf("%w: gRPC address %q has no valid port", ErrConfig, grpcAddr)
	}
	if gh == "" {
		gh = host // grpc=:50052 means the REST host
	}
	return u, net.JoinHostPort(gh, gp), nil
}

// dial sets up the gRPC connection and checks that the API answers.
func (b *Backend) dial(ctx context.Context, secure bool) error {
	creds := insecure.NewCredentials()
	if secure {
		cfg := &tls.Config{MinVersion: tls.VersionTLS12}
		if t, ok := b.http.Transport.(*http.Transport); ok && t.TLSClientConfig != nil {
			cfg = t.TLSClientConfig.Clone()
			cfg.NextProtos = nil // gRPC sets its own (h2)
		}
		if cfg.ServerName == "" {
			cfg.ServerName, _, _ = net.SplitHostPort(b.grpcAddr)
		}
		creds = credentials.NewTLS(cfg)
	}
	dopts := []grpc.DialOption{
		grpc.WithTransportCredentials(creds),
		grpc.WithUserAgent("ragmem"),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(maxMessage), grpc.MaxCallSendMsgSize(maxMessage)),
	}
	if b.apiKey != "" {
		dopts = append(dopts, grpc.WithPerRPCCredentials(bearer{key: b.apiKey, secure: secure}))
	}
	conn, err := grpc.NewClient(b.grpcAddr, dopts...)
	if err != nil {
		return fmt.Errorf("%w: gRPC address %s: %w", ErrConfig, b.grpcAddr, err)
	}
	b.conn, b.rpc = conn, pb.NewWeaviateClient(conn)
	cctx, cancel := context.WithTimeout(ctx, b.timeout)
	defer cancel()
	if _, err := grpc_health_v1.NewHealthClient(conn).Check(cctx, &grpc_health_v1.HealthCheckRequest{}); err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("weaviate: connect to the gRPC API: %w", ctx.Err())
		}
		return fmt.Errorf("%w: cannot reach Weaviate's gRPC API at %s (%s; its port is the server's GRPC_PORT, %d by default: "+
			"name another with ?grpc=host:port after the URL)", ErrUnavailable, b.grpcAddr, grpcReason(err), defaultGRPCPort)
	}
	return nil
}

// maxMessage bounds one gRPC message either way: Weaviate's own default
// limit (GRPC_MAX_MESSAGE_SIZE) is 100 MiB. Listings fetch at most page
// records per message.
const maxMessage = 104858000

// bearer adds the API key to every gRPC request, as the REST requests
// carry it.
type bearer struct {
	key    string
	secure bool
}

func (c bearer) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	return map[string]string{"authorization": "Bearer " + c.key}, nil
}

// RequireTransportSecurity is false on plain connections as for REST over
// http: the key then travels in the clear, as the URL's scheme chose.
func (c bearer) RequireTransportSecurity() bool { return c.secure }

// ping checks /v1/.well-known/ready.
func (b *Backend) ping(ctx context.Context) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, b.baseURL+"/v1/.well-known/ready", nil)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrConfig, err)
	}
	resp, err := b.http.Do(req)
	if err != nil {
		return fmt.Errorf("%w: cannot reach %s (is the server running? start one with scripts/weaviate.sh start): %w", ErrUnavailable, b.baseURL, err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%w: %s is not ready (HTTP %d)", ErrUnavailable, b.baseURL, resp.StatusCode)
	}
	return nil
}

// checkVersion refuses a server older than minVersion. A version that does
// not parse (a development build) is let through.
func (b *Backend) checkVersion(ctx context.Context) error {
	var meta struct {
		Version string `json:"version"`
	}
	if _, err := b.restJSON(ctx, "read server version", http.MethodGet, "/v1/meta", nil, &meta); err != nil {
		return err
	}
	if v, ok := parseVersion(meta.Version); ok && (v[0] < minVersion[0] || v[0] == minVersion[0] && v[1] < minVersion[1]) {
		return fmt.Errorf("%w: %s runs Weaviate %s; ragmem needs %d.%d or later (its gRPC search and aggregate API)",
			ErrServer, b.baseURL, meta.Version, minVersion[0], minVersion[1])
	}
	return nil
}

// parseVersion reads the major and minor numbers of "1.35.2" or "v1.36.0-rc.1".
func parseVersion(s string) ([2]int, bool) {
	parts := strings.SplitN(strings.TrimPrefix(strings.TrimSpace(s), "v"), ".", 3)
	if len(parts) < 2 {
		return [2]int{}, false
	}
	var v [2]int
	for i := range v {
		n, err := strconv.Atoi(parts[i])
		if err != nil || n < 0 {
			return [2]int{}, false
		}
		v[i] = n
	}
	return v, true
}

// release closes the connections.
func (b *Backend) release() {
	if b.conn != nil {
		_ = b.conn.Close()
	}
	if b.ownHTTP {
		b.http.CloseIdleConnections()
	}
}

// Close releases the client. Data stay on the server. Further calls return
// driver.ErrClosed; Close itself may be called again.
func (b *Backend) Close() error {
	b.closeOnce.Do(func() {
		b.applyMu.Lock() // let a running Apply finish
		b.closed.Store(true)
		b.applyMu.Unlock()
		b.release()
	})
	return nil
}

func (b *Backend) usable() error {
	if b.closed.Load() {
		return driver.ErrClosed
	}
	return nil
}

// Namespace returns the namespace the backend serves.
func (b *Backend) Namespace() string { return b.ns }

// Class returns the collection that holds the records.
func (b *Backend) Class() string { return b.class }

// URL returns the server's base URL.
func (b *Backend) URL() string { return b.baseURL }

// uuid namespaces for deterministic object ids.
var (
	recordSpace = uuid.MustParse("6f1b8a52-3c0e-4d2f-9a4b-2b7c1d9e5a01")
	metaSpace   = uuid.MustParse("0b4c6f3e-8d21-4a77-b5e9-7c2a1f6d3e02")
)

// objectID is the Weaviate id of the record with ragmem id id.
func (b *Backend) objectID(id string) string {
	return uuid.NewSHA1(recordSpace, []byte(b.ns+"\x00"+id)).String()
}

func (b *Backend) metaID(key string) string {
	return uuid.NewSHA1(metaSpace, []byte(b.ns+"\x00"+key)).String()
}

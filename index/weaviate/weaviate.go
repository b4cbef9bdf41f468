// Package weaviate is a ragmem storage backend (index/driver.Backend) on a
// Weaviate server or cluster, through github.com/weaviate/weaviate-go-client/v5.
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
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	wv "github.com/weaviate/weaviate-go-client/v5/weaviate"
	"github.com/weaviate/weaviate-go-client/v5/weaviate/fault"
	"github.com/weaviate/weaviate/entities/models"

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

// Options configure Open. A nil *Options means all defaults.
type Options struct {
	// Namespace names the collection: "Ragmem_<Namespace>". Letters, digits
	// and underscores, at most 64. Default "default".
	Namespace string
	// APIKey authenticates with an API key (Authorization: Bearer). Default
	// none: anonymous access.
	APIKey string
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
	// HTTPClient sends the requests. Default a client of its own.
	HTTPClient *http.Client
	// Logger receives recovery reports. Default slog.Default().
	Logger *slog.Logger
	// Now returns the current time (tests). Default time.Now.
	Now func() time.Time
}

// Backend is a Weaviate storage backend. It is safe for concurrent use.
type Backend struct {
	c        *wv.Client
	http     *http.Client
	ownHTTP  bool
	baseURL  string
	class    string
	ns       string
	cl       string
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

// Open connects to the Weaviate server at rawURL (for example
// "http://127.0.0.1:8080"), checks that it answers, and creates the
// namespace's collection or checks that the existing one has ragmem's schema.
// Unfinished batches left by a crashed writer are recovered.
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
	switch o.ConsistencyLevel = strings.ToUpper(o.ConsistencyLevel); o.ConsistencyLevel {
	case "":
		o.ConsistencyLevel = Quorum
	case One, Quorum, All:
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
	u, err := url.Parse(strings.TrimSpace(rawURL))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("%w: Weaviate URL %q must look like http://host:port", ErrConfig, rawURL)
	}
	if u.Path != "" && u.Path != "/" {
		return nil, fmt.Errorf("%w: Weaviate URL %q must not have a path", ErrConfig, rawURL)
	}
	b := &Backend{
		http:     o.HTTPClient,
		baseURL:  u.Scheme + "://" + u.Host,
		class:    ClassName(o.Namespace),
		ns:       o.Namespace,
		cl:       o.ConsistencyLevel,
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
	// server is one clear error rather than a client library retry loop.
	if err := b.ping(ctx); err != nil {
		b.closeIdle()
		return nil, err
	}
	cfg := wv.Config{Host: u.Host, Scheme: u.Scheme, ConnectionClient: b.http, Timeout: o.Timeout}
	if o.APIKey != "" {
		cfg.Headers = map[string]string{"Authorization": "Bearer " + o.APIKey}
	}
	b.c, err = wv.NewClient(cfg)
	if err != nil {
		b.closeIdle()
		return nil, fmt.Errorf("%w: %s: %w", ErrUnavailable, b.baseURL, err)
	}
	if err := b.ensureSchema(ctx, o.Replicas, o.Shards); err != nil {
		b.closeIdle()
		return nil, err
	}
	b.applyMu.Lock()
	err = b.recoverIntents(ctx, true)
	b.applyMu.Unlock()
	if err != nil {
		b.closeIdle()
		return nil, err
	}
	return b, nil
}

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

func (b *Backend) closeIdle() {
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
		b.closeIdle()
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

// wrap translates a client error into this package's errors.
func (b *Backend) wrap(op string, err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("weaviate: %s: %w", op, err)
	}
	var ce *fault.WeaviateClientError
	if errors.As(err, &ce) {
		if !ce.IsUnexpectedStatusCode || ce.StatusCode == 0 {
			if ce.DerivedFromError != nil && (errors.Is(ce.DerivedFromError, context.Canceled) || errors.Is(ce.DerivedFromError, context.DeadlineExceeded)) {
				return fmt.Errorf("weaviate: %s: %w", op, ce.DerivedFromError)
			}
			return fmt.Errorf("%w: %s at %s: %s", ErrUnavailable, op, b.baseURL, ce.Error())
		}
		if ce.StatusCode >= 500 || ce.StatusCode == http.StatusTooManyRequests {
			return fmt.Errorf("%w: %s at %s: %s", ErrUnavailable, op, b.baseURL, strings.TrimSpace(ce.Msg))
		}
		return fmt.Errorf("%w: %s: HTTP %d: %s", ErrServer, op, ce.StatusCode, strings.TrimSpace(ce.Msg))
	}
	var ne net.Error
	if errors.As(err, &ne) {
		return fmt.Errorf("%w: %s at %s: %w", ErrUnavailable, op, b.baseURL, err)
	}
	return fmt.Errorf("%w: %s: %w", ErrServer, op, err)
}

// graphQLErr turns GraphQL errors into one error.
func graphQLErr(op string, errs []*models.GraphQLError) error {
	if len(errs) == 0 {
		return nil
	}
	msgs := make([]string, 0, len(errs))
	for _, e := range errs {
		if e != nil {
			msgs = append(msgs, e.Message)
		}
	}
	return fmt.Errorf("%w: %s: %s", ErrServer, op, strings.Join(msgs, "; "))
}

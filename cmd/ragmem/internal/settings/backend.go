package settings

import (
	"context"
	"fmt"
	"log/slog"
	"strings"

	"github.com/spf13/pflag"

	"github.com/ragmem/ragmem/index/driver"
	"github.com/ragmem/ragmem/internal/index/weaviate"
)

// BackendFlags select the storage backend.
type BackendFlags struct {
	Name        string // local or weaviate
	URL         string
	APIKey      string
	Namespace   string
	Consistency string
}

func addBackendFlags(pf *pflag.FlagSet, b *BackendFlags) {
	pf.StringVar(&b.Name, "backend", "local", "storage backend: local (the data directory) or weaviate (env RAGMEM_BACKEND)")
	pf.StringVar(&b.URL, "weaviate-url", "http://127.0.0.1:8080", "Weaviate server URL for --backend weaviate (env RAGMEM_WEAVIATE_URL)")
	pf.StringVar(&b.APIKey, "weaviate-api-key", "", "Weaviate API key (default $WEAVIATE_API_KEY; none: anonymous access)")
	pf.StringVar(&b.Namespace, "weaviate-namespace", "default", "namespace: the Weaviate collection Ragmem_NAMESPACE (env RAGMEM_WEAVIATE_NAMESPACE)")
	pf.StringVar(&b.Consistency, "weaviate-consistency", "QUORUM", "consistency level of reads and writes on a replicated collection: ONE, QUORUM or ALL")
}

// open returns the backend the flags select; nil means the local store in
// the data directory.
func (b *BackendFlags) open(ctx context.Context) (driver.Backend, error) {
	switch strings.ToLower(strings.TrimSpace(b.Name)) {
	case "", "local":
		return nil, nil
	case "weaviate":
		wb, err := b.OpenWeaviate(ctx)
		if err != nil {
			return nil, err
		}
		return wb, nil
	}
	return nil, fmt.Errorf("unknown backend %q (want local or weaviate)", b.Name)
}

// OpenWeaviate opens the Weaviate backend the flags describe.
func (b *BackendFlags) OpenWeaviate(ctx context.Context) (*weaviate.Backend, error) {
	return weaviate.Open(ctx, b.URL, &weaviate.Options{
		Namespace: b.Namespace, APIKey: b.APIKey, ConsistencyLevel: b.Consistency, Logger: slog.Default(),
	})
}

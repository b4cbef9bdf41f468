package main

import (
	"context"
	"fmt"
	"log/slog"
	"strings"

	"github.com/spf13/pflag"

	"github.com/ragmem/ragmem/index/driver"
	"github.com/ragmem/ragmem/internal/index/weaviate"
)

// backendFlags select the storage backend.
type backendFlags struct {
	backend     string
	url         string
	apiKey      string
	namespace   string
	consistency string
}

func addBackendFlags(pf *pflag.FlagSet, b *backendFlags) {
	pf.StringVar(&b.backend, "backend", "local", "storage backend: local (the data directory) or weaviate (env RAGMEM_BACKEND)")
	pf.StringVar(&b.url, "weaviate-url", "http://127.0.0.1:8080", "Weaviate server URL for --backend weaviate (env RAGMEM_WEAVIATE_URL)")
	pf.StringVar(&b.apiKey, "weaviate-api-key", "", "Weaviate API key (default $WEAVIATE_API_KEY; none: anonymous access)")
	pf.StringVar(&b.namespace, "weaviate-namespace", "default", "namespace: the Weaviate collection Ragmem_NAMESPACE (env RAGMEM_WEAVIATE_NAMESPACE)")
	pf.StringVar(&b.consistency, "weaviate-consistency", "QUORUM", "consistency level of reads and writes on a replicated collection: ONE, QUORUM or ALL")
}

// open returns the backend the flags select; nil means the local store in
// the data directory.
func (b *backendFlags) open(ctx context.Context) (driver.Backend, error) {
	switch strings.ToLower(strings.TrimSpace(b.backend)) {
	case "", "local":
		return nil, nil
	case "weaviate":
		wb, err := b.openWeaviate(ctx)
		if err != nil {
			return nil, err
		}
		return wb, nil
	}
	return nil, fmt.Errorf("unknown backend %q (want local or weaviate)", b.backend)
}

func (b *backendFlags) openWeaviate(ctx context.Context) (*weaviate.Backend, error) {
	return weaviate.Open(ctx, b.url, &weaviate.Options{
		Namespace: b.namespace, APIKey: b.apiKey, ConsistencyLevel: b.consistency, Logger: slog.Default(),
	})
}

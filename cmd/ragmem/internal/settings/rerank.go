package settings

import (
	"time"

	"github.com/spf13/pflag"

	"github.com/ragmem/ragmem/rag"
)

// RerankFlags are the global flags of the optional rerank stage
// (rag.RerankConfig, internal/rerank): off unless --reranker names a
// /rerank endpoint. Each is also a config key (globalKeys).
type RerankFlags struct {
	URL     string
	API     string
	Model   string
	APIKey  string
	Top     int
	Timeout time.Duration
}

func addRerankFlags(pf *pflag.FlagSet, r *RerankFlags) {
	pf.StringVar(&r.URL, "reranker", "", "URL of a /rerank endpoint (Hugging Face TEI, llama.cpp --reranking, vLLM, Cohere, Jina) that reorders the fused top results; "+
		"default $RAGMEM_RERANKER, else the config file's reranker, else none")
	pf.StringVar(&r.API, "reranker-api", "", "the reranker's request shape: cohere or tei (default: by the URL, see docs/configuration.md)")
	pf.StringVar(&r.Model, "reranker-model", "", "the reranker's model name, for servers that serve several (Cohere and Jina need one)")
	pf.StringVar(&r.APIKey, "reranker-api-key", "", "API key sent to the reranker as a Bearer token (default $RAGMEM_RERANKER_API_KEY)")
	pf.IntVar(&r.Top, "reranker-top", 0, "fused results the reranker reorders (default 50)")
	pf.DurationVar(&r.Timeout, "reranker-timeout", 0, "timeout of one rerank call; after a failure the reranker is skipped for a while (default 3s)")
}

// RagConfig is the engine configuration the flags give.
func (s *Settings) RagConfig() rag.Config {
	r := s.Rerank
	return rag.Config{Rerank: rag.RerankConfig{URL: r.URL, API: r.API, Model: r.Model, APIKey: r.APIKey, Top: r.Top, Timeout: r.Timeout}}
}

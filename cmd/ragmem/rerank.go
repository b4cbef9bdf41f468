package main

import (
	"time"

	"github.com/spf13/pflag"

	"github.com/ragmem/ragmem/rag"
)

// rerankFlags are the global flags of the optional rerank stage
// (rag.RerankConfig, internal/rerank): off unless --reranker names a
// /rerank endpoint. Each is also a config key (globalKeys).
type rerankFlags struct {
	url     string
	api     string
	model   string
	apiKey  string
	top     int
	timeout time.Duration
}

func addRerankFlags(pf *pflag.FlagSet, r *rerankFlags) {
	pf.StringVar(&r.url, "reranker", "", "URL of a /rerank endpoint (Hugging Face TEI, llama.cpp --reranking, vLLM, Cohere, Jina) that reorders the fused top results; "+
		"default $RAGMEM_RERANKER, else the config file's reranker, else none")
	pf.StringVar(&r.api, "reranker-api", "", "the reranker's request shape: cohere or tei (default: by the URL, see docs/configuration.md)")
	pf.StringVar(&r.model, "reranker-model", "", "the reranker's model name, for servers that serve several (Cohere and Jina need one)")
	pf.StringVar(&r.apiKey, "reranker-api-key", "", "API key sent to the reranker as a Bearer token (default $RAGMEM_RERANKER_API_KEY)")
	pf.IntVar(&r.top, "reranker-top", 0, "fused results the reranker reorders (default 50)")
	pf.DurationVar(&r.timeout, "reranker-timeout", 0, "timeout of one rerank call; after a failure the reranker is skipped for a while (default 3s)")
}

// ragConfig is the engine configuration the flags give.
func (g *globals) ragConfig() rag.Config {
	r := g.rerank
	return rag.Config{Rerank: rag.RerankConfig{URL: r.url, API: r.api, Model: r.model, APIKey: r.apiKey, Top: r.top, Timeout: r.timeout}}
}

// Package embed turns text into vectors for ragmem's vector index.
//
// Four embedders are provided:
//
//   - [Lexical], the offline default: deterministic signed feature hashing of
//     words, word bigrams and character n-grams. It needs no model download
//     and no network. It is lexical, not semantic: it matches shared words and
//     sub-words (and so is robust to typos and inflection) but knows nothing of
//     synonyms.
//   - [RandProj], the dense test embedder: a fixed Gaussian random projection
//     of the lexical vectors. Dense like a neural model's vectors, but needing
//     nothing outside the binary, so that tests and benchmarks exercise the
//     dense-vector path hermetically. Lexical, not semantic.
//   - [Model2Vec], a static embedder loaded from a Model2Vec model directory
//     (minishlab/potion-base-8M, potion-retrieval-32M, ...): semantic, pure
//     Go, offline once the model is on disk. [PullModel] downloads one from
//     the Hugging Face hub into the user cache.
//   - [OpenAI], a client for any OpenAI-compatible POST {base}/embeddings
//     endpoint: OpenAI itself, Ollama (/v1), vLLM, LM Studio, llama.cpp
//     server.
//
// [Parse] builds any of them from a command-line spec such as "lexical",
// "lexical:dim=512", "model2vec:/path/to/potion-base-8M" or
// "openai:text-embedding-3-small". A [Spec] is such a spec as a value: every
// embedder here describes itself as one ([SpecOf]), without secrets, so that
// a store can record it and [New] can build the embedder again.
//
// [QueryCache] remembers query embeddings by embedder identity and text.
// Decorators (caches, circuit breakers, metrics) wrap an Embedder and should
// implement [Unwrapper], so that [SpecOf] and [Concurrency] see through them.
//
// Every vector an [Embedder] returns has length Dimension() and unit L2 norm,
// so cosine similarity is a plain dot product. Vectors are comparable only
// between embedders with the same Identity.
package embed

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Embedder turns texts into vectors. Implementations are safe for concurrent use.
type Embedder interface {
	// Embed returns one vector per text, in order, each of length Dimension(), L2-normalised.
	Embed(ctx context.Context, texts []string) ([][]float32, error)
	// Identity names the model precisely enough that vectors from two embedders with the
	// same Identity are comparable, e.g. "lexical-v1/d768/..." or
	// "openai/text-embedding-3-small/d1536".
	Identity() string
	// Dimension is the vector length. It is 0 only for an [OpenAI] embedder whose
	// dimension is not known until its first successful call.
	Dimension() int
}

// QueryEmbedder is optionally implemented by embedders that embed queries
// differently from documents. Callers embedding a search query should prefer
// EmbedQuery when the embedder implements it.
type QueryEmbedder interface {
	EmbedQuery(ctx context.Context, text string) ([]float32, error)
}

// WordMatcher is optionally implemented by embedders whose vectors encode the
// words of a text rather than its meaning: [Lexical] and [RandProj], a
// projection of it. Their vector ranking mostly repeats, less precisely, what
// BM25 finds, so hybrid search gives it a small fixed weight instead of
// calibrating one on the store (see package search). An embedder that does
// not implement it is treated as semantic.
type WordMatcher interface {
	// MatchesWords reports whether the vectors encode words, not meaning.
	MatchesWords() bool
}

// MatchesWords reports whether e's vectors encode words: the first
// [WordMatcher] in e's chain of [Unwrapper] wrappers decides, and an
// embedder that says nothing does not.
func MatchesWords(e Embedder) bool {
	wm, ok := through[WordMatcher](e)
	return ok && wm.MatchesWords()
}

// Errors returned by this package. They are wrapped with context; test with errors.Is.
var (
	// ErrDimensionMismatch: a vector's length differs from the embedder's dimension,
	// or vectors in one response differ in length.
	ErrDimensionMismatch = errors.New("embed: dimension mismatch")
	// ErrBadResponse: an embedding server answered with something that is not a
	// valid embeddings response (wrong item count, bad index, NaN, empty vector...).
	ErrBadResponse = errors.New("embed: bad response from embedding server")
	// ErrRetriesExhausted: a retryable failure (429, 5xx, network) persisted
	// through every retry. The last failure is wrapped too.
	ErrRetriesExhausted = errors.New("embed: retries exhausted")
	// ErrInvalidOptions: options given to a constructor are unusable.
	ErrInvalidOptions = errors.New("embed: invalid options")
	// ErrBadSpec: Parse was given a spec it cannot understand.
	ErrBadSpec = errors.New("embed: bad embedder spec")
	// ErrNoAPIKey: the embedding server needs an API key and none was given.
	ErrNoAPIKey = errors.New("embed: no API key")
)

// Default returns the offline default embedder, NewLexical(nil).
func Default() Embedder { return NewLexical(nil) }

// Parse builds an embedder from a command-line spec, [ParseSpec] then [New]:
//
//	""  or "lexical"                 Default()
//	"lexical:k=v,k=v"                NewLexical with options:
//	    dim=N        vector length, 1..65536 (default 768)
//	    ngram=A-B    character n-gram lengths, 1 <= A <= B <= 8 (default 3-5)
//	    word=W       weight of word features, 0 switches them off (default 1)
//	    char=W       weight of character n-grams, 0 switches them off (default 0.35)
//	    bigram=W     weight of word bigrams, 0 switches them off (default 0, off)
//	    stem=0|1     English plural folding (default 1)
//	    stop=0|1     drop English stop words (default 1)
//	"randproj[:k=v,...]"             NewRandProj: the dense test embedder, a fixed
//	                                 Gaussian projection of lexical vectors; options:
//	    dim=N        output vector length, 1..8192 (default 768)
//	    seed=S       projection matrix seed, a positive integer (default 1)
//	    lexdim=N     lexical buckets projected (the lexical "dim", default 768)
//	    and any other lexical option above
//	"model2vec:DIR[,maxtokens=N]"    LoadModel2Vec(DIR); DIR may also be the
//	                                 owner/name of a model pulled with PullModel
//	"openai:MODEL[,k=v...]"          NewOpenAI with BaseURL and APIKey from
//	                                 $OPENAI_BASE_URL and $OPENAI_API_KEY; options:
//	    dim=N             OpenAIOptions.Dimensions
//	    batch=N           OpenAIOptions.BatchSize (texts per request, default 64, at most 2048)
//	    request_tokens=N  OpenAIOptions.MaxRequestTokens (default 300000)
//	    concurrency=N     OpenAIOptions.Concurrency (requests in flight, default 4)
//	    retries=N         OpenAIOptions.MaxRetries (0: none; default 5)
//	    timeout=D         OpenAIOptions.Timeout, a Go duration (default 60s)
//	    base=URL          OpenAIOptions.BaseURL (overrides the environment)
//
// MODEL is taken verbatim up to the first comma, so Ollama tags such as
// "openai:nomic-embed-text:latest" work. Parse never contacts a server; a
// model2vec spec loads the model from disk.
func Parse(spec string) (Embedder, error) {
	s, err := ParseSpec(spec)
	if err != nil {
		return nil, err
	}
	return New(s, nil)
}

func parseIntRange(key, v string, lo, hi int) (int, error) {
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil || n < lo || n > hi {
		return 0, fmt.Errorf("%w: %s=%q: want an integer from %d to %d", ErrBadSpec, key, truncateForError(v), lo, hi)
	}
	return n, nil
}

// truncateForError keeps user-supplied text in error messages short.
func truncateForError(s string) string {
	const max = 64
	s = strings.ToValidUTF8(s, "\uFFFD")
	if len(s) <= max {
		return s
	}
	cut := max
	for cut > 0 && (s[cut]&0xC0) == 0x80 {
		cut--
	}
	return s[:cut] + "..."
}

package memory

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	openai "github.com/sashabaranov/go-openai"

	"github.com/ragmem/ragmem/internal/llmchat"
)

// ErrModel wraps failures of the language model (transport, HTTP status,
// empty or unreadable answers).
var ErrModel = errors.New("memory: language model failed")

// LLM is an OpenAI-compatible chat model (OpenAI, Ollama, vLLM, LM Studio,
// llama.cpp) used for memory extraction and summaries. It is a plain value;
// the client is safe for concurrent use.
type LLM struct {
	// Client talks to the server: openai.NewClientWithConfig with its
	// BaseURL. Required.
	Client *openai.Client
	// Model is the chat model name. Required.
	Model string
	// Temperature is sent when > 0. Default: the server's default.
	Temperature float32
	// MaxTokens caps each completion when > 0. Default: the server's.
	MaxTokens int
	// NoStructuredOutput stops requests for JSON-schema structured output
	// (response_format). Default false: it is asked for, and the request is
	// repeated without it when the server answers 400.
	NoStructuredOutput bool
}

func (l LLM) check() error {
	if l.Client == nil {
		return fmt.Errorf("%w: LLM.Client is nil", ErrInvalid)
	}
	if strings.TrimSpace(l.Model) == "" {
		return fmt.Errorf("%w: LLM.Model is empty", ErrInvalid)
	}
	return nil
}

// complete sends messages and returns the answer's text. With a schema it
// asks for structured output under name, falling back to the prompt alone
// when the server rejects response_format; it reports whether the answer
// was constrained by the schema.
func (l LLM) complete(ctx context.Context, msgs []openai.ChatCompletionMessage, name string, schema json.RawMessage) (string, bool, error) {
	if err := l.check(); err != nil {
		return "", false, err
	}
	req := openai.ChatCompletionRequest{Model: l.Model, Messages: msgs, Temperature: l.Temperature, MaxTokens: l.MaxTokens}
	return llmchat.Complete(ctx, l.Client, req, name, schema, !l.NoStructuredOutput, ErrModel)
}

package memory

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	openai "github.com/sashabaranov/go-openai"
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
	structured := schema != nil && !l.NoStructuredOutput
	if structured {
		req.ResponseFormat = &openai.ChatCompletionResponseFormat{
			Type:       openai.ChatCompletionResponseFormatTypeJSONSchema,
			JSONSchema: &openai.ChatCompletionResponseFormatJSONSchema{Name: name, Schema: schema, Strict: true},
		}
	}
	resp, err := l.Client.CreateChatCompletion(ctx, req)
	var apiErr *openai.APIError
	var reqErr *openai.RequestError
	if structured && err != nil && ctx.Err() == nil &&
		((errors.As(err, &apiErr) && apiErr.HTTPStatusCode == http.StatusBadRequest) ||
			(errors.As(err, &reqErr) && reqErr.HTTPStatusCode == http.StatusBadRequest)) {
		req.ResponseFormat = nil
		structured = false
		resp, err = l.Client.CreateChatCompletion(ctx, req)
	}
	if err != nil {
		if ctx.Err() != nil {
			return "", structured, ctx.Err()
		}
		return "", structured, fmt.Errorf("%w: %w", ErrModel, err)
	}
	if len(resp.Choices) == 0 {
		return "", structured, fmt.Errorf("%w: the response has no choices", ErrModel)
	}
	return resp.Choices[0].Message.Content, structured, nil
}

// jsonObject returns the outermost {...} of s, preferring a fenced block.
func jsonObject(s string) (string, bool) {
	if i := strings.Index(s, "```"); i >= 0 {
		rest := s[i+3:]
		if nl := strings.IndexByte(rest, '\n'); nl >= 0 {
			rest = rest[nl+1:]
		}
		if j := strings.Index(rest, "```"); j >= 0 {
			if o, ok := jsonObject(rest[:j]); ok {
				return o, true
			}
		}
	}
	i, j := strings.IndexByte(s, '{'), strings.LastIndexByte(s, '}')
	if i < 0 || j <= i {
		return "", false
	}
	return s[i : j+1], true
}

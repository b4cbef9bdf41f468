package rag

import (
	"errors"
	"strings"

	openai "github.com/sashabaranov/go-openai"
)

// LLM is a chat model behind an OpenAI-compatible chat-completions API
// (OpenAI, Ollama, vLLM, LM Studio, llama.cpp...): the one configuration of
// the chat model that ragmem's agent helpers (package agent) and agent
// memory (extraction, summaries) talk to. It is a plain value; the go-openai
// client it holds is safe for concurrent use.
type LLM struct {
	// Client talks to the API: openai.NewClientWithConfig with the server's
	// BaseURL. Required.
	Client *openai.Client
	// Model is the chat model name. Required. It also chooses the tokenizer
	// that counts budgets (see budget.CounterForModel).
	Model string
	// Temperature is sent when > 0. Default: the server's default.
	Temperature float32
	// MaxTokens caps each completion when > 0, sent as
	// max_completion_tokens (OpenAI's field since max_tokens was
	// deprecated; o-series models accept only it; vLLM and llama.cpp read
	// it too, a server that knows only max_tokens ignores it). Default: the
	// server's default.
	MaxTokens int
	// NoStructuredOutput stops requests for JSON-schema structured output
	// (response_format). Default false: it is asked for where an answer has
	// a schema, and the request is repeated without it when the server
	// answers 400.
	NoStructuredOutput bool
}

// Validate reports a missing client or model. Callers wrap its error in
// their own sentinel.
func (l LLM) Validate() error {
	if l.Client == nil {
		return errors.New("LLM.Client is nil")
	}
	if strings.TrimSpace(l.Model) == "" {
		return errors.New("LLM.Model is empty")
	}
	return nil
}

// Request returns a chat-completion request for msgs with the model's
// name, temperature and completion cap.
func (l LLM) Request(msgs []openai.ChatCompletionMessage) openai.ChatCompletionRequest {
	return openai.ChatCompletionRequest{Model: l.Model, Messages: msgs, Temperature: l.Temperature, MaxCompletionTokens: l.MaxTokens}
}

package extraction

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	openai "github.com/sashabaranov/go-openai"

	"github.com/ragmem/ragmem/internal/llmchat"
	"github.com/ragmem/ragmem/internal/memory"
	"github.com/ragmem/ragmem/rag"
)

// ErrModel wraps failures of the language model (transport, HTTP status,
// empty or unreadable answers).
var ErrModel = errors.New("extraction: language model failed")

func checkLLM(l rag.LLM) error {
	if err := l.Validate(); err != nil {
		return fmt.Errorf("%w: %v", memory.ErrInvalid, err)
	}
	return nil
}

// complete sends messages and returns the answer's text. With a schema it
// asks for structured output under name, falling back to the prompt alone
// when the server rejects response_format; it reports whether the answer
// was constrained by the schema.
func complete(ctx context.Context, l rag.LLM, msgs []openai.ChatCompletionMessage, name string, schema json.RawMessage) (string, bool, error) {
	if err := checkLLM(l); err != nil {
		return "", false, err
	}
	return llmchat.Complete(ctx, l.Client, l.Request(msgs), name, schema, !l.NoStructuredOutput, ErrModel)
}

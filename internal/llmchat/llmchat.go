// Package llmchat holds what ragmem's callers of OpenAI-compatible chat
// models share: one completion that asks for JSON-schema structured output
// and falls back to the prompt alone when the server rejects it, and the
// extraction of a JSON object from a model's free-form answer.
package llmchat

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	openai "github.com/sashabaranov/go-openai"
)

// Complete sends req and returns the answer's text. With a schema (and
// structured true) it asks for structured output under name; when the server
// answers 400 to that (it does not support response_format json_schema) it
// asks again without it. It reports whether the answer was constrained by
// the schema. Failures other than the context's are wrapped in errModel.
func Complete(ctx context.Context, client *openai.Client, req openai.ChatCompletionRequest, name string, schema json.RawMessage, structured bool, errModel error) (string, bool, error) {
	structured = structured && schema != nil
	if structured {
		req.ResponseFormat = &openai.ChatCompletionResponseFormat{
			Type:       openai.ChatCompletionResponseFormatTypeJSONSchema,
			JSONSchema: &openai.ChatCompletionResponseFormatJSONSchema{Name: name, Schema: schema, Strict: true},
		}
	}
	resp, err := client.CreateChatCompletion(ctx, req)
	var apiErr *openai.APIError
	var reqErr *openai.RequestError
	if structured && err != nil && ctx.Err() == nil &&
		((errors.As(err, &apiErr) && apiErr.HTTPStatusCode == http.StatusBadRequest) ||
			(errors.As(err, &reqErr) && reqErr.HTTPStatusCode == http.StatusBadRequest)) {
		req.ResponseFormat = nil
		structured = false
		resp, err = client.CreateChatCompletion(ctx, req)
	}
	if err != nil {
		if ctx.Err() != nil {
			return "", structured, ctx.Err()
		}
		return "", structured, fmt.Errorf("%w: %w", errModel, err)
	}
	if len(resp.Choices) == 0 {
		return "", structured, fmt.Errorf("%w: the response has no choices", errModel)
	}
	return resp.Choices[0].Message.Content, structured, nil
}

// JSONObject returns the outermost {...} of s, preferring one inside a
// Markdown code fence.
func JSONObject(s string) (string, bool) {
	if i := strings.Index(s, "```"); i >= 0 {
		rest := s[i+3:]
		if nl := strings.IndexByte(rest, '\n'); nl >= 0 {
			rest = rest[nl+1:]
		}
		if j := strings.Index(rest, "```"); j >= 0 {
			if o, ok := JSONObject(rest[:j]); ok {
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

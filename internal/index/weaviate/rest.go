package weaviate

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// maxREST bounds the body of one REST answer that is read.
const maxREST = 16 << 20

// restJSON sends a REST request with in (if not nil) as its JSON body and
// decodes a 2xx answer into out (if not nil). It returns the status code.
// A status in allow is returned without error (and without decoding); any
// other status outside 2xx is an error.
func (b *Backend) restJSON(ctx context.Context, op, method, path string, in, out any, allow ...int) (int, error) {
	var body io.Reader
	if in != nil {
		js, err := json.Marshal(in)
		if err != nil {
			return 0, fmt.Errorf("%w: %s: encode request: %w", ErrServer, op, err)
		}
		body = bytes.NewReader(js)
	}
	req, err := http.NewRequestWithContext(ctx, method, b.baseURL+path, body)
	if err != nil {
		return 0, fmt.Errorf("%w: %s: %w", ErrConfig, op, err)
	}
	req.Header.Set("Accept", "application/json")
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if b.apiKey != "" {
		req.Header.Set("Authorization", "Bearer "+b.apiKey)
	}
	resp, err := b.http.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return 0, fmt.Errorf("weaviate: %s: %w", op, ctx.Err())
		}
		return 0, fmt.Errorf("%w: %s at %s: %w", ErrUnavailable, op, b.baseURL, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxREST+1))
	if err != nil {
		if ctx.Err() != nil {
			return 0, fmt.Errorf("weaviate: %s: %w", op, ctx.Err())
		}
		return 0, fmt.Errorf("%w: %s at %s: reading the answer: %w", ErrUnavailable, op, b.baseURL, err)
	}
	if len(raw) > maxREST {
		return resp.StatusCode, fmt.Errorf("%w: %s: the answer is larger than %d bytes", ErrServer, op, maxREST)
	}
	code := resp.StatusCode
	for _, a := range allow {
		if code == a {
			return code, nil
		}
	}
	switch {
	case code >= 200 && code < 300:
	case code >= 500 || code == http.StatusTooManyRequests:
		return code, fmt.Errorf("%w: %s at %s: HTTP %d: %s", ErrUnavailable, op, b.baseURL, code, restMessage(raw))
	case code == http.StatusUnauthorized || code == http.StatusForbidden:
		return code, fmt.Errorf("%w: %s: HTTP %d: the server refused the credentials (API key): %s", ErrServer, op, code, restMessage(raw))
	default:
		return code, fmt.Errorf("%w: %s: HTTP %d: %s", ErrServer, op, code, restMessage(raw))
	}
	if out != nil && len(raw) > 0 {
		if err := json.Unmarshal(raw, out); err != nil {
			return code, fmt.Errorf("%w: %s: unexpected answer: %w", ErrServer, op, err)
		}
	}
	return code, nil
}

// restMessage extracts the messages of a Weaviate error body
// ({"error":[{"message":"..."}]}), else returns the body, shortened.
func restMessage(raw []byte) string {
	var e struct {
		Error []struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(raw, &e) == nil && len(e.Error) > 0 {
		msgs := make([]string, 0, len(e.Error))
		for _, m := range e.Error {
			if m := strings.TrimSpace(m.Message); m != "" {
				msgs = append(msgs, m)
			}
		}
		if len(msgs) > 0 {
			return strings.Join(msgs, "; ")
		}
	}
	s := strings.TrimSpace(string(raw))
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	if s == "" {
		s = "(no message)"
	}
	return s
}

package server

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	"github.com/ragmem/ragmem/rag"
)

// sourceURL reads DELETE /v1/sources: the source's ?url=, required, valid
// UTF-8 of at most maxURLBytes and without control characters.
func sourceURL(r *http.Request) (string, *apiError) {
	u := r.URL.Query().Get("url")
	if strings.TrimSpace(u) == "" {
		return "", badRequest("url is required")
	}
	if e := checkText("url", u, maxURLBytes); e != nil {
		return "", e
	}
	if strings.ContainsAny(u, "\x00\r\n") {
		return "", badRequest("url contains control characters")
	}
	return u, nil
}

// removeSource removes every chunk of a source of any type (DELETE
// /v1/pages removes only pages); a source the memory does not hold is 404.
func removeSource(mem rag.Memory, ctx context.Context, u string) (map[string]any, error) {
	n, err := mem.Remove(ctx, u)
	if err != nil {
		return nil, err
	}
	if n == 0 {
		return nil, errorf(http.StatusNotFound, CodeNotFound, fmt.Sprintf("no source %s in the memory", u))
	}
	return map[string]any{"url": u, "removed": n}, nil
}

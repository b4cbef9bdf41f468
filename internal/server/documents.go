package server

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/ragmem/ragmem/rag"
)

// postDocuments indexes a batch of documents synchronously, in one atomic
// write: when it answers 200, every document's result is final and durable.
func postDocuments(r *http.Request, mem rag.Memory, req rag.DocumentsRequest) (*rag.DocumentsJSON, error) {
	out, err := mem.Index(r.Context(), req)
	if err != nil {
		return nil, err
	}
	for i := range out.Results {
		out.Results[i].Error = publicMessage(r, out.Results[i].Error)
	}
	return out, nil
}

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

// deleteSource removes every chunk of a source of any type (DELETE
// /v1/pages removes only pages); a source the memory does not hold is 404.
func deleteSource(r *http.Request, mem rag.Memory, u string) (map[string]any, error) {
	n, err := mem.Remove(r.Context(), u)
	if err != nil {
		return nil, err
	}
	if n == 0 {
		return nil, errorf(http.StatusNotFound, CodeNotFound, fmt.Sprintf("no source %s in the memory", u))
	}
	return map[string]any{"url": u, "removed": n}, nil
}

package server

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// TestRoutesAreDocumented checks the other direction of TestOpenAPI: every
// route the server registers is in openapi.json with its method.
func TestRoutesAreDocumented(t *testing.T) {
	var spec struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(openapiJSON, &spec); err != nil {
		t.Fatal(err)
	}
	s := &Server{mux: http.NewServeMux(), protected: map[string]bool{}}
	s.apiRoutes()
	s.documentRoutes()
	s.bulkRoutes()
	s.mustHandle("GET /healthz", http.NotFound, false)
	s.mustHandle("GET /readyz", http.NotFound, false)
	s.mustHandle("GET /metrics", http.NotFound, false)
	if len(s.protected) < 10 {
		t.Fatalf("only %d routes", len(s.protected))
	}
	for pattern := range s.protected {
		method, path, _ := strings.Cut(pattern, " ")
		ops, ok := spec.Paths[path]
		if !ok {
			t.Errorf("%s is not documented", pattern)
			continue
		}
		if _, ok := ops[strings.ToLower(method)]; !ok {
			t.Errorf("%s: method not documented", pattern)
		}
	}
}

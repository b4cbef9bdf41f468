package server

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"
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

// TestOptionDefaults checks New's defaulting (withDefaults): a zero field
// gets its default, a negative quota or body bound means none, a body
// bound below the body limit is raised to it, and what is set stays.
func TestOptionDefaults(t *testing.T) {
	for _, c := range []struct {
		name string
		in   *Options
		want func(o Options) bool
	}{
		{"nil options are the defaults", nil, func(o Options) bool {
			return o.QuotaChunks == DefaultQuotaChunks && o.QuotaBytes == DefaultQuotaBytes &&
				o.MaxBodyBytes == DefaultMaxBodyBytes && o.MaxBodyInflight == DefaultMaxBodyInflight &&
				o.RateLimit == DefaultRateLimit && o.RateBurst == DefaultRateBurst &&
				o.RequestTimeout == DefaultRequestTimeout && o.LocalRequestTimeout == DefaultLocalRequestTimeout &&
				o.ExtractConcurrency >= 2 && o.Open != nil && o.Logger != nil && o.Now != nil
		}},
		{"negative quotas and inflight bound mean none", &Options{QuotaChunks: -1, QuotaBytes: -5, MaxBodyInflight: -1}, func(o Options) bool {
			return o.QuotaChunks == 0 && o.QuotaBytes == 0 && o.MaxBodyInflight == 0
		}},
		{"inflight bound is raised to the body limit", &Options{MaxBodyBytes: 1 << 20, MaxBodyInflight: 1 << 10}, func(o Options) bool {
			return o.MaxBodyInflight == 1<<20
		}},
		{"set values stay", &Options{QuotaChunks: 7, RateBurst: 3, MaxNamespaces: 2, IdleTimeout: time.Second, RateLimit: -1}, func(o Options) bool {
			return o.QuotaChunks == 7 && o.RateBurst == 3 && o.MaxNamespaces == 2 && o.IdleTimeout == time.Second && o.RateLimit == -1
		}},
	} {
		if got := withDefaults(c.in); !c.want(got) {
			t.Errorf("%s: got %+v", c.name, got)
		}
	}
}

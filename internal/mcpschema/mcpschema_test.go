package mcpschema

import (
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
)

// TestFor checks that the schema comes from the tags and that edit
// reaches the properties; a type the inference refuses panics.
func TestFor(t *testing.T) {
	type input struct {
		Query string `json:"query" jsonschema:"what to look for"`
		TopK  int    `json:"topK,omitempty"`
	}
	s := For[input](func(p map[string]*jsonschema.Schema) { p["topK"].Maximum = new(50.0) })
	if q := s.Properties["query"]; q == nil || q.Description != "what to look for" {
		t.Errorf("query: %+v", q)
	}
	if k := s.Properties["topK"]; k == nil || k.Maximum == nil || *k.Maximum != 50 {
		t.Errorf("topK: %+v", k)
	}
	if len(s.Required) != 1 || s.Required[0] != "query" {
		t.Errorf("required: %v", s.Required)
	}
	defer func() {
		if recover() == nil {
			t.Error("a channel field did not panic")
		}
	}()
	For[struct {
		C chan int `json:"c"`
	}](nil)
}

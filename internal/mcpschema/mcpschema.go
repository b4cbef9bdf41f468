// Package mcpschema infers the input schema of an MCP tool from the tool's
// Go input type: the one way ragmem's MCP bindings (internal/mcpserver and
// internal/memory/memmcp) describe their tools.
package mcpschema

import (
	"fmt"
	"reflect"

	"github.com/google/jsonschema-go/jsonschema"
)

// For infers T's JSON schema from its json and jsonschema tags, then
// applies edit (nil: none) to its properties: the bounds and enums a tag
// cannot say. A type the inference refuses is a programming error, so For
// panics, which any test that registers the tools catches.
func For[T any](edit func(props map[string]*jsonschema.Schema)) *jsonschema.Schema {
	s, err := jsonschema.For[T](&jsonschema.ForOptions{})
	if err != nil {
		panic(fmt.Sprintf("mcpschema: schema of %v: %v", reflect.TypeFor[T](), err))
	}
	if edit != nil {
		edit(s.Properties)
	}
	return s
}

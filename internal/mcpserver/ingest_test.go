package mcpserver

import (
	"strings"
	"testing"
)

// index_text takes attributes; search_memory and get_context filter on
// them; URL variants are one source; bad input gets a clear error.
func TestToolAttrsAndFilters(t *testing.T) {
	cs := connect(t, New(newEngine(t), nil))
	for _, u := range []string{"https://Zoo.example/otters#top", "https://zoo.example/otters?utm_source=x"} {
		var out indexOutput
		if msg, isErr := call(t, cs, toolIndexText, map[string]any{"url": u, "text": "Sea otters hold hands while they sleep.", "attrs": map[string]string{"team": "mammals"}}, &out); isErr || out.SourceURL != "https://zoo.example/otters" {
			t.Fatalf("%s: %s %+v", u, msg, out)
		}
	}
	call(t, cs, toolIndexText, map[string]any{"url": "https://zoo.example/lions", "text": "Lions sleep most of the day.", "attrs": map[string]string{"team": "cats"}}, nil)
	var so searchOutput
	if msg, isErr := call(t, cs, toolSearchMemory, map[string]any{"query": "sleep", "filter": "team = cats"}, &so); isErr || len(so.Results) != 1 || so.Results[0].URL != "https://zoo.example/lions" {
		t.Fatalf("filtered search: %s %+v", msg, so)
	}
	var co contextOutput
	if msg, isErr := call(t, cs, toolGetContext, map[string]any{"query": "who sleeps", "filter": `source STARTS WITH "https://zoo.example/o"`}, &co); isErr || len(co.Sources) != 1 || co.Sources[0].URL != "https://zoo.example/otters" {
		t.Fatalf("filtered context: %s %+v", msg, co)
	}
	if msg, isErr := call(t, cs, toolSearchMemory, map[string]any{"query": "sleep", "filter": "team IN cats"}, nil); !isErr || !strings.Contains(msg, "column 9") {
		t.Errorf("bad filter: %v %s", isErr, msg)
	}
	if msg, isErr := call(t, cs, toolIndexText, map[string]any{"url": "https://zoo.example/x", "text": "t", "attrs": map[string]string{"attr.x": "1"}}, nil); !isErr || !strings.Contains(msg, "reserved") {
		t.Errorf("bad attrs: %v %s", isErr, msg)
	}
}

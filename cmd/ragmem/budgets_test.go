package main

import (
	"encoding/json"
	"net/http"
	"path/filepath"
	"reflect"
	"strconv"
	"testing"

	"github.com/ragmem/ragmem/rag"
)

// TestContextDefaultsAreTheEngines: a context asked for without a model
// gets the same budgets on every surface, decided once inside the engine
// (rag.Engine.BuildContext): POST /v1/context, the MCP tool get_context and
// `ragmem context --json`, on one store. Each surface passes what its
// caller gave and leaves the rest zero; none picks a model of its own.
func TestContextDefaultsAreTheEngines(t *testing.T) {
	dir := processTestDir(t, false)
	file := filepath.Join(t.TempDir(), "basalt.md")
	writeFile(t, file, "# Basalt\n\nBasalt columns form as a thick lava flow cools and contracts.\n")
	if out, stderr, code := runAsMain(t, "", "--dir", dir, "index", file); code != 0 {
		t.Fatalf("index: %s%s", out, stderr)
	}
	s := startServe(t, dir)
	defer s.stop()
	const query = "how do basalt columns form?"

	type answer struct {
		Budgets struct {
			TotalAvailable   int `json:"totalAvailable"`
			PreferenceBudget int `json:"preference"`
			KnowledgeBudget  int `json:"knowledge"`
			Remaining        int `json:"remaining"`
		} `json:"budgets"`
		Tokens rag.TokensJSON `json:"tokens"`
		Found  int            `json:"totalFound"`
	}
	var viaHTTP, viaMCP, viaCLI answer

	// The same system prompt on each (the CLI sends one of its own unless
	// told its size), and no model.
	const sysTokens = 50
	r := s.call(http.MethodPost, "/v1/context", jsonBody(t, map[string]any{"query": query, "systemPromptTokens": sysTokens}), false)
	if r.status != http.StatusOK {
		t.Fatalf("POST /v1/context: %d %s", r.status, r.body)
	}
	decode(t, r, &viaHTTP)

	m := startMCP(t, dir)
	b, _ := json.Marshal(m.mustCall("get_context", map[string]any{"query": query, "systemPromptTokens": sysTokens}))
	if err := json.Unmarshal(b, &viaMCP); err != nil {
		t.Fatal(err)
	}

	out, stderr, code := runAsMain(t, "", "--dir", dir, "context", "--json", "--system-prompt-tokens", strconv.Itoa(sysTokens), "--", query)
	if code != 0 {
		t.Fatalf("ragmem context: %s%s", out, stderr)
	}
	if err := json.Unmarshal([]byte(out), &viaCLI); err != nil {
		t.Fatalf("ragmem context --json: %v\n%s", err, out)
	}

	// The window of no model: rag.ContextLimitForModel(""), less the
	// default response reserve, the system prompt and the query.
	want := rag.ContextLimitForModel("") - 1024 - sysTokens - viaHTTP.Tokens.UserQuery
	if viaHTTP.Budgets.TotalAvailable != want || viaHTTP.Tokens.UserQuery == 0 || viaHTTP.Found == 0 {
		t.Errorf("POST /v1/context: %+v, want %d tokens available", viaHTTP, want)
	}
	if !reflect.DeepEqual(viaMCP, viaHTTP) {
		t.Errorf("get_context: %+v, POST /v1/context %+v", viaMCP, viaHTTP)
	}
	if !reflect.DeepEqual(viaCLI, viaHTTP) {
		t.Errorf("ragmem context --json: %+v, POST /v1/context %+v", viaCLI, viaHTTP)
	}
}

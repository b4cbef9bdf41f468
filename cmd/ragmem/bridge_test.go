package main

import (
	"bufio"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestBridgeSurvivesMalformedLines: a line on stdin that is not JSON, or
// not JSON-RPC, is answered with a JSON-RPC error by ragmem mcp's bridge,
// and the session goes on (an initialize after them is answered by the
// owner's MCP server).
func TestBridgeSurvivesMalformedLines(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	dir := t.TempDir()
	stopOwnerAtEnd(t, dir) // the background owner ragmem mcp starts
	cmd := exec.Command(os.Args[0], "--dir", dir, "mcp")
	cmd.Env = append(os.Environ(), "RAGMEM_TEST_AS_MAIN=1", "RAGMEM_EMBEDDER=lexical")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr lockedBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		stdin.Close()
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			<-done
			t.Error("ragmem mcp did not exit after stdin closed")
		}
	}()
	lines := make(chan string, 16)
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	next := func(what string) string {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("%s: stdout closed\n%s", what, stderr.String())
			}
			return l
		case <-time.After(60 * time.Second):
			t.Fatalf("%s: no answer\n%s", what, stderr.String())
		}
		return ""
	}
	send := func(s string) {
		if _, err := io.WriteString(stdin, s+"\n"); err != nil {
			t.Fatal(err)
		}
	}
	send("this is not json")
	if l := next("a line that is not JSON"); !strings.Contains(l, `"code":-32700`) {
		t.Fatalf("a line that is not JSON: %s", l)
	}
	send(`{"hello":"world"}`)
	if l := next("JSON that is not JSON-RPC"); !strings.Contains(l, `"code":-32600`) {
		t.Fatalf("JSON that is not JSON-RPC: %s", l)
	}
	send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	if l := next("initialize"); !strings.Contains(l, `"id":1`) || !strings.Contains(l, `"result"`) || !strings.Contains(l, "ragmem") {
		t.Fatalf("initialize after malformed lines: %s", l)
	}
}

package mcpserver

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// StdioTransport is MCP's stdio transport (newline-delimited JSON-RPC
// messages) made to survive malformed input: a line that is not one valid
// JSON value of valid UTF-8, or is longer than MaxLineBytes, is answered
// with a JSON-RPC parse error (code -32700, id null) and skipped, and one
// that is JSON but not a JSON-RPC message (or a batch, which the protocol
// versions since 2025-06-18 do not allow) with an invalid-request error
// (-32600); the session goes on. The go-sdk's mcp.StdioTransport ends the
// session at the first such line, which ends `ragmem mcp` and every call
// the agent has in flight. Blank lines are skipped. A zero value reads
// os.Stdin and writes os.Stdout.
//
// A StdioTransport is a plain value, connected once; like the go-sdk's, its reading
// goroutine ends when Reader reaches its end or the session is closed and
// Reader returns.
type StdioTransport struct {
	Reader io.Reader // default os.Stdin
	Writer io.Writer // default os.Stdout
	// MaxLineBytes is the longest message accepted. Default
	// mcp.DefaultMaxLineLength (16 MiB).
	MaxLineBytes int
}

// Connect implements mcp.Transport.
func (t *StdioTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	in, out, max := t.Reader, t.Writer, t.MaxLineBytes
	if in == nil {
		in = os.Stdin
	}
	if out == nil {
		out = os.Stdout
	}
	if max <= 0 {
		max = mcp.DefaultMaxLineLength
	}
	w := &lockedWriter{w: out}
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(filterLines(in, pw, w, max)) }()
	return (&mcp.IOTransport{Reader: pr, Writer: w, MaxLineLength: max + 1}).Connect(ctx)
}

// filterLines copies the well-formed lines of in to good and answers the
// others on reply, until in ends (nil) or good is closed.
func filterLines(in io.Reader, good io.Writer, reply io.Writer, max int) error {
	r := bufio.NewReaderSize(in, 64<<10)
	var line []byte
	var v validator
	for {
		chunk, err := r.ReadSlice('\n')
		tooLong := false
		if len(line)+len(chunk) > max+2 { // the message, \r\n
			tooLong = true
			line = line[:0]
			for errors.Is(err, bufio.ErrBufferFull) { // drop the rest of the line
				_, err = r.ReadSlice('\n')
			}
		} else {
			line = append(line, chunk...)
			if errors.Is(err, bufio.ErrBufferFull) {
				continue
			}
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return err
		}
		msg := bytes.TrimSpace(line)
		switch {
		case tooLong:
			writeParseError(reply, fmt.Sprintf("the message is longer than %d bytes", max))
		case len(msg) == 0:
		case !utf8.Valid(msg):
			writeParseError(reply, "the message is not valid UTF-8")
		case !json.Valid(msg):
			writeParseError(reply, "the message is not one JSON value")
		case !v.valid(msg, reply):
		default:
			if _, werr := good.Write(append(msg, '\n')); werr != nil {
				return nil // the session is closed
			}
		}
		line = line[:0]
		if err != nil { // io.EOF
			return nil
		}
	}
}

// validator checks that a line of JSON is a JSON-RPC message the go-sdk
// reads without ending the session, and remembers the protocol version
// the client asked for (batches are allowed before 2025-06-18 only).
type validator struct{ version string }

// batchVersions are the protocol versions that allow batches.
var batchVersions = map[string]bool{"2024-11-05": true, "2025-03-26": true}

func (v *validator) valid(msg []byte, reply io.Writer) bool {
	if msg[0] != '[' {
		return v.one(msg, reply)
	}
	var batch []json.RawMessage
	if err := json.Unmarshal(msg, &batch); err != nil || len(batch) == 0 || !batchVersions[v.version] {
		writeError(reply, nil, -32600, "Invalid Request: a batch of messages is not allowed here (only single messages, or non-empty batches in protocol versions 2024-11-05 and 2025-03-26)")
		return false
	}
	for _, m := range batch {
		if !v.one(m, reply) {
			return false
		}
	}
	return true
}

func (v *validator) one(msg []byte, reply io.Writer) bool {
	m, err := jsonrpc.DecodeMessage(msg)
	if err != nil {
		var x struct{ ID any }
		_ = json.Unmarshal(msg, &x)
		if _, err := jsonrpc.MakeID(x.ID); err != nil {
			x.ID = nil
		}
		writeError(reply, x.ID, -32600, "Invalid Request: not a JSON-RPC 2.0 request, notification or response")
		return false
	}
	if r, ok := m.(*jsonrpc.Request); ok && r.Method == "initialize" {
		var p struct {
			ProtocolVersion string `json:"protocolVersion"`
		}
		_ = json.Unmarshal(r.Params, &p)
		v.version = p.ProtocolVersion
	}
	return true
}

// writeParseError answers a message that could not be read: JSON-RPC's
// parse error, with a null id as the message's id is unknown.
func writeParseError(w io.Writer, why string) { writeError(w, nil, -32700, "Parse error: "+why) }

// writeError writes a JSON-RPC error response.
func writeError(w io.Writer, id any, code int, msg string) {
	b, _ := json.Marshal(map[string]any{
		"jsonrpc": "2.0", "id": id,
		"error": map[string]any{"code": code, "message": msg},
	})
	_, _ = w.Write(append(b, '\n'))
}

// lockedWriter serialises the writes of the session and of the parse
// errors, each a whole line.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// Close implements io.Closer for mcp.IOTransport; stdout stays open.
func (l *lockedWriter) Close() error { return nil }

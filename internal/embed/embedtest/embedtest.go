// Package embedtest is an embedding server speaking the OpenAI protocol
// (POST /v1/embeddings) on a loopback port, for tests of what ragmem does
// when such a server works, fails or misbehaves. Its vectors are the
// offline lexical embedder's, so that search results are meaningful. It
// does no authentication.
package embedtest

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/ragmem/ragmem/internal/embed"
	"github.com/sashabaranov/go-openai"
)

// Mode is how the server behaves.
type Mode int32

const (
	Healthy      Mode = iota // vectors of Dim dimensions
	Unavailable              // 503 Service Unavailable
	WrongDim                 // vectors of Dim/2 dimensions: another model
	Refused                  // the listener is closed: connections are refused
	BadRequest               // 400 for every request (the server refuses the input)
	ServerErrors             // 500 Internal Server Error
	Hang                     // the request is read and never answered (until Close or another mode)
)

// Server is the embedding server. A *Server is safe for concurrent use.
type Server struct {
	Dim   int
	srv   *httptest.Server
	lex   embed.Embedder
	mode  atomic.Int32
	calls atomic.Int64

	mu     sync.Mutex
	closed bool
	wake   chan struct{} // closed (and replaced) when the mode changes or the server closes
}

// New starts a server with dim-dimensional vectors; the test stops it.
func New(t testing.TB, dim int) *Server {
	s := &Server{Dim: dim, lex: embed.NewLexical(&embed.LexicalOptions{Dimension: dim}), wake: make(chan struct{})}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.Close)
	return s
}

// BaseURL is the API root to give an OpenAI client ("http://127.0.0.1:N/v1").
func (s *Server) BaseURL() string { return s.srv.URL + "/v1" }

// Set switches the server's behaviour. Refused closes the listener for good
// (later modes answer nothing); use it last.
func (s *Server) Set(m Mode) {
	s.mode.Store(int32(m))
	s.mu.Lock()
	close(s.wake) // requests left hanging go on in the new mode
	s.wake = make(chan struct{})
	s.mu.Unlock()
	if m == Refused {
		s.mu.Lock()
		if !s.closed {
			s.closed = true
			s.srv.Listener.Close()
			s.srv.CloseClientConnections()
		}
		s.mu.Unlock()
	}
}

// Calls returns how many requests reached the server.
func (s *Server) Calls() int64 { return s.calls.Load() }

// Close stops the server.
func (s *Server) Close() {
	s.mu.Lock()
	closed := s.closed
	s.closed = true
	close(s.wake)
	s.wake = make(chan struct{})
	s.mu.Unlock()
	if !closed {
		s.srv.Close()
	}
}

// Embedder returns an OpenAI-compatible client of the server with the
// given retries (-1: none).
func (s *Server) Embedder(t testing.TB, retries int) *embed.OpenAI {
	e, err := embed.NewOpenAI(embed.OpenAIOptions{Model: "test-embed", BaseURL: s.BaseURL(), Dimensions: s.Dim, MaxRetries: retries})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

type request struct {
	Input []string `json:"input"`
	Model string   `json:"model"`
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	s.calls.Add(1)
	if r.Method != http.MethodPost || r.URL.Path != "/v1/embeddings" {
		http.NotFound(w, r)
		return
	}
	var req request
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(w, `{"error":{"message":"bad json","type":"invalid_request_error"}}`, http.StatusBadRequest)
		return
	}
	for Mode(s.mode.Load()) == Hang {
		s.mu.Lock()
		wake, closed := s.wake, s.closed
		s.mu.Unlock()
		if closed {
			return
		}
		select {
		case <-wake:
		case <-r.Context().Done():
			return
		}
	}
	w.Header().Set("Content-Type", "application/json")
	switch Mode(s.mode.Load()) {
	case Unavailable:
		w.WriteHeader(http.StatusServiceUnavailable)
		w.Write([]byte(`{"error":{"message":"the model is loading","type":"server_error"}}`))
		return
	case ServerErrors:
		w.WriteHeader(http.StatusInternalServerError)
		w.Write([]byte(`{"error":{"message":"internal error","type":"server_error"}}`))
		return
	case BadRequest:
		w.WriteHeader(http.StatusBadRequest)
		w.Write([]byte(`{"error":{"message":"input is too long","type":"invalid_request_error"}}`))
		return
	}
	vecs, err := s.lex.Embed(context.Background(), req.Input)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	if Mode(s.mode.Load()) == WrongDim {
		for i := range vecs {
			vecs[i] = vecs[i][:s.Dim/2]
		}
	}
	out := openai.EmbeddingResponse{Object: "list", Model: openai.EmbeddingModel(req.Model)}
	for i, v := range vecs {
		out.Data = append(out.Data, openai.Embedding{Object: "embedding", Index: i, Embedding: v})
	}
	json.NewEncoder(w).Encode(out)
}

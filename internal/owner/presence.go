package owner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// Routes of the owner's API, served on its socket only.
const (
	StatusPath   = "/v1/owner"
	AttachPath   = "/v1/owner/attach"
	HandoverPath = "/v1/owner/handover"
)

// Attached is a long-lived client attached to an owner (a `ragmem mcp`
// bridge).
type Attached struct {
	PID   int       `json:"pid"`
	Kind  string    `json:"kind"`
	Since time.Time `json:"since"`
}

// Status answers GET /v1/owner.
type Status struct {
	Owner       Info       `json:"owner"`
	Dir         string     `json:"dir"`
	Clients     []Attached `json:"clients"`     // attached clients
	Connections int        `json:"connections"` // connections open on the socket, this one included
	Refused     int        `json:"refused"`     // connections refused: another user's process
	Leaving     bool       `json:"leaving,omitempty"`
	// Extra is what the owner adds (its store's embedder, its settings).
	Extra json.RawMessage `json:"extra,omitempty"`
}

// Presence tracks who uses an owner: the clients attached to it and the
// connections open on its socket. A background owner uses it to exit
// after a grace period without any. It is safe for concurrent use.
type Presence struct {
	ln *Listener

	mu       sync.Mutex
	next     int
	attached map[int]Attached
	leaving  chan struct{}
	left     bool
	reason   string // the last line attach streams say: "leaving" or "leaving handover"
}

// NewPresence tracks the clients of an owner listening on ln.
func NewPresence(ln *Listener) *Presence {
	return &Presence{ln: ln, attached: map[int]Attached{}, leaving: make(chan struct{})}
}

// Clients returns the attached clients, oldest first.
func (p *Presence) Clients() []Attached {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]Attached, 0, len(p.attached))
	for i := 0; i < p.next; i++ {
		if a, ok := p.attached[i]; ok {
			out = append(out, a)
		}
	}
	return out
}

// busy reports whether a client is attached or a connection is open.
func (p *Presence) busy() bool {
	p.mu.Lock()
	n := len(p.attached)
	p.mu.Unlock()
	return n > 0 || p.ln.Open() > 0
}

// Leave tells attached clients that the owner is leaving (their attach
// streams end with "leaving", or "leaving handover" when another process
// takes over), so that they find the next owner at once. It is safe to
// call more than once; the first call's handover counts.
func (p *Presence) Leave(handover bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.left {
		p.left = true
		p.reason = "leaving"
		if handover {
			p.reason = "leaving handover"
		}
		close(p.leaving)
	}
}

// Leaving reports whether Leave was called.
func (p *Presence) Leaving() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.left
}

// WaitIdle returns when no client has been attached and no connection open
// for grace, checking every poll (default grace/10, at most a second), or
// when ctx ends (with its error).
func (p *Presence) WaitIdle(ctx context.Context, grace, poll time.Duration) error {
	if poll <= 0 {
		poll = min(grace/10, time.Second)
		if poll <= 0 {
			poll = time.Millisecond
		}
	}
	t := time.NewTicker(poll)
	defer t.Stop()
	idleSince := time.Now()
	for {
		if p.busy() {
			idleSince = time.Now()
		} else if time.Since(idleSince) >= grace {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
}

// attachRenew is how long one attach stream lasts before the owner ends it
// with "renew" (well within any request timeout); the client attaches again.
const attachRenew = 30 * time.Second

// attachHeartbeat is how often an attach stream says it is alive.
const attachHeartbeat = 10 * time.Second

// Handler serves the owner's routes: GET StatusPath (status() with the
// presence filled in), GET AttachPath?pid=&kind= (a stream of lines, "ok"
// then "alive" every 10 s, ending with "renew" or "leaving", held while the
// client lives) and POST HandoverPath (handover(), which should make the
// owner leave; an error wrapping ErrHandoverRefused is answered 409). Mount
// it behind the server's authentication, on the socket only.
func (p *Presence) Handler(status func(*http.Request) Status, handover func() error) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+StatusPath, func(w http.ResponseWriter, r *http.Request) {
		st := status(r)
		st.Clients = p.Clients()
		st.Connections = p.ln.Open()
		st.Refused = p.ln.Refused()
		st.Leaving = p.Leaving()
		writeJSON(w, http.StatusOK, st)
	})
	mux.HandleFunc("GET "+AttachPath, p.attach)
	mux.HandleFunc("POST "+HandoverPath, func(w http.ResponseWriter, r *http.Request) {
		if err := handover(); err != nil {
			code := http.StatusInternalServerError
			if errors.Is(err, ErrHandoverRefused) {
				code = http.StatusConflict
			}
			writeJSON(w, code, map[string]any{"error": map[string]string{"code": "handover_refused", "message": err.Error()}})
			return
		}
		writeJSON(w, http.StatusAccepted, map[string]string{"status": "leaving"})
	})
	return mux
}

// ErrHandoverRefused: this owner does not hand over (`ragmem serve`).
var ErrHandoverRefused = errors.New("owner: this owner does not hand over")

func (p *Presence) attach(w http.ResponseWriter, r *http.Request) {
	pid, _ := strconv.Atoi(r.URL.Query().Get("pid"))
	kind := r.URL.Query().Get("kind")
	if len(kind) > 32 {
		kind = kind[:32]
	}
	rc := http.NewResponseController(w)
	_ = rc.SetWriteDeadline(time.Time{})
	p.mu.Lock()
	id := p.next
	p.next++
	p.attached[id] = Attached{PID: pid, Kind: kind, Since: timeNow().UTC()}
	leaving := p.leaving
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		delete(p.attached, id)
		p.mu.Unlock()
	}()
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	say := func(s string) bool {
		if _, err := fmt.Fprintln(w, s); err != nil {
			return false
		}
		return rc.Flush() == nil
	}
	if !say("ok") {
		return
	}
	end := time.Now().Add(attachRenew)
	if d, ok := r.Context().Deadline(); ok && time.Until(d) < attachRenew+time.Second {
		end = d.Add(-time.Second)
	}
	beat := time.NewTicker(attachHeartbeat)
	defer beat.Stop()
	renew := time.NewTimer(time.Until(end))
	defer renew.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case <-leaving:
			p.mu.Lock()
			reason := p.reason
			p.mu.Unlock()
			say(reason)
			return
		case <-renew.C:
			say("renew")
			return
		case <-beat.C:
			if !say("alive") {
				return
			}
		}
	}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status, b = http.StatusInternalServerError, []byte(`{"error":{"code":"internal","message":"response could not be encoded"}}`)
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}

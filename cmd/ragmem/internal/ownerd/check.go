package ownerd

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"

	"github.com/ragmem/ragmem/index"
	"github.com/ragmem/ragmem/internal/embed"
	"github.com/ragmem/ragmem/internal/index/engine"
	"github.com/ragmem/ragmem/internal/index/local"
	"github.com/ragmem/ragmem/internal/server"
	"github.com/ragmem/ragmem/rag"
)

// CheckReport is what check prints with --json.
type CheckReport struct {
	Dir         string          `json:"dir"`
	Records     int             `json:"records"`
	Sources     int             `json:"sources"`
	Sequence    uint64          `json:"sequence"`
	Embedder    string          `json:"embedder,omitempty"`
	QueuedPages int             `json:"queuedPages"`           // background pages waiting; the next open indexes them
	Interrupted int             `json:"interruptedPages"`      // of those, pages whose indexing the end of a process interrupted
	DeadLetters []index.Job     `json:"deadLetters,omitempty"` // pages given up on (ragmem jobs list, retry, drop): not an inconsistency
	Recovered   []string        `json:"recovered,omitempty"`   // what opening the store did (--repair)
	Repaired    []local.Problem `json:"repaired,omitempty"`
	Pending     []local.Problem `json:"recoveryPending,omitempty"` // what the next open applies by itself, losing nothing: not inconsistencies
	Problems    []local.Problem `json:"problems"`
	Consistent  bool            `json:"consistent"`
}

// CheckPath is the owner's route for a read-only check of its live store.
const CheckPath = "/v1/owner/check"

// LiveCheck checks the store an owner has open, without changing it: the
// same checks as a read-only open, on the live indexes (mutations wait
// while it runs). The queue is reported from memory.
func LiveCheck(ctx context.Context, dir string, eng *rag.Engine) (CheckReport, error) {
	rep := CheckReport{Dir: dir, Problems: []local.Problem{}}
	be, ok := eng.Store().Backend().(*local.Backend)
	if !ok {
		return rep, errors.New("check verifies the local store; this owner uses another backend")
	}
	probs, err := be.Check(ctx)
	if err != nil {
		return rep, err
	}
	rep.Sequence = be.Sequence()
	if v, ok, _ := be.Meta(ctx, "embedder"); ok {
		rep.Embedder = v
	}
	rep.Problems = append(rep.Problems, probs...)
	if err := engine.VerifyEmbedder(ctx, be, eng.Store().Embedder()); err != nil {
		rep.Problems = append(rep.Problems, local.Problem{Kind: "embedder", Msg: err.Error()})
	}
	rep.QueuedPages = eng.QueueStats().Depth
	if st, err := be.Stats(ctx); err == nil {
		rep.Records, rep.Sources = st.Records, st.Sources
	}
	rep.Consistent = len(rep.Problems) == 0
	return rep, nil
}

// serveCheck answers GET /v1/owner/check on the owner's socket.
func (r *Run) serveCheck(w http.ResponseWriter, req *http.Request) {
	eng, err := r.srv.Engine(req)
	if err != nil {
		server.WriteError(w, req, http.StatusServiceUnavailable, server.CodeUnavailable, err.Error())
		return
	}
	rep, err := LiveCheck(req.Context(), server.NamespaceDir(r.dir, server.Namespace(req)), eng)
	if err != nil {
		server.WriteError(w, req, http.StatusInternalServerError, server.CodeInternal, err.Error())
		return
	}
	writeJSON(w, rep)
}

// Check checks the local store in dir, which this process owns for the
// time of the check (no engine is open): read-only, or with repair after
// opening it for writing (which recovers it) and rebuilding what still
// disagrees with the stored records. embedderFor builds the embedder the
// store records, to verify it.
func Check(ctx context.Context, dir string, repair bool, embedderFor func(context.Context, *index.EmbedderRecord) (embed.Embedder, error)) (CheckReport, error) {
	be, err := local.Open(ctx, dir, &local.Options{Logger: slog.Default(), ReadOnly: !repair})
	if err != nil {
		return CheckReport{}, err
	}
	defer be.Close()
	rec, ok, err := engine.ReadEmbedderRecord(ctx, be)
	if err != nil {
		return CheckReport{}, err
	}
	if !ok {
		rec = nil
	}
	emb, err := embedderFor(ctx, rec)
	if err != nil {
		return CheckReport{}, err
	}
	rep := CheckReport{Dir: dir, Sequence: be.Sequence(), Problems: []local.Problem{}}
	if repair {
		rep.Recovered = be.Recovery().Problems
	}
	if v, ok, _ := be.Meta(ctx, "embedder"); ok {
		rep.Embedder = v
	}
	var embProblem *local.Problem
	if err := engine.VerifyEmbedder(ctx, be, emb); err != nil {
		embProblem = &local.Problem{Kind: "embedder", Msg: err.Error()}
	}
	if repair {
		fixed, remaining, err := be.Repair(ctx)
		if err != nil {
			return CheckReport{}, fmt.Errorf("repair: %w", err)
		}
		rep.Repaired = fixed
		rep.Problems = append(rep.Problems, remaining...)
	} else {
		probs, err := be.Check(ctx)
		if err != nil {
			return CheckReport{}, err
		}
		rep.Problems = append(rep.Problems, probs...)
	}
	if embProblem != nil {
		rep.Problems = append(rep.Problems, *embProblem)
	}
	qc, err := engine.CheckQueue(ctx, dir, repair)
	if err != nil {
		return CheckReport{}, err
	}
	rep.QueuedPages, rep.Interrupted, rep.DeadLetters = qc.Pending, qc.Interrupted, qc.Dead
	rep.Recovered = append(rep.Recovered, qc.Repaired...)
	for _, p := range qc.Problems {
		rep.Problems = append(rep.Problems, local.Problem{Kind: "queue", Msg: p})
	}
	for _, p := range qc.Recovery {
		rep.Problems = append(rep.Problems, local.Problem{Kind: "queue-tail", Msg: p})
	}
	// A store a crash left with work for its next open (an unfinished
	// write to cut, journal operations to apply to the full-text index)
	// has lost nothing: that is recovery pending, not an inconsistency.
	kept := rep.Problems[:0]
	for _, p := range rep.Problems {
		if p.Pending() || p.Kind == "queue-tail" {
			rep.Pending = append(rep.Pending, p)
		} else {
			kept = append(kept, p)
		}
	}
	rep.Problems = kept
	if st, err := be.Stats(ctx); err == nil {
		rep.Records, rep.Sources = st.Records, st.Sources
	}
	rep.Consistent = len(rep.Problems) == 0
	return rep, nil
}

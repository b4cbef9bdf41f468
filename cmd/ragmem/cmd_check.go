package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/ragmem/ragmem/index"
	"github.com/ragmem/ragmem/internal/index/engine"
	"github.com/ragmem/ragmem/internal/index/local"
	"github.com/ragmem/ragmem/internal/owner"
	"github.com/ragmem/ragmem/internal/server"
	"github.com/ragmem/ragmem/rag"
)

func newCheckCmd(g *globals) *cobra.Command {
	var repair, asJSON bool
	cmd := &cobra.Command{
		Use:   "check",
		Short: "Verify the store; --repair fixes what it can",
		Long: "Verify the store without changing it: every chunk is in both the vector and the full-text\n" +
			"index with the same source and content hash, no index holds anything else, every source's\n" +
			"chunks come from one version of it, the embedder matches the one that built the store, and\n" +
			"the journal is clean (no unfinished write, no damaged file, nothing waiting to be applied),\n" +
			"and so is the background indexing queue. Pages given up on (the dead letters of the queue)\n" +
			"are listed; they are not an inconsistency.\n\n" +
			"A store that a crash left with recovery to do (an unfinished write to cut, journal operations\n" +
			"to apply to the full-text index) has lost nothing: that is reported as recovery pending, which\n" +
			"the next open of the store applies, and is not an inconsistency.\n\n" +
			"Exit status: 0 when the store is consistent (recovery pending included), 1 when it is not\n" +
			"(each problem is listed),\n" +
			"2 when it cannot be checked (for example while another ragmem process uses it).\n\n" +
			"--repair opens the store normally, which recovers it (cuts unfinished writes, quarantines\n" +
			"damaged files, brings the full-text index forward), then rebuilds whatever still disagrees\n" +
			"with the stored records, and checks again.",
		Example: "  ragmem check\n  ragmem check --repair",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runCheck(cmd.Context(), g, repair, asJSON)
		},
	}
	cmd.Flags().BoolVar(&repair, "repair", false, "repair what can be repaired, then check again")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

// checkReport is what check prints with --json.
type checkReport struct {
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

// checkPath is the owner's route for a read-only check of its live store.
const checkPath = "/v1/owner/check"

func runCheck(ctx context.Context, g *globals, repair, asJSON bool) error {
	dir, err := g.dataDir()
	if err != nil {
		return exitError{2, err.Error()}
	}
	// The store of the command's namespace; the ownership is the data
	// directory's.
	store := g.storeDir(dir)
	if _, err := os.Stat(store); errors.Is(err, fs.ErrNotExist) {
		return exitError{2, fmt.Sprintf("no store at %s (set --dir or $RAGMEM_DIR)", store)}
	}
	if m, _ := filepath.Glob(filepath.Join(store, "journal-*.rgj")); len(m) == 0 {
		if s, _ := filepath.Glob(filepath.Join(store, "snap-*.rgs")); len(s) == 0 {
			return exitError{2, fmt.Sprintf("no store at %s (set --dir or $RAGMEM_DIR)", store)}
		}
	}
	// With an owner running, its live store is checked through it; else
	// this process takes the ownership for the time of the check, so that
	// no other process opens the store meanwhile.
	info, claim, err := owner.Join(ctx, dir, nil)
	if err != nil {
		return exitError{2, err.Error()}
	}
	if claim == nil {
		if repair {
			return exitError{2, fmt.Sprintf("check --repair needs the store to itself, and pid %d (%s) is using it; stop it first (a check without --repair goes through it)",
				info.PID, describeKind(info.Kind, info.Command))}
		}
		c, err := owner.NewClient(dir, info, g.clientOptions())
		if err != nil {
			return exitError{2, err.Error()}
		}
		defer c.Close()
		var rep checkReport
		if err := c.Do(ctx, http.MethodGet, checkPath, nil, &rep, rag.DefaultWriteTimeout); err != nil {
			return exitError{2, err.Error()}
		}
		return reportCheck(g, &rep, repair, asJSON)
	}
	defer claim.Release()
	be, err := local.Open(ctx, store, &local.Options{Logger: slog.Default(), ReadOnly: !repair})
	if err != nil {
		return exitError{2, err.Error()}
	}
	defer be.Close()
	rec, ok, err := engine.ReadEmbedderRecord(ctx, be)
	if err != nil {
		return exitError{2, err.Error()}
	}
	if !ok {
		rec = nil
	}
	emb, err := g.embedderFor(ctx, rec)
	if err != nil {
		return exitError{2, err.Error()}
	}
	rep := checkReport{Dir: store, Sequence: be.Sequence(), Problems: []local.Problem{}}
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
			return exitError{2, "repair: " + err.Error()}
		}
		rep.Repaired = fixed
		rep.Problems = append(rep.Problems, remaining...)
	} else {
		probs, err := be.Check(ctx)
		if err != nil {
			return exitError{2, err.Error()}
		}
		rep.Problems = append(rep.Problems, probs...)
	}
	if embProblem != nil {
		rep.Problems = append(rep.Problems, *embProblem)
	}
	qc, err := engine.CheckQueue(ctx, store, repair)
	if err != nil {
		return exitError{2, err.Error()}
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
	return reportCheck(g, &rep, repair, asJSON)
}

// reportCheck prints a check's report and returns its exit status.
func reportCheck(g *globals, rep *checkReport, repair, asJSON bool) error {
	if asJSON {
		if err := writeJSON(g.stdout, rep); err != nil {
			return err
		}
	} else {
		printCheck(g, rep)
	}
	if !rep.Consistent {
		hint := " (ragmem check --repair fixes what it can)"
		if repair {
			hint = " that --repair could not fix"
		}
		return exitError{1, fmt.Sprintf("store is inconsistent: %d problem(s)%s", len(rep.Problems), hint)}
	}
	return nil
}

func printCheck(g *globals, rep *checkReport) {
	w := g.stdout
	fmt.Fprintf(w, "store      %s\n", rep.Dir)
	fmt.Fprintf(w, "contents   %d chunks in %d sources, journal at sequence %d\n", rep.Records, rep.Sources, rep.Sequence)
	if rep.Embedder != "" {
		fmt.Fprintf(w, "embedder   %s\n", rep.Embedder)
	}
	if rep.QueuedPages > 0 {
		fmt.Fprintf(w, "queue      %d pages waiting for background indexing (the next open indexes them)\n", rep.QueuedPages)
	}
	if rep.Interrupted > 0 {
		fmt.Fprintf(w, "queue      %d of them interrupted by the end of a process; each counts a failed attempt\n", rep.Interrupted)
	}
	for _, j := range rep.DeadLetters {
		fmt.Fprintf(w, "dead       %s %s: %s\n", j.ID, printable(j.SourceURL, 120), printable(j.Error, 200))
	}
	if len(rep.DeadLetters) > 0 {
		fmt.Fprintf(w, "dead       %d pages given up on: 'ragmem jobs retry ID' queues one again, 'ragmem jobs drop ID' deletes it\n", len(rep.DeadLetters))
	}
	for _, r := range rep.Recovered {
		fmt.Fprintf(w, "recovered  %s\n", r)
	}
	for _, p := range rep.Repaired {
		fmt.Fprintf(w, "repaired   %s\n", p)
	}
	for _, p := range rep.Pending {
		fmt.Fprintf(w, "pending    %s\n", p)
	}
	for _, p := range rep.Problems {
		fmt.Fprintf(w, "problem    %s\n", p)
	}
	switch {
	case rep.Consistent && len(rep.Pending) > 0:
		fmt.Fprintln(w, "consistent: recovery pending (applied on next open); nothing is lost")
	case rep.Consistent:
		fmt.Fprintln(w, "consistent")
	}
}

// liveCheck checks the store an owner has open, without changing it: the
// same checks as a read-only open, on the live indexes (mutations wait
// while it runs). The queue is reported from memory.
func liveCheck(ctx context.Context, dir string, eng *rag.Engine) (checkReport, error) {
	rep := checkReport{Dir: dir, Problems: []local.Problem{}}
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
func (r *ownerRun) serveCheck(w http.ResponseWriter, req *http.Request) {
	eng, err := r.srv.Engine(req)
	if err != nil {
		server.WriteError(w, req, http.StatusServiceUnavailable, server.CodeUnavailable, err.Error())
		return
	}
	rep, err := liveCheck(req.Context(), server.NamespaceDir(r.dir, server.Namespace(req)), eng)
	if err != nil {
		server.WriteError(w, req, http.StatusInternalServerError, server.CodeInternal, err.Error())
		return
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	_ = writeJSON(w, rep)
}

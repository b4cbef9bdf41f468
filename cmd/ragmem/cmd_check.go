package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/ragmem/ragmem/cmd/ragmem/internal/ownerd"
	"github.com/ragmem/ragmem/internal/owner"
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

func runCheck(ctx context.Context, g *globals, repair, asJSON bool) error {
	dir, err := g.DataDir()
	if err != nil {
		return exitError{2, err.Error()}
	}
	// The store of the command's namespace; the ownership is the data
	// directory's.
	store := g.StoreDir(dir)
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
				info.PID, ownerd.DescribeKind(info.Kind, info.Command))}
		}
		c, err := owner.NewClient(dir, info, g.ClientOptions())
		if err != nil {
			return exitError{2, err.Error()}
		}
		defer c.Close()
		var rep ownerd.CheckReport
		if err := c.Do(ctx, http.MethodGet, ownerd.CheckPath, nil, &rep, rag.DefaultWriteTimeout); err != nil {
			return exitError{2, err.Error()}
		}
		return reportCheck(g, &rep, repair, asJSON)
	}
	defer claim.Release()
	rep, err := ownerd.Check(ctx, store, repair, g.EmbedderFor)
	if err != nil {
		return exitError{2, err.Error()}
	}
	return reportCheck(g, &rep, repair, asJSON)
}

// reportCheck prints a check's report and returns its exit status.
func reportCheck(g *globals, rep *ownerd.CheckReport, repair, asJSON bool) error {
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

func printCheck(g *globals, rep *ownerd.CheckReport) {
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

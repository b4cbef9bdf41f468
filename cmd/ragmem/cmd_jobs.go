package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/ragmem/ragmem/index"
	"github.com/ragmem/ragmem/rag"
)

func newJobsCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "jobs",
		Short: "List, retry or drop background indexing jobs (the queue and its dead letters)",
		Long: "Pages queued for background indexing (by ragmem serve, or IndexPageAsync) wait in the data\n" +
			"directory's queue. A page whose indexing fails is tried again, up to 3 times, and a page that\n" +
			"cannot be indexed (too many chunks, no text, the quota full) or that keeps failing or stopping\n" +
			"the process is moved to the dead letters, where it stays until it is retried or dropped.\n" +
			"While ragmem serve holds the store, use its API instead: GET /v1/jobs, POST /v1/jobs/ID/retry,\n" +
			"DELETE /v1/jobs/ID.",
	}
	cmd.AddCommand(newJobsListCmd(g), newJobsRetryCmd(g), newJobsDropCmd(g))
	return cmd
}

func newJobsListCmd(g *globals) *cobra.Command {
	var asJSON bool
	var dead bool
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the pages waiting in the queue and the dead letters (without indexing anything)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			dir, err := g.dataDir()
			if err != nil {
				return err
			}
			qc, err := index.CheckQueue(cmd.Context(), dir, false)
			if err != nil {
				return queueError(err)
			}
			if dead {
				qc.PendingJobs = nil
			}
			if asJSON {
				type out struct {
					Pending []index.Job `json:"pending"`
					Dead    []index.Job `json:"dead"`
				}
				o := out{Pending: qc.PendingJobs, Dead: qc.Dead}
				if o.Pending == nil {
					o.Pending = []index.Job{}
				}
				if o.Dead == nil {
					o.Dead = []index.Job{}
				}
				return writeJSON(g.stdout, o)
			}
			w := g.stdout
			if len(qc.PendingJobs) == 0 && len(qc.Dead) == 0 {
				fmt.Fprintln(w, "no jobs waiting and no dead letters")
				return nil
			}
			for _, j := range qc.PendingJobs {
				state := "queued"
				if j.State == index.JobRunning {
					state = "interrupted"
				}
				fmt.Fprintf(w, "%-11s %s  %s  queued %s%s\n", state, j.ID, printable(j.SourceURL, 120), j.Queued.Local().Format(time.DateTime), attempts(j))
			}
			for _, j := range qc.Dead {
				fmt.Fprintf(w, "%-11s %s  %s  %s%s\n", "dead", j.ID, printable(j.SourceURL, 120), printable(j.Error, 200), attempts(j))
			}
			if len(qc.Dead) > 0 {
				fmt.Fprintln(w, "retry a dead letter with 'ragmem jobs retry ID', delete it with 'ragmem jobs drop ID'")
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	cmd.Flags().BoolVar(&dead, "dead", false, "list only the dead letters")
	return cmd
}

func attempts(j index.Job) string {
	if j.Attempts == 0 {
		return ""
	}
	return fmt.Sprintf(" (%d attempts)", j.Attempts)
}

// printable makes stored text safe to print on one line: control characters
// become spaces, and it is cut to n bytes.
func printable(s string, n int) string {
	s = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			return ' '
		}
		return r
	}, strings.ToValidUTF8(s, "?"))
	if len(s) > n {
		s = s[:n] + "…"
	}
	return s
}

// queueError explains a queue that another process holds.
func queueError(err error) error {
	if errors.Is(err, index.ErrQueueLocked) {
		return fmt.Errorf("%v: another ragmem process (ragmem serve?) is using this store; use its API (GET /v1/jobs) or stop it", err)
	}
	return err
}

func newJobsRetryCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "retry ID...",
		Short: "Queue dead-lettered pages again and index them now",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return g.withJobs(cmd.Context(), func(ctx context.Context, eng *rag.Engine) error {
				for _, id := range args {
					if _, err := eng.Store().RetryJob(ctx, id); err != nil {
						return jobError(id, err)
					}
				}
				if err := eng.Flush(ctx); err != nil {
					return err
				}
				failed := 0
				for _, id := range args {
					j, _ := eng.Job(id)
					switch j.State {
					case index.JobDone:
						fmt.Fprintf(g.stdout, "%s  indexed %s (%d chunks)\n", id, printable(j.SourceURL, 120), j.Chunks)
					case index.JobDead:
						failed++
						fmt.Fprintf(g.stdout, "%s  failed again: %s\n", id, printable(j.Error, 300))
					default:
						fmt.Fprintf(g.stdout, "%s  %s: %s (tried again later)\n", id, j.State, printable(j.Error, 300))
					}
				}
				if failed > 0 {
					return exitError{1, fmt.Sprintf("%d of %d pages failed again and are back in the dead letters", failed, len(args))}
				}
				return nil
			})
		},
	}
}

func newJobsDropCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "drop ID...",
		Short: "Delete dead-lettered pages for good",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return g.withJobs(cmd.Context(), func(ctx context.Context, eng *rag.Engine) error {
				for _, id := range args {
					if err := eng.Store().DropJob(ctx, id); err != nil {
						return jobError(id, err)
					}
					fmt.Fprintf(g.stdout, "%s  dropped\n", id)
				}
				return nil
			})
		},
	}
}

func jobError(id string, err error) error {
	if errors.Is(err, index.ErrNoJob) {
		return fmt.Errorf("no dead letter %q ('ragmem jobs list --dead' shows them)", printable(id, 80))
	}
	return err
}

// withJobs opens the store for a jobs command, explaining a lock held by
// another process.
func (g *globals) withJobs(ctx context.Context, fn func(context.Context, *rag.Engine) error) error {
	err := g.withEngine(ctx, func(eng *rag.Engine) error { return fn(ctx, eng) })
	if err != nil && strings.Contains(err.Error(), "locked") {
		return fmt.Errorf("%v; while ragmem serve runs, use its API (POST /v1/jobs/ID/retry, DELETE /v1/jobs/ID)", err)
	}
	return err
}

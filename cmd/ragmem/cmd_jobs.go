package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/ragmem/ragmem/index"
	"github.com/ragmem/ragmem/internal/index/engine"
	"github.com/ragmem/ragmem/internal/owner"
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
			"While another process owns the store (ragmem serve, a background owner), these commands go\n" +
			"through it: the jobs listed are its live queue.",
	}
	cmd.AddCommand(newJobsListCmd(g), newJobsRetryCmd(g), newJobsDropCmd(g))
	return cmd
}

func newJobsListCmd(g *globals) *cobra.Command {
	var asJSON bool
	var dead bool
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the pages waiting in the queue, the dead letters and the jobs cancelled by deleting their page (without indexing anything)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			qc, err := g.queueJobs(cmd.Context())
			if err != nil {
				return err
			}
			if dead {
				qc.PendingJobs, qc.Cancelled = nil, nil
			}
			if asJSON {
				type out struct {
					Pending   []index.Job `json:"pending"`
					Dead      []index.Job `json:"dead"`
					Cancelled []index.Job `json:"cancelled"`
				}
				o := out{Pending: qc.PendingJobs, Dead: qc.Dead, Cancelled: qc.Cancelled}
				if o.Pending == nil {
					o.Pending = []index.Job{}
				}
				if o.Dead == nil {
					o.Dead = []index.Job{}
				}
				if o.Cancelled == nil {
					o.Cancelled = []index.Job{}
				}
				return writeJSON(g.stdout, o)
			}
			w := g.stdout
			if len(qc.PendingJobs) == 0 && len(qc.Dead) == 0 && len(qc.Cancelled) == 0 {
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
			for _, j := range qc.Cancelled {
				fmt.Fprintf(w, "%-11s %s  %s  %s\n", "cancelled", j.ID, printable(j.SourceURL, 120), printable(j.Error, 200))
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
	if errors.Is(err, rag.ErrQueueLocked) {
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
			return g.withStore(cmd.Context(), func(m rag.Memory) error {
				ctx := cmd.Context()
				jobs, err := retryJobs(ctx, m, args)
				if err != nil {
					return err
				}
				failed := 0
				for i, id := range args {
					j := jobs[i]
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
			return g.withStore(cmd.Context(), func(m rag.Memory) error {
				for _, id := range args {
					if err := dropJob(cmd.Context(), m, id); err != nil {
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
	if errors.Is(err, rag.ErrNoJob) {
		return fmt.Errorf("no dead letter %q ('ragmem jobs list --dead' shows them)", printable(id, 80))
	}
	return err
}

// queueJobs returns the jobs of the indexing queue: from the owner's live
// queue when a process owns the store (its pages waiting, most recent
// first, then its dead letters), else from the queue's log, read while
// this process holds the ownership.
func (g *globals) queueJobs(ctx context.Context) (engine.QueueCheck, error) {
	dir, err := g.DataDir()
	if err != nil {
		return engine.QueueCheck{}, err
	}
	info, claim, err := owner.Join(ctx, dir, nil)
	if err != nil {
		return engine.QueueCheck{}, err
	}
	if claim != nil {
		defer claim.Release()
		qc, err := engine.CheckQueue(ctx, g.StoreDir(dir), false)
		return qc, queueError(err)
	}
	c, err := owner.NewClient(dir, info, g.ClientOptions())
	if err != nil {
		return engine.QueueCheck{}, err
	}
	defer c.Close()
	resp, err := c.Jobs(ctx, rag.JobsRequest{States: []string{"queued", "running", "dead"}, Limit: 10000})
	if err != nil {
		return engine.QueueCheck{}, err
	}
	var qc engine.QueueCheck
	for i := range resp.Jobs {
		job := jobOf(&resp.Jobs[i])
		if job.State == index.JobDead {
			qc.Dead = append(qc.Dead, job)
		} else {
			qc.PendingJobs = append(qc.PendingJobs, job)
		}
	}
	slices.SortStableFunc(qc.PendingJobs, func(a, b index.Job) int { return a.Queued.Compare(b.Queued) }) // queue order
	qc.Pending = len(qc.PendingJobs)
	return qc, nil
}

// jobOf turns the API's job back into the index's.
func jobOf(j *rag.JobJSON) index.Job {
	return index.Job{ID: j.ID, SourceURL: j.URL, State: index.JobState(j.State), Chunks: j.Chunks, Unchanged: j.Unchanged,
		Error: j.Error, Attempts: j.Attempts, Queued: j.Queued, Finished: j.Finished, RetryAt: j.RetryAt}
}

// retryJobs queues dead letters again and waits until each is indexed or
// given up on again.
func retryJobs(ctx context.Context, m rag.Memory, ids []string) ([]index.Job, error) {
	for _, id := range ids {
		if _, err := m.RetryJob(ctx, id); err != nil {
			return nil, jobError(id, err)
		}
	}
	out := make([]index.Job, len(ids))
	for i, id := range ids {
		for delay := 10 * time.Millisecond; ; delay = min(2*delay, 500*time.Millisecond) {
			j, err := m.Job(ctx, id)
			if err != nil {
				return nil, err
			}
			out[i] = jobOf(j)
			if st := out[i].State; st != index.JobQueued && st != index.JobRunning {
				break
			}
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-time.After(delay):
			}
		}
	}
	return out, nil
}

// dropJob deletes a dead letter.
func dropJob(ctx context.Context, m rag.Memory, id string) error { return m.DropJob(ctx, id) }

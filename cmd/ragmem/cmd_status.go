package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/ragmem/ragmem/cmd/ragmem/internal/ownerd"
	"github.com/ragmem/ragmem/internal/owner"
	"github.com/ragmem/ragmem/rag"
)

// statusReport is what `ragmem status --json` prints.
type statusReport struct {
	Dir string `json:"dir"`
	// State is "running" (an owner answers), "starting" (a process holds
	// the store and does not answer yet), "stale" (an owner file whose
	// process is gone; the next command cleans it) or "none".
	State       string           `json:"state"`
	Owner       *owner.Info      `json:"owner,omitempty"`
	Clients     []owner.Attached `json:"clients,omitempty"`
	Connections int              `json:"connections,omitempty"`
	Refused     int              `json:"refused,omitempty"`
	Store       *ownerd.Extra    `json:"store,omitempty"`
	PID         int              `json:"pid,omitempty"` // the process holding the lock, for starting
	Note        string           `json:"note"`
}

func newStatusCmd(g *globals) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Say which process owns the data directory (pid, kind, since, clients)",
		Long: "One process owns a data directory's store: ragmem serve, the background owner ragmem mcp starts,\n" +
			"or a ragmem command that found no owner and opened the store itself. Every other ragmem process\n" +
			"on the directory is its client, over a socket in the directory. status says who owns it and who\n" +
			"uses it; it never opens the store.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			rep, err := g.ownerStatus(cmd.Context())
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(g.stdout, rep)
			}
			printStatus(g, rep)
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func (g *globals) ownerStatus(ctx context.Context) (*statusReport, error) {
	dir, err := g.DataDir()
	if err != nil {
		return nil, err
	}
	rep := &statusReport{Dir: dir}
	info, _, err := owner.Join(ctx, dir, &owner.JoinOptions{NoClaim: true})
	if err == nil {
		c, err := owner.NewClient(dir, info, nil)
		if err != nil {
			return nil, err
		}
		defer c.Close()
		st, err := c.Status(ctx)
		if err != nil {
			return nil, err
		}
		rep.State, rep.Owner, rep.Clients, rep.Connections, rep.Refused = "running", &st.Owner, st.Clients, st.Connections, st.Refused
		if len(st.Extra) > 0 {
			var ex ownerd.Extra
			if json.Unmarshal(st.Extra, &ex) == nil {
				rep.Store = &ex
			}
		}
		rep.Note = "every ragmem command on this directory goes through it"
		if st.Leaving {
			rep.Note = "it is leaving; the next command finds the next owner"
		}
		return rep, nil
	}
	if !errors.Is(err, owner.ErrNoOwner) {
		return nil, err
	}
	in, ierr := owner.ReadInfo(dir)
	holder := owner.LockHolder(dir)
	switch {
	case ierr == nil && !alive(in.PID):
		rep.State, rep.Owner = "stale", &in
		rep.Note = fmt.Sprintf("pid %d is gone; the next command cleans up after it", in.PID)
	case ierr == nil:
		rep.State, rep.Owner = "starting", &in
		rep.Note = fmt.Sprintf("pid %d owns the directory but does not answer on its socket", in.PID)
	case holder > 0 && alive(holder) && lockHeld(dir):
		rep.State, rep.PID = "starting", holder
		rep.Note = fmt.Sprintf("pid %d holds the store and is opening it", holder)
	default:
		rep.State = "none"
		rep.Note = "no process owns it; the next command opens the store itself"
	}
	return rep, nil
}

// lockHeld reports whether some process holds dir's owner lock, without
// taking it (only a process that means to own may take it); where that
// cannot be told, a live holder is taken to hold it.
func lockHeld(dir string) bool {
	held, known := owner.LockHeld(dir)
	return held || !known
}

// alive reports whether a process with pid exists.
func alive(pid int) bool {
	if pid <= 0 {
		return false
	}
	p, err := os.FindProcess(pid)
	if err != nil {
		return false
	}
	err = p.Signal(syscall.Signal(0))
	return err == nil || errors.Is(err, syscall.EPERM)
}

// describeHolder names the process that owns dir, for error messages.
func describeHolder(dir string) string {
	if in, err := owner.ReadInfo(dir); err == nil {
		return fmt.Sprintf("pid %d (%s)", in.PID, ownerd.DescribeKind(in.Kind, in.Command))
	}
	if pid := owner.LockHolder(dir); pid > 0 {
		return fmt.Sprintf("pid %d", pid)
	}
	return "another process"
}

func printStatus(g *globals, rep *statusReport) {
	w := g.stdout
	fmt.Fprintf(w, "data directory  %s\n", rep.Dir)
	switch rep.State {
	case "running":
		in := rep.Owner
		fmt.Fprintf(w, "owner           pid %d: %s, since %s (%s), version %s\n", in.PID, ownerd.DescribeKind(in.Kind, in.Command),
			in.Since.Local().Format("2006-01-02 15:04:05"), rag.RelativeTime(in.Since, time.Now()), in.Version)
		fmt.Fprintf(w, "socket          %s\n", in.Socket)
		if in.HTTP != "" {
			fmt.Fprintf(w, "http            %s\n", in.HTTP)
		}
		if rep.Store != nil {
			fmt.Fprintf(w, "store           %s backend, embedder %s\n", rep.Store.Backend, rep.Store.Embedder)
		}
		var cs []string
		for _, c := range rep.Clients {
			cs = append(cs, fmt.Sprintf("%s pid %d (since %s)", c.Kind, c.PID, c.Since.Local().Format("15:04:05")))
		}
		if len(cs) == 0 {
			fmt.Fprintf(w, "clients         none attached\n")
		} else {
			fmt.Fprintf(w, "clients         %d attached: %s\n", len(cs), strings.Join(cs, ", "))
		}
		fmt.Fprintf(w, "connections     %d open on the socket (this one included)\n", rep.Connections)
		if rep.Refused > 0 {
			fmt.Fprintf(w, "refused         %d connections from other users' processes\n", rep.Refused)
		}
	case "stale", "starting":
		if rep.Owner != nil {
			fmt.Fprintf(w, "owner           pid %d: %s, since %s\n", rep.Owner.PID, ownerd.DescribeKind(rep.Owner.Kind, rep.Owner.Command), rep.Owner.Since.Local().Format("2006-01-02 15:04:05"))
		}
	}
	fmt.Fprintf(w, "state           %s: %s\n", rep.State, rep.Note)
}

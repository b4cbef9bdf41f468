package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/ragmem/ragmem/index"
	"github.com/ragmem/ragmem/rag"
)

// rm --filter: remove every knowledge source a filter expression matches
// (rag.Engine.RemoveWhere), through the owner or in process.

const rmFilterHelp = "With --filter EXPR, remove every knowledge source with a chunk that matches the filter\n" +
	"expression (the syntax of search --filter: source, title, type, created and attributes; e.g.\n" +
	"'team = \"red\" and created < 2026-01-01'). --dry-run prints what would go and removes nothing;\n" +
	"the same command without it removes exactly that (each source whole, durably). Memories and\n" +
	"preferences that match are kept (they have their own commands); a filter that matches only them\n" +
	"is refused. A filter that matches every knowledge source needs --all (so does a dry run of it);\n" +
	"--all with no filter removes every knowledge source."

const rmFilterExample = "  ragmem rm --filter 'source starts with \"https://old.example/\"' --dry-run\n  ragmem rm --filter 'team = \"red\"'\n  ragmem rm --all --dry-run"

// rmFilterFlags are rm's flags for a removal by filter.
type rmFilterFlags struct {
	filter string
	all    bool
	dryRun bool
	asJSON bool
}

func (rf *rmFilterFlags) add(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringVar(&rf.filter, "filter", "", "remove every knowledge source that matches this filter expression (see ragmem search --help)")
	f.BoolVar(&rf.all, "all", false, "remove every knowledge source (with no --filter), or allow a --filter that matches them all")
	f.BoolVar(&rf.dryRun, "dry-run", false, "with --filter or --all: print what would be removed, remove nothing")
	f.BoolVar(&rf.asJSON, "json", false, "with --filter or --all: print JSON")
}

func (rf *rmFilterFlags) active() bool { return rf.filter != "" || rf.all }

// args checks rm's arguments: one source, or none with --filter or --all.
func (rf *rmFilterFlags) args(cmd *cobra.Command, args []string) error {
	if cmd.Flags().Changed("filter") && strings.TrimSpace(rf.filter) == "" {
		return errors.New("--filter is empty, which matches every source: use --all to remove them all")
	}
	if rf.active() {
		if len(args) > 0 {
			return errors.New("give a SOURCE_URL|PATH or --filter/--all, not both")
		}
		return nil
	}
	if rf.dryRun || rf.asJSON {
		return errors.New("--dry-run and --json go with --filter or --all")
	}
	return cobra.ExactArgs(1)(cmd, args)
}

// rmFilterJSON is what rm --filter --json prints.
type rmFilterJSON struct {
	DryRun  bool             `json:"dryRun"`
	Removed int              `json:"removed"`
	Chunks  int              `json:"chunks"`
	Kept    int              `json:"kept"`
	Sources []rag.SourceJSON `json:"sources"`
}

func runRmFilter(ctx context.Context, g *globals, rf *rmFilterFlags) error {
	var where *index.Expr
	if rf.filter != "" {
		var err error
		if where, err = index.ParseFilter(rf.filter); err != nil {
			return fmt.Errorf("--filter: %w", err)
		}
	}
	req := rag.DeleteSourcesRequest{All: rf.all, DryRun: rf.dryRun}
	if where != nil {
		req.Filter = where.String()
	}
	return g.withStore(ctx, func(m rag.Memory) error {
		r, err := m.DeleteSources(ctx, req)
		if errors.Is(err, rag.ErrMatchesAll) {
			return errors.New("the filter matches every knowledge source: add --all to remove them all")
		}
		if err != nil {
			return err
		}
		if rf.asJSON {
			return writeJSON(g.stdout, rmFilterJSON{DryRun: r.DryRun, Removed: r.Removed, Chunks: r.Chunks, Kept: r.Kept, Sources: r.Sources})
		}
		for _, s := range r.Sources {
			fmt.Fprintf(g.stdout, "%s\t%d chunks\n", s.URL, s.Chunks)
		}
		verb := "removed"
		if rf.dryRun {
			verb = "would remove"
		}
		fmt.Fprintf(g.stdout, "%s %d sources (%d chunks)", verb, r.Removed, r.Chunks)
		if r.Kept > 0 {
			fmt.Fprintf(g.stdout, "; kept %d memory or preference sources that match", r.Kept)
		}
		fmt.Fprintln(g.stdout)
		return nil
	})
}

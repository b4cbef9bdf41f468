package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/ragmem/ragmem/prefs"
	"github.com/ragmem/ragmem/rag"
)

func newPrefsCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "prefs",
		Short: "Manage the user's preferences (the profile included in every context)",
	}
	cmd.AddCommand(newPrefsListCmd(g), newPrefsAddCmd(g), newPrefsRmCmd(g), newPrefsClearCmd(g), newPrefsDetectCmd(g))
	return cmd
}

func newPrefsListCmd(g *globals) *cobra.Command {
	var asJSON bool
	list := &cobra.Command{
		Use:   "list",
		Short: "List preferences",
		Args:  cobra.NoArgs,
		RunE: g.onStore(func(ctx context.Context, m rag.Memory, _ []string) error {
			ps, err := m.Preferences(ctx)
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(g.stdout, ps)
			}
			if len(ps) == 0 {
				fmt.Fprintln(g.stdout, "no preferences")
			}
			for _, p := range ps {
				fmt.Fprintf(g.stdout, "%s  %-9s  %s\n", p.ID, p.Type, p.Content)
			}
			return nil
		}),
	}
	list.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return list
}

func newPrefsAddCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:     "add TYPE TEXT...",
		Short:   "Add a preference; TYPE is expertise, style, domain or custom",
		Example: "  ragmem prefs add expertise \"Senior Go developer, 10 years\"\n  ragmem prefs add style \"Concise answers with code\"",
		Args:    cobra.MinimumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			t, err := prefs.ParseType(args[0])
			if err != nil {
				return err
			}
			return g.withStore(cmd.Context(), func(m rag.Memory) error {
				p, err := m.AddPreference(cmd.Context(), rag.PreferenceRequest{Type: string(t), Content: strings.Join(args[1:], " ")})
				if err != nil {
					return err
				}
				fmt.Fprintf(g.stdout, "%s  %s  %s\n", p.ID, p.Type, p.Content)
				return nil
			})
		},
	}
}

func newPrefsRmCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "rm ID",
		Short: "Remove a preference",
		Args:  cobra.ExactArgs(1),
		RunE: g.onStore(func(ctx context.Context, m rag.Memory, args []string) error {
			err := m.RemovePreference(ctx, args[0])
			if errors.Is(err, rag.ErrNotFound) {
				return fmt.Errorf("no preference with id %q (see ragmem prefs list)", args[0])
			}
			if err != nil {
				return err
			}
			fmt.Fprintln(g.stdout, "removed", args[0])
			return nil
		}),
	}
}

func newPrefsClearCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "clear",
		Short: "Remove every preference",
		Args:  cobra.NoArgs,
		RunE: g.onStore(func(ctx context.Context, m rag.Memory, _ []string) error {
			n, err := m.ClearPreferences(ctx)
			if err != nil {
				return err
			}
			fmt.Fprintf(g.stdout, "removed %d preferences\n", n)
			return nil
		}),
	}
}

func newPrefsDetectCmd(g *globals) *cobra.Command {
	var save bool
	detect := &cobra.Command{
		Use:     "detect MESSAGE...",
		Short:   "Detect the preference statements in a chat message (and store them with --save)",
		Example: "  ragmem prefs detect \"I'm a data scientist, explain like I'm new to Go\"",
		Args:    cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			msg := strings.Join(args, " ")
			ins := prefs.DetectPreferenceIntents(msg)
			if len(ins) == 0 {
				fmt.Fprintln(g.stdout, "no preference detected")
				return nil
			}
			for _, in := range ins {
				fmt.Fprintf(g.stdout, "%s: %s\n", in.Type, in.Content)
			}
			if !save {
				return nil
			}
			return g.withStore(cmd.Context(), func(m rag.Memory) error {
				d, err := m.DetectPreferences(cmd.Context(), rag.DetectRequest{Message: msg, Save: true})
				if err != nil {
					return err
				}
				for _, p := range d.SavedAll {
					fmt.Fprintln(g.stdout, "saved", p.ID)
				}
				return nil
			})
		},
	}
	detect.Flags().BoolVar(&save, "save", false, "store the detected preference")
	return detect
}

package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/ragmem/ragmem/index"
	"github.com/ragmem/ragmem/rag"
)

func newAttrsCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "attrs",
		Short: "Change the attributes of an indexed source without indexing it again",
	}
	var unset []string
	set := &cobra.Command{
		Use:   "set SOURCE_URL|PATH [key=value ...]",
		Short: "Set (key=value) or remove (--unset key) attributes of a source, without embedding it again",
		Long: "Set attributes on every chunk of a source: key=value adds or replaces a key, --unset KEY removes\n" +
			"one. Nothing is embedded again: the chunks keep their text and vectors. Search filters\n" +
			"(--filter) and `ragmem rm --filter` see the new values at once. Indexing the same document\n" +
			"again keeps them; a changed document brings its own. Memories and preferences have their own\n" +
			"commands and are refused here.",
		Example: "  ragmem attrs set notes/todo.md team=red status=done\n  ragmem attrs set https://example.com/page --unset draft",
		Args:    cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			kv, err := index.ParseAttrs(args[1:])
			if err != nil {
				return err
			}
			if len(kv) == 0 && len(unset) == 0 {
				return errors.New("nothing to change: give key=value pairs or --unset KEY")
			}
			u, dir := sourceArg(args[0])
			if dir {
				return fmt.Errorf("%s is a folder: attrs set changes one source (rm --filter works on many)", args[0])
			}
			patch := map[string]*string{}
			for k, v := range kv {
				patch[k] = &v
			}
			for _, k := range unset {
				if _, ok := patch[k]; ok {
					return fmt.Errorf("%q is both set and --unset", k)
				}
				patch[k] = nil
			}
			return g.withStore(ctx, func(m rag.Memory) error {
				res, err := m.SetSourceAttrs(ctx, u, rag.SetAttrsRequest{Attrs: patch})
				if errors.Is(err, rag.ErrNotFound) {
					return fmt.Errorf("no source %q in the memory (see ragmem sources)", args[0])
				}
				if err != nil {
					return err
				}
				n := res.Changed
				fmt.Fprintf(g.stdout, "%s: attributes of %d chunks changed\n", args[0], n)
				return nil
			})
		},
	}
	set.Flags().StringSliceVar(&unset, "unset", nil, "remove this attribute (repeatable)")
	cmd.AddCommand(set)
	return cmd
}

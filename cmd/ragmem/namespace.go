package main

import (
	"fmt"
	"net/http"

	"github.com/spf13/cobra"

	"github.com/ragmem/ragmem/cmd/ragmem/internal/ownerd"
	"github.com/ragmem/ragmem/cmd/ragmem/internal/settings"
	"github.com/ragmem/ragmem/internal/server"
	"github.com/ragmem/ragmem/rag"
)

// annotNoNamespace marks the commands that refuse --namespace (see
// settings.ResolveNamespace).
const annotNoNamespace = settings.AnnotNoNamespace

func newNamespacesCmd(g *globals) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "namespaces",
		Short: "List the namespaces of the data directory with their counts",
		Long: "List the namespaces: the default one (the data directory's own store) and every store in\n" +
			"<dir>/namespaces, with their knowledge sources, chunks, memories and preferences. Any command\n" +
			"takes --namespace NAME (or $RAGMEM_NAMESPACE) to work on one; over HTTP the main token picks\n" +
			"one with the " + server.NamespaceHeader + " header, and other tokens are bound to one.",
		Args:        cobra.NoArgs,
		Annotations: map[string]string{annotNoNamespace: "it lists them all"},
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			var list []ownerd.NamespaceInfo
			err := g.withStore(ctx, func(m rag.Memory) error {
				s := m.(*ownerd.Store)
				if run := s.Owning(); run != nil {
					var err error
					list, err = ownerd.ListNamespaces(ctx, run.Server(), s.Dir())
					return err
				}
				return s.Client().Do(ctx, http.MethodGet, ownerd.NamespacesPath, nil, &list, rag.DefaultWriteTimeout)
			})
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(g.stdout, list)
			}
			fmt.Fprintf(g.stdout, "%-24s %8s %8s %8s %11s\n", "NAMESPACE", "SOURCES", "CHUNKS", "MEMORIES", "PREFERENCES")
			for _, n := range list {
				name := n.Name
				if name == "" {
					name = "(default)"
				}
				fmt.Fprintf(g.stdout, "%-24s %8d %8d %8d %11d\n", name, n.Sources, n.Chunks, n.Memories, n.Preferences)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

// noNamespace names the commands that refuse --namespace, and why.
var noNamespace = map[string]string{
	"serve":   "it serves every namespace; a request picks one with " + server.NamespaceHeader + " or its token",
	"token":   "token rotate and show take their own --namespace",
	"config":  "the config file is the same for every namespace",
	"status":  "the owner serves every namespace",
	"migrate": "it moves the default namespace's store",
	"model":   "models are shared",
	"bench":   "it measures on a store of its own",
	"eval":    "it evaluates on a store of its own",
	"version": "",
}

// markNoNamespace annotates root's commands of noNamespace.
func markNoNamespace(root *cobra.Command) {
	for _, c := range root.Commands() {
		if why, ok := noNamespace[c.Name()]; ok {
			if why == "" {
				why = "it has no store"
			}
			if c.Annotations == nil {
				c.Annotations = map[string]string{}
			}
			c.Annotations[annotNoNamespace] = why
		}
	}
}

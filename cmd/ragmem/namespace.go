package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sort"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/ragmem/ragmem/internal/memory"
	"github.com/ragmem/ragmem/internal/owner"
	"github.com/ragmem/ragmem/internal/server"
	"github.com/ragmem/ragmem/rag"
)

// Namespaces on the command line. A namespace is its own store in
// <data dir>/namespaces/<name> (server.NamespaceDir), as over HTTP; the
// data directory's owner (one process, see owner.go) serves them all. A
// command run with --namespace NS (or $RAGMEM_NAMESPACE) reaches NS's
// store: through the owner's socket with the namespace header when
// another process owns the data directory, or through this process's own
// server (server.Server.AcquireNamespace) when it owns it. Names follow
// the HTTP API's rule (server.CheckNamespace).

// annotNoNamespace marks commands that do not work on one namespace's
// store (serve serves them all, token and config are about the data
// directory): --namespace is refused there, $RAGMEM_NAMESPACE ignored.
const annotNoNamespace = "ragmem/no-namespace"

// addNamespaceFlag defines --namespace on the root's persistent flags.
func addNamespaceFlag(pf *pflag.FlagSet, g *globals) {
	pf.StringVar(&g.namespace, "namespace", "", "the namespace to use (default $RAGMEM_NAMESPACE, else the default namespace): its own store in <dir>/namespaces/NAME, the one HTTP's "+server.NamespaceHeader+" header names")
}

// resolveNamespace sets g.namespace from --namespace, else
// $RAGMEM_NAMESPACE, and checks it.
func (g *globals) resolveNamespace(cmd *cobra.Command) error {
	f := cmd.Flags().Lookup("namespace")
	if f == nil {
		return nil
	}
	if !isPersistentNamespace(cmd, f) {
		return nil // a command's own --namespace (token rotate/show)
	}
	for c := cmd; c != nil; c = c.Parent() {
		if c.Annotations[annotNoNamespace] != "" {
			if f.Changed {
				return fmt.Errorf("--namespace: %s works on the data directory, not on one namespace (%s)", cmd.CommandPath(), c.Annotations[annotNoNamespace])
			}
			g.namespace = ""
			return nil
		}
	}
	if !f.Changed {
		g.namespace = os.Getenv("RAGMEM_NAMESPACE")
	}
	if g.namespace == "" {
		return nil
	}
	if err := server.CheckNamespace(g.namespace); err != nil {
		src := "--namespace"
		if !f.Changed {
			src = "$RAGMEM_NAMESPACE"
		}
		return fmt.Errorf("%s: %w", src, err)
	}
	return nil
}

// isPersistentNamespace reports whether f is the root's --namespace (and
// not a subcommand's own flag of that name).
func isPersistentNamespace(cmd *cobra.Command, f *pflag.Flag) bool {
	return cmd.Root().PersistentFlags().Lookup("namespace") == f
}

// storeDir is the directory of the command's namespace's store in the
// data directory dir.
func (g *globals) storeDir(dir string) string { return server.NamespaceDir(dir, g.namespace) }

// clientOptions are the options of a client of the data directory's
// owner: requests reach the command's namespace.
func (g *globals) clientOptions() *owner.ClientOptions {
	if g.namespace == "" {
		return nil
	}
	return &owner.ClientOptions{Namespace: g.namespace}
}

// DeleteSources is never retried once sent unless it is a dry run: a
// removal that may have been applied is reported as such.
func (s *ownedStore) DeleteSources(ctx context.Context, req rag.DeleteSourcesRequest) (out *rag.DeleteSourcesJSON, err error) {
	err = s.call(ctx, req.DryRun, "the removal", func(m rag.Memory) (err error) { out, err = m.DeleteSources(ctx, req); return err })
	return out, err
}

// SetSourceAttrs may be retried: setting the same attributes twice is
// setting them once.
func (s *ownedStore) SetSourceAttrs(ctx context.Context, u string, req rag.SetAttrsRequest) (out *rag.SetAttrsJSON, err error) {
	err = s.call(ctx, true, "", func(m rag.Memory) (err error) { out, err = m.SetSourceAttrs(ctx, u, req); return err })
	return out, err
}

// attachNamespace makes the store of this process's own server for the
// command's namespace the current one (the default namespace's engine is
// run.eng). s.mu is held.
func (s *ownedStore) attachNamespace(ctx context.Context, run *ownerRun) error {
	s.run = run
	if s.g.namespace == "" {
		s.cur, s.nsEng = run.eng, run.eng
		return nil
	}
	eng, release, err := run.srv.AcquireNamespace(ctx, s.g.namespace)
	if err != nil {
		s.run = nil
		return err
	}
	s.cur, s.nsEng, s.nsRelease = eng, eng, release
	return nil
}

// releaseNamespace lets go of the namespace's engine before this process
// stops owning. s.mu is held.
func (s *ownedStore) releaseNamespace() {
	if s.nsRelease != nil {
		s.nsRelease()
	}
	s.nsEng, s.nsRelease = nil, nil
}

// namespacesPath is the owner's route that lists the namespaces with their
// counts.
const namespacesPath = "/v1/owner/namespaces"

// NamespaceInfo is one namespace as `ragmem namespaces` lists it.
type NamespaceInfo struct {
	Name        string `json:"name"` // "" for the default namespace
	Dir         string `json:"dir"`
	Sources     int    `json:"sources"` // knowledge sources
	Chunks      int    `json:"chunks"`
	Memories    int    `json:"memories"`
	Preferences int    `json:"preferences"`
}

// listNamespaces lists the default namespace and every namespace with a
// store under dir/namespaces, with their counts, opening each through the
// owner's server (srv).
func listNamespaces(ctx context.Context, srv *server.Server, dir string) ([]NamespaceInfo, error) {
	names := []string{""}
	ents, err := os.ReadDir(filepath.Join(dir, "namespaces"))
	if err != nil && !os.IsNotExist(err) {
		return nil, err
	}
	for _, e := range ents {
		if e.IsDir() && server.CheckNamespace(e.Name()) == nil && rag.StoreExists(filepath.Join(dir, "namespaces", e.Name())) {
			names = append(names, e.Name())
		}
	}
	sort.Strings(names[1:])
	out := make([]NamespaceInfo, 0, len(names))
	for _, ns := range names {
		eng, release, err := srv.AcquireNamespace(ctx, ns)
		if err != nil {
			return nil, fmt.Errorf("namespace %q: %w", ns, err)
		}
		st, err := eng.Stats(ctx)
		release()
		if err != nil {
			return nil, fmt.Errorf("namespace %q: %w", ns, err)
		}
		out = append(out, NamespaceInfo{Name: ns, Dir: server.NamespaceDir(dir, ns), Sources: st.DocumentCount, Chunks: st.ChunkCount, Memories: st.MemoryCount, Preferences: st.PreferenceCount})
	}
	return out, nil
}

// serveNamespaces answers GET /v1/owner/namespaces (the owner's socket
// only).
func (r *ownerRun) serveNamespaces(w http.ResponseWriter, req *http.Request) {
	list, err := listNamespaces(req.Context(), r.srv, r.dir)
	if err != nil {
		r.srv.Fail(w, req, err)
		return
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	_ = writeJSON(w, list)
}

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
			var list []NamespaceInfo
			err := g.withStore(ctx, func(m rag.Memory) error {
				s := m.(*ownedStore)
				if run := s.owning(); run != nil {
					var err error
					list, err = listNamespaces(ctx, run.srv, s.dir)
					return err
				}
				return s.ownerClient().Do(ctx, http.MethodGet, namespacesPath, nil, &list, rag.DefaultWriteTimeout)
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

// namespaceMemories returns the agent memories of namespace ns over eng's
// index (eng is that namespace's engine): the same memory.Store the
// owner's API serves for a request with the namespace header.
func (r *ownerRun) namespaceMemories(ctx context.Context, ns string, eng *rag.Engine) (*memory.Store, error) {
	if ns == "" {
		return r.memoryStore(ctx)
	}
	return r.stores.Get(ctx, filepath.Join(server.NamespaceDir(r.dir, ns), "memories"), eng.Store())
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

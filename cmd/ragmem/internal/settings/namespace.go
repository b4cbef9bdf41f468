package settings

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/ragmem/ragmem/internal/server"
)

// Namespaces on the command line. A namespace is its own store in
// <data dir>/namespaces/<name> (server.NamespaceDir), as over HTTP; the
// data directory's owner serves them all. A command run with --namespace
// NS (or $RAGMEM_NAMESPACE) reaches NS's store. Names follow the HTTP
// API's rule (server.CheckNamespace).

// AnnotNoNamespace marks commands that do not work on one namespace's
// store (serve serves them all, token and config are about the data
// directory): --namespace is refused there, $RAGMEM_NAMESPACE ignored.
const AnnotNoNamespace = "ragmem/no-namespace"

// ResolveNamespace sets s.Namespace from --namespace, else
// $RAGMEM_NAMESPACE, and checks it.
func (s *Settings) ResolveNamespace(cmd *cobra.Command) error {
	f := cmd.Flags().Lookup("namespace")
	if f == nil {
		return nil
	}
	if !isPersistentNamespace(cmd, f) {
		return nil // a command's own --namespace (token rotate/show)
	}
	for c := cmd; c != nil; c = c.Parent() {
		if c.Annotations[AnnotNoNamespace] != "" {
			if f.Changed {
				return fmt.Errorf("--namespace: %s works on the data directory, not on one namespace (%s)", cmd.CommandPath(), c.Annotations[AnnotNoNamespace])
			}
			s.Namespace = ""
			return nil
		}
	}
	if !f.Changed {
		s.Namespace = os.Getenv("RAGMEM_NAMESPACE")
	}
	if s.Namespace == "" {
		return nil
	}
	if err := server.CheckNamespace(s.Namespace); err != nil {
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

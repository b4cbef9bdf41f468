// Command ragmem is the command-line interface of the ragmem memory engine:
// index files and folders, search them, print the knowledge-context message
// an agent would receive, and manage the user's preferences.
//
//	ragmem index docs/
//	ragmem search "how do I install on linux"
//	ragmem context --model gpt-4o "how do I install on linux"
//
// The data directory is --dir, else $RAGMEM_DIR, else the user data
// directory (~/.local/share/ragmem on Linux).
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/ragmem/ragmem/cmd/ragmem/internal/interrupt"
	"github.com/ragmem/ragmem/internal/sandbox"
)

func main() {
	// A child process reading one document (internal/docread) runs that
	// and exits here, before anything else.
	sandbox.Main()
	ctx, stop := interrupt.Notify(context.Background(), os.Stderr, os.Exit)
	defer stop()
	root := newRootCmd()
	err := root.ExecuteContext(ctx)
	if sig := interrupt.Caught(ctx); sig != nil && (errors.Is(err, context.Canceled) || errors.Is(err, interrupt.ErrInterrupted)) {
		// Ctrl-C or SIGTERM cut the command short: what was acknowledged
		// is written; say so and exit as a program stopped by that signal
		// does. (A command that stops on a signal as its way to end, such
		// as serve or index --watch, returns nil and exits 0.)
		fmt.Fprintf(os.Stderr, "ragmem: interrupted (%s)\n", sig.Name)
		stop()
		os.Exit(128 + sig.Number)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "ragmem: "+oneLine(err))
		var ee exitError
		if errors.As(err, &ee) {
			os.Exit(ee.code)
		}
		os.Exit(1)
	}
}

// exitError carries a specific exit status (e.g. 1 for "inconsistent" vs 2 for usage).
type exitError struct {
	code int
	msg  string
}

func (e exitError) Error() string { return e.msg }

func oneLine(err error) string {
	return strings.Join(strings.Fields(err.Error()), " ")
}

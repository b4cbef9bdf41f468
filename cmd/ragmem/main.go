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
	"os/signal"
	"strings"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	root := newRootCmd()
	if err := root.ExecuteContext(ctx); err != nil {
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

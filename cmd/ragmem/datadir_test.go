package main

import (
	"testing"

	"github.com/spf13/cobra"
)

// TestEveryCommandHasADirPolicy: each command that runs says what it needs
// of the data directory, so a new command cannot create one by mistake.
func TestEveryCommandHasADirPolicy(t *testing.T) {
	var walk func(c *cobra.Command)
	seen := map[string]bool{}
	walk = func(c *cobra.Command) {
		if c.Runnable() && c.HasParent() {
			p := c.CommandPath()
			seen[p] = true
			_, listed := dirPolicies[p]
			if listed == dirNoPolicy[p] {
				t.Errorf("%s: listed in dirPolicies %v and in dirNoPolicy %v; want exactly one", p, listed, dirNoPolicy[p])
			}
		}
		for _, s := range c.Commands() {
			walk(s)
		}
	}
	walk(newRootCmd())
	for p := range dirPolicies {
		if !seen[p] {
			t.Errorf("dirPolicies names %q, which is no command", p)
		}
	}
	for p := range dirNoPolicy {
		if !seen[p] {
			t.Errorf("dirNoPolicy names %q, which is no command", p)
		}
	}
}

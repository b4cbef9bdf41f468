package main

import (
	"strings"
	"testing"
)

// TestPrefsDetectEveryStatement: `ragmem prefs detect` prints, and with
// --save stores, every statement of a message.
func TestPrefsDetectEveryStatement(t *testing.T) {
	dir, docs := t.TempDir(), t.TempDir()
	writeFile(t, docs+"/a.md", "# A\n\nSomething to make a store.\n")
	mustRun(t, "--dir", dir, "index", docs)
	out := mustRun(t, "--dir", dir, "prefs", "detect", "--save", "I'm a data scientist, explain like I'm new to Go")
	if !strings.Contains(out, "expertise: User is a data scientist\nstyle: Explain like the user is new to Go\n") || strings.Count(out, "saved ") != 2 {
		t.Errorf("prefs detect:\n%s", out)
	}
	if list := mustRun(t, "--dir", dir, "prefs", "list"); !strings.Contains(list, "User is a data scientist") || !strings.Contains(list, "new to Go") {
		t.Errorf("prefs list:\n%s", list)
	}
}

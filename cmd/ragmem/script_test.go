package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"
)

// TestScripts runs the multi-step CLI scenarios of testdata/script/*.txtar
// (one alone: go test ./cmd/ragmem -run TestScripts/workflow),
// each in a work directory of its own ($WORK) with its own home, config
// home and data home, the proxies of the environment pointed at a closed
// loopback port (no network), and "exec ragmem" running this binary as
// the command (TestMain). capture NAME 'RE' sets $NAME to what RE's first
// group matched in the last command's stdout; dropmatch FILE 'RE' removes
// the lines of FILE that RE matches; perm PATH MODE checks PATH's
// permission bits (octal). $CORPUS is the sample corpus (internal/sample) and
// $EVALDATA the eval package's test data.
func TestScripts(t *testing.T) {
	corpus, err := filepath.Abs("../../internal/sample/corpus")
	if err != nil {
		t.Fatal(err)
	}
	evalData, err := filepath.Abs("../../internal/eval/testdata")
	if err != nil {
		t.Fatal(err)
	}
	testscript.Run(t, testscript.Params{
		Dir:                 "testdata/script",
		RequireExplicitExec: true,
		RequireUniqueNames:  true,
		Cmds:                map[string]func(*testscript.TestScript, bool, []string){"capture": scriptCapture, "dropmatch": scriptDropmatch, "perm": scriptPerm},
		Setup: func(e *testscript.Env) error {
			dataHome := filepath.Join(e.WorkDir, ".xdg-data")
			for k, v := range map[string]string{
				"HOME":            filepath.Join(e.WorkDir, ".home"),
				"XDG_CONFIG_HOME": filepath.Join(e.WorkDir, ".xdg-config"),
				"XDG_DATA_HOME":   dataHome,
				"HTTP_PROXY":      "http://127.0.0.1:9",
				"HTTPS_PROXY":     "http://127.0.0.1:9",
				"NO_PROXY":        "",
				"CORPUS":          corpus,
				"EVALDATA":        evalData,
			} {
				e.Setenv(k, v)
			}
			// A script names its store (--dir or $RAGMEM_DIR); one that
			// wrote the default data directory fails.
			e.Defer(func() {
				if left, _ := os.ReadDir(filepath.Join(dataHome, "ragmem")); len(left) > 0 {
					e.T().Fatal(fmt.Sprintf("the script wrote the default data directory %s", filepath.Join(dataHome, "ragmem")))
				}
			})
			return nil
		},
	})
}

// scriptCapture is the scripts' "capture NAME 'RE'": $NAME becomes the first
// group of RE's first match in the last command's stdout (RE in multi-line
// mode, as stdout's patterns are).
func scriptCapture(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: capture NAME 'regexp with one group'")
	}
	re, err := regexp.Compile("(?m)" + args[1])
	if err != nil {
		ts.Fatalf("capture: %v", err)
	}
	m := re.FindStringSubmatch(ts.ReadFile("stdout"))
	if len(m) < 2 {
		ts.Fatalf("capture: no match for %q in stdout", args[1])
	}
	ts.Setenv(args[0], m[1])
}

// scriptDropmatch is the scripts' "dropmatch FILE 'RE'": the lines of FILE that
// RE matches are removed (a search's "tookMs", before two searches are
// compared).
func scriptDropmatch(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: dropmatch FILE 'regexp'")
	}
	re, err := regexp.Compile(args[1])
	if err != nil {
		ts.Fatalf("dropmatch: %v", err)
	}
	var kept []string
	for _, line := range strings.SplitAfter(ts.ReadFile(args[0]), "\n") {
		if !re.MatchString(line) {
			kept = append(kept, line)
		}
	}
	ts.Check(os.WriteFile(ts.MkAbs(args[0]), []byte(strings.Join(kept, "")), 0o644))
}

// scriptPerm is the scripts' "perm PATH MODE": PATH's permission bits are MODE
// (octal, such as 0600); with !, they are not.
func scriptPerm(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 2 {
		ts.Fatalf("usage: perm PATH MODE")
	}
	want, err := strconv.ParseUint(args[1], 8, 32)
	if err != nil {
		ts.Fatalf("perm: mode %q: %v", args[1], err)
	}
	fi, err := os.Stat(ts.MkAbs(args[0]))
	ts.Check(err)
	if got := fi.Mode().Perm(); (got == os.FileMode(want)) == neg {
		ts.Fatalf("%s has mode %04o", args[0], got)
	}
}

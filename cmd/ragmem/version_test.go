package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"
)

// TestReadVersion: what each kind of build records becomes the version,
// commit and dates version prints.
func TestReadVersion(t *testing.T) {
	vcs := func(kv ...string) []debug.BuildSetting {
		var s []debug.BuildSetting
		for i := 0; i < len(kv); i += 2 {
			s = append(s, debug.BuildSetting{Key: kv[i], Value: kv[i+1]})
		}
		return s
	}
	for _, c := range []struct {
		name string
		bi   *debug.BuildInfo
		ok   bool
		want versionInfo
		text []string
	}{
		{"no build info", nil, false, versionInfo{Version: "unknown"}, []string{"ragmem unknown\n", "commit: unknown\n", "built:  unknown\n"}},
		{"checkout build", &debug.BuildInfo{GoVersion: "go1.99.1", Main: debug.Module{Version: "(devel)"},
			Settings: vcs("vcs", "git", "vcs.revision", "0123456789abcdef0123456789abcdef01234567", "vcs.time", "2026-05-01T10:00:00Z", "vcs.modified", "true")}, true,
			versionInfo{Version: "(devel)", Commit: "0123456789abcdef0123456789abcdef01234567", Modified: true, CommitTime: "2026-05-01T10:00:00Z", Go: "go1.99.1"},
			[]string{"ragmem (devel)\n", "commit: 0123456789abcdef0123456789abcdef01234567 (modified", "built:  unknown (commit of 2026-05-01T10:00:00Z)", "go:     go1.99.1 "}},
		{"release", &debug.BuildInfo{Main: debug.Module{Version: "v1.4.0"}}, true, versionInfo{Version: "v1.4.0"}, []string{"ragmem v1.4.0\n", "commit: unknown\n"}},
		{"pseudo-version", &debug.BuildInfo{Main: debug.Module{Version: "v0.0.0-20260501100000-0123456789ab"}}, true,
			versionInfo{Version: "v0.0.0-20260501100000-0123456789ab", Commit: "0123456789ab", CommitTime: "2026-05-01T10:00:00Z"}, []string{"commit: 0123456789ab\n"}},
		{"pseudo-version after a pre-release", &debug.BuildInfo{Main: debug.Module{Version: "v1.2.4-pre.0.20260501100000-0123456789ab+incompatible"}}, true,
			versionInfo{Version: "v1.2.4-pre.0.20260501100000-0123456789ab+incompatible", Commit: "0123456789ab", CommitTime: "2026-05-01T10:00:00Z"}, nil},
		{"dirty clone", &debug.BuildInfo{Main: debug.Module{Version: "v0.0.0-20260501100000-0123456789ab+dirty"}}, true,
			versionInfo{Version: "v0.0.0-20260501100000-0123456789ab+dirty", Commit: "0123456789ab", CommitTime: "2026-05-01T10:00:00Z"}, nil},
		{"a release is no pseudo-version", &debug.BuildInfo{Main: debug.Module{Version: "v1.2.3-rc.1"}}, true, versionInfo{Version: "v1.2.3-rc.1"}, nil},
	} {
		got := readVersion(c.bi, c.ok)
		c.want.Go, c.want.Platform = got.Go, got.Platform
		if c.bi != nil && c.bi.GoVersion != "" {
			c.want.Go = c.bi.GoVersion
		}
		if got != c.want {
			t.Errorf("%s: got %+v, want %+v", c.name, got, c.want)
		}
		for _, s := range c.text {
			if !strings.Contains(got.String(), s) {
				t.Errorf("%s: output lacks %q:\n%s", c.name, s, got)
			}
		}
	}
	old := buildDate
	buildDate = "2026-06-01T00:00:00Z"
	defer func() { buildDate = old }()
	if s := readVersion(nil, false).String(); !strings.Contains(s, "built:  2026-06-01T00:00:00Z\n") {
		t.Errorf("build date: %s", s)
	}
}

// TestVersionAndDemoFromAnyFolder builds the binary the way a user does
// (with VCS stamping) and runs it from an empty folder: `version` and
// `--version` print the commit the checkout is at, and `demo` indexes the
// built-in corpus.
func TestVersionAndDemoFromAnyFolder(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := filepath.Join(t.TempDir(), "ragmem")
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Env = append(os.Environ(), "GOFLAGS=-buildvcs=auto")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	work := t.TempDir()
	run := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(bin, args...)
		cmd.Dir = work
		cmd.Env = append(os.Environ(), "RAGMEM_DIR=", "XDG_DATA_HOME="+filepath.Join(work, "data"), "HOME="+work)
		out, err := cmd.Output()
		if err != nil {
			var stderr []byte
			if ee, ok := err.(*exec.ExitError); ok {
				stderr = ee.Stderr
			}
			t.Fatalf("ragmem %v: %v\n%s", args, err, stderr)
		}
		return string(out)
	}
	v, flag := run("version"), run("--version")
	var js versionInfo
	if err := json.Unmarshal([]byte(run("version", "--json")), &js); err != nil || js.Version == "" || js.Go == "" {
		t.Fatalf("version --json: %+v %v", js, err)
	}
	// A build in a clean clone carries the pseudo-version the go command
	// derives from the commit (Go 1.24 on); elsewhere it is "(devel)".
	if v != flag || !strings.HasPrefix(v, "ragmem "+js.Version+"\n") {
		t.Fatalf("version:\n%s\n--version:\n%s", v, flag)
	}
	// The go command stamps the commit when the module sits in a git
	// clone (not in a linked worktree, whose .git is a file).
	root, _ := filepath.Abs("../..")
	if st, err := os.Stat(filepath.Join(root, ".git")); err == nil && st.IsDir() {
		head, err := exec.Command("git", "-C", root, "rev-parse", "HEAD").Output()
		if err != nil {
			t.Skipf("git: %v", err)
		}
		h := strings.TrimSpace(string(head))
		if js.Commit != h || !strings.Contains(v, "commit: "+js.Commit) || js.CommitTime == "" {
			t.Fatalf("commit %q (%s), HEAD %s:\n%s", js.Commit, js.CommitTime, head, v)
		}
		if js.Version != "(devel)" && !strings.Contains(js.Version, h[:12]) {
			t.Fatalf("version %q names another commit than HEAD %s", js.Version, h)
		}
	} else if js.Commit != "" || !strings.Contains(v, "commit: unknown") {
		t.Fatalf("no .git directory, yet a commit: %+v", js)
	}

	out := run("demo")
	if !strings.Contains(out, "<knowledge_context>") || !strings.Contains(out, "/demo-corpus/hybrid-search.md") {
		t.Fatalf("demo from an empty folder:\n%s", out)
	}
	if entries, _ := os.ReadDir(work); len(entries) != 0 {
		t.Fatalf("demo left files in the working folder: %v", entries)
	}
	// With --dir, the store and the sample files stay.
	dir := filepath.Join(work, "store")
	run("--dir", dir, "demo", "--question", "How should I proof sourdough?")
	if _, err := os.Stat(filepath.Join(dir, "demo-corpus", "sourdough.txt")); err != nil {
		t.Fatal(err)
	}
	if s := run("--dir", dir, "search", "--json", "sourdough proofing"); !strings.Contains(s, "demo-corpus/sourdough.txt") {
		t.Fatalf("search of the demo store:\n%s", s)
	}
}

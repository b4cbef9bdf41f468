package pathless

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestMessage: paths of this machine (existing, or in an existing
// directory) are replaced wherever they sit in a message; URL paths, API
// routes and words are left alone.
func TestMessage(t *testing.T) {
	dir := t.TempDir()
	queue := filepath.Join(dir, "queue", "queue.log")
	if err := os.MkdirAll(filepath.Dir(queue), 0o700); err != nil {
		t.Fatal(err)
	}
	for in, want := range map[string]string{
		"write " + queue + ": no space left on device":          "write " + Placeholder + ": no space left on device",
		"open " + dir + "/missing.tmp: file exists":             "open " + Placeholder + ": file exists",
		`wal: append to closed log "` + queue + `"`:             `wal: append to closed log "` + Placeholder + `"`,
		"file://" + dir + "/memories/x.md holds a memory":       "file://" + Placeholder + " holds a memory",
		"(" + dir + ") and " + dir + ".":                        "(" + Placeholder + ") and " + Placeholder + ".",
		"memories are written with POST /v1/memories, not here": "memories are written with POST /v1/memories, not here",
		"see https://example.com" + dir + " for more":           "see https://example.com" + dir + " for more",
		"the path /nonexistent-root-dir/x/y is not here":        "the path /nonexistent-root-dir/x/y is not here",
		"gone: " + dir + "/a/b/c.tmp":                           "gone: " + Placeholder,
		"a/b and 1/2 are ratios":                                "a/b and 1/2 are ratios",
		"/":                                                     "/",
		"":                                                      "",
	} {
		if got := Message(in); got != want {
			t.Errorf("Message(%q)\n got  %q\n want %q", in, got, want)
		}
	}
	long := strings.Repeat("x", maxScan+100) + " " + queue
	if got := Message(long); len(got) > maxScan+4 || strings.Contains(got, queue) {
		t.Errorf("long message: %d bytes, path kept: %v", len(got), strings.Contains(got, queue))
	}
}

// FuzzMessage: no input panics, the output is never longer than the input
// (bounded by the clip) plus placeholders, and a temporary directory's path
// placed anywhere in the input after a space never survives.
func FuzzMessage(f *testing.F) {
	dir := f.TempDir()
	for _, s := range []string{"", "/", "open /: x", "write %s: no space left on device", "file://%s/a.md", "(%s)", "a\x00/b", "/\xff\xfe", "\"%s\"=%s"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		in := strings.ReplaceAll(s, "%s", dir)
		out := Message(in)
		if len(out) > len(in)+maxCandidates*len(Placeholder)+4 {
			t.Fatalf("output %d bytes for %d", len(out), len(in))
		}
		probe := in + " " + dir + "/file"
		if len(probe) < maxScan && strings.Count(probe, "/") < maxCandidates {
			if got := Message(probe); strings.HasSuffix(got, dir+"/file") {
				t.Fatalf("path kept: %q", got)
			}
		}
	})
}

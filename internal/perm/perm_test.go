//go:build unix

package perm

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fake replaces the file system's owners (and the process's user) for one
// test: owners maps a path to its uid; every other path is the user's.
func fake(t *testing.T, me int, owners map[string]int) {
	t.Helper()
	oldStat, oldEuid, oldGroup := lstat, euid, privateGroup
	t.Cleanup(func() { lstat, euid, privateGroup = oldStat, oldEuid, oldGroup })
	euid = func() int { return me }
	privateGroup = func(uid, gid int) bool { return gid == uid+1000 } // the fake users' private groups
	lstat = func(p string) (info, error) {
		fi, err := oldStat(p)
		if err != nil {
			return fi, err
		}
		fi.uid, fi.gid = me, me+1000
		if u, ok := owners[p]; ok {
			fi.uid = u
		}
		return fi, nil
	}
}

// TestDirRule is ssh's rule on a temporary tree: modes set with chmod,
// owners through the fake stat (the test needs no second user).
func TestDirRule(t *testing.T) {
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(base, "data")
	if err := os.Mkdir(data, 0o755); err != nil {
		t.Fatal(err)
	}
	fake(t, 501, nil)
	// Readable by others: made private, and said.
	note, err := Dir(data)
	if err != nil || !strings.Contains(note, "0755 to 0700") {
		t.Fatalf("0755: %q %v", note, err)
	}
	if fi, _ := os.Stat(data); fi.Mode().Perm() != 0o700 {
		t.Fatalf("mode now %04o", fi.Mode().Perm())
	}
	if note, err := Dir(data); note != "" || err != nil {
		t.Fatalf("private: %q %v", note, err)
	}
	// Writable by others: refused with the fix; nothing changed.
	for _, mode := range []fs.FileMode{0o777, 0o722, 0o702} {
		os.Chmod(data, mode)
		_, err := Dir(data)
		if !errors.Is(err, ErrUnsafe) || !strings.Contains(err.Error(), "chmod go-w "+data) || !strings.Contains(err.Error(), data) {
			t.Errorf("%04o: %v", mode, err)
		}
		if fi, _ := os.Stat(data); fi.Mode().Perm() != mode {
			t.Errorf("%04o: the mode was changed to %04o", mode, fi.Mode().Perm())
		}
	}
	// Group-writable by the user's private group (umask 002): fine.
	os.Chmod(data, 0o770)
	if _, err := Dir(data); err != nil {
		t.Errorf("0770, private group: %v", err)
	}
	os.Chmod(data, 0o770) // made private by the call above
	privateGroup = func(int, int) bool { return false }
	if _, err := Dir(data); !errors.Is(err, ErrUnsafe) {
		t.Errorf("0770, shared group: %v", err)
	}
	os.Chmod(data, 0o700)
	// Another user's: refused, naming the uid and the fix.
	fake(t, 501, map[string]int{data: 502})
	if _, err := Dir(data); !errors.Is(err, ErrUnsafe) || !strings.Contains(err.Error(), "uid 502") || !strings.Contains(err.Error(), "chown 501 "+data) {
		t.Errorf("foreign owner: %v", err)
	}
	// Root's is fine; a parent of root's is fine; a parent of another
	// user's is not.
	fake(t, 501, map[string]int{data: 0, base: 0})
	if _, err := Dir(data); err != nil {
		t.Errorf("root's: %v", err)
	}
	fake(t, 501, map[string]int{base: 502})
	if _, err := Dir(data); !errors.Is(err, ErrUnsafe) || !strings.Contains(err.Error(), base+", which belongs to another user (uid 502)") {
		t.Errorf("parent of another user: %v", err)
	}
	// A parent others may write: refused unless sticky (like /tmp).
	fake(t, 501, nil)
	os.Chmod(base, 0o777)
	defer os.Chmod(base, 0o700)
	if _, err := Dir(data); !errors.Is(err, ErrUnsafe) || !strings.Contains(err.Error(), "chmod go-w "+base) {
		t.Errorf("parent 0777: %v", err)
	}
	os.Chmod(base, 0o777|fs.ModeSticky)
	if _, err := Dir(data); err != nil {
		t.Errorf("parent 1777: %v", err)
	}
	// Through a link: the directory it names is checked.
	link := filepath.Join(base, "link")
	os.Symlink(data, link)
	os.Chmod(data, 0o777)
	if _, err := Dir(link); !errors.Is(err, ErrUnsafe) {
		t.Errorf("link to a 0777 directory: %v", err)
	}
}

// TestFileRule: a secret file of the user's is read; one others may read
// is made private and said; one others may write, another user's, a link
// or not a regular file is refused; none is fine.
func TestFileRule(t *testing.T) {
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	tok := filepath.Join(base, "server-tokens.json")
	fake(t, 501, nil)
	if note, err := File(tok); note != "" || err != nil {
		t.Fatalf("missing: %q %v", note, err)
	}
	os.WriteFile(tok, []byte("{}"), 0o644)
	if err := CheckFile(tok); err != nil {
		t.Fatalf("CheckFile 0644: %v", err)
	}
	if fi, _ := os.Stat(tok); fi.Mode().Perm() != 0o644 {
		t.Fatal("CheckFile changed the mode")
	}
	if note, err := File(tok); err != nil || !strings.Contains(note, "0644 to 0600") || !strings.Contains(note, "rotate") {
		t.Fatalf("0644: %q %v", note, err)
	}
	for _, mode := range []fs.FileMode{0o666, 0o602} {
		os.Chmod(tok, mode)
		if _, err := File(tok); !errors.Is(err, ErrUnsafe) || !strings.Contains(err.Error(), "chmod go-w "+tok) {
			t.Errorf("%04o: %v", mode, err)
		}
	}
	os.Chmod(tok, 0o620) // the user's private group may write it: made private
	if note, err := File(tok); err != nil || !strings.Contains(note, "0620 to 0600") {
		t.Errorf("0620, private group: %q %v", note, err)
	}
	os.Chmod(tok, 0o620)
	privateGroup = func(int, int) bool { return false }
	if _, err := File(tok); !errors.Is(err, ErrUnsafe) {
		t.Errorf("0620, shared group: %v", err)
	}
	os.Chmod(tok, 0o600)
	fake(t, 501, map[string]int{tok: 502})
	if err := CheckFile(tok); !errors.Is(err, ErrUnsafe) || !strings.Contains(err.Error(), "uid 502") {
		t.Errorf("foreign file: %v", err)
	}
	fake(t, 501, nil)
	link := filepath.Join(base, "link.json")
	os.Symlink(tok, link)
	if err := CheckFile(link); !errors.Is(err, ErrUnsafe) || !strings.Contains(err.Error(), "symbolic link") {
		t.Errorf("link: %v", err)
	}
	if err := CheckFile(base); !errors.Is(err, ErrUnsafe) {
		t.Errorf("a directory: %v", err)
	}
	// In a directory others may write (no sticky bit).
	os.Chmod(base, 0o777)
	defer os.Chmod(base, 0o700)
	if err := CheckFile(tok); !errors.Is(err, ErrUnsafe) || !strings.Contains(err.Error(), "which other users may write") {
		t.Errorf("in a 0777 directory: %v", err)
	}
}

// TestShellQuote: the fix can be pasted into a shell.
func TestShellQuote(t *testing.T) {
	for in, want := range map[string]string{"/home/a/.ragmem": "/home/a/.ragmem", "/tmp/my data": "'/tmp/my data'", "/x/it's": `'/x/it'\''s'`} {
		if got := shellQuote(in); got != want {
			t.Errorf("%q: %q, want %q", in, got, want)
		}
	}
}

// TestBeforeCreate: a directory about to be created is checked where it
// will be: in an open directory it is refused before anything exists.
func TestBeforeCreate(t *testing.T) {
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	fake(t, 501, nil)
	if err := BeforeCreate(filepath.Join(base, "a", "b")); err != nil {
		t.Fatalf("in a private directory: %v", err)
	}
	if err := BeforeCreate(base); err != nil {
		t.Fatalf("existing: %v", err)
	}
	os.Chmod(base, 0o777)
	defer os.Chmod(base, 0o700)
	if err := BeforeCreate(filepath.Join(base, "a", "b")); !errors.Is(err, ErrUnsafe) || !strings.Contains(err.Error(), "chmod go-w "+base) {
		t.Fatalf("in a 0777 directory: %v", err)
	}
	os.Chmod(base, 0o777|fs.ModeSticky)
	if err := BeforeCreate(filepath.Join(base, "a")); err != nil {
		t.Fatalf("in a sticky directory: %v", err)
	}
	fake(t, 501, map[string]int{base: 502})
	if err := BeforeCreate(filepath.Join(base, "a")); !errors.Is(err, ErrUnsafe) {
		t.Fatalf("in another user's directory: %v", err)
	}
}

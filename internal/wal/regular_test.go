//go:build unix

package wal

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// OpenRegular, ReadRegular and TryLock refuse links, pipes and directories
// at once (a pipe would block a plain open), and never touch a link's
// target. Reads, and anything at a link, fail with ErrNotRegular; opening a
// pipe or a directory for writing may fail earlier, with the system's error
// (no reader, is a directory).
func TestRegularFilesOnly(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(target, []byte("secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	plant := map[string]func(string) error{
		"symbolic link": func(p string) error { return os.Symlink(target, p) },
		"named pipe":    func(p string) error { return syscall.Mkfifo(p, 0o600) },
		"directory":     func(p string) error { return os.Mkdir(p, 0o700) },
	}
	for kind, mk := range plant {
		p := filepath.Join(dir, strings.ReplaceAll(kind, " ", "-"))
		if err := mk(p); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 3)
		go func() {
			_, _, err := ReadRegular(p, 1<<20)
			done <- err
			_, _, err = OpenRegular(p, os.O_WRONLY|os.O_APPEND, 0)
			done <- err
			_, err = TryLock(p)
			done <- err
		}()
		for i := 0; i < 3; i++ {
			select {
			case err := <-done:
				var fe *FileError
				if i > 0 && kind != "symbolic link" {
					if err == nil {
						t.Errorf("%s, call %d: accepted", kind, i)
					}
					continue
				}
				if !errors.Is(err, ErrNotRegular) || !errors.As(err, &fe) || !strings.Contains(fe.Problem, kind) || strings.Contains(err.Error(), dir) {
					t.Errorf("%s, call %d: %v", kind, i, err)
				}
			case <-time.After(5 * time.Second):
				t.Fatalf("%s: call %d blocked", kind, i)
			}
		}
	}
	if b, _ := os.ReadFile(target); string(b) != "secret\n" {
		t.Fatalf("the link's target changed: %q", b)
	}
}

func TestReadRegularLimit(t *testing.T) {
	p := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(p, []byte("0123456789"), 0o600); err != nil {
		t.Fatal(err)
	}
	if b, _, err := ReadRegular(p, 10); err != nil || string(b) != "0123456789" {
		t.Fatalf("at the limit: %q, %v", b, err)
	}
	if _, _, err := ReadRegular(p, 9); !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "f is 10 bytes; the limit is 9") {
		t.Fatalf("over the limit: %v", err)
	}
}

// A shared write uses a hidden temporary file of its own, created
// exclusively with the requested permission, and leaves nothing behind
// when it fails.
func TestWriteFileShared(t *testing.T) {
	dir := t.TempDir()
	name := filepath.Join(dir, "notes.md")
	var tmp string
	err := WriteFile(OS{}, name, &WriteOptions{Perm: 0o640, Shared: true}, func(w io.Writer) error {
		tmp = w.(*os.File).Name()
		_, err := io.WriteString(w, "new")
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if base := filepath.Base(tmp); !sharedTemp(base) || !strings.HasPrefix(base, ".notes.md.") {
		t.Errorf("temporary file %s", base)
	}
	fi, err := os.Stat(name)
	if err != nil || fi.Mode().Perm() != 0o640 {
		t.Fatalf("written file: %v, %v", fi, err)
	}
	boom := errors.New("boom")
	if err := WriteFile(OS{}, name, &WriteOptions{Shared: true}, func(w io.Writer) error { return boom }); !errors.Is(err, boom) {
		t.Fatalf("failed write: %v", err)
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 {
		t.Fatalf("left behind: %v", ents)
	}
	if b, _ := os.ReadFile(name); string(b) != "new" {
		t.Fatalf("file = %q", b)
	}
}

// RemoveStaleTemps removes old temporary files of shared writes, and
// nothing else.
func TestRemoveStaleTemps(t *testing.T) {
	dir := t.TempDir()
	past := time.Now().Add(-time.Hour)
	files := map[string]bool{ // name -> removed
		".notes.md.0123456789ab.tmp": true,
		".young.md.0123456789ab.tmp": false,
		"notes.md":                   false,
		"snap-1.tmp":                 false, // a lock-protected write's temporary file
		".notes.md.0123456789.tmp":   false, // not 12 hex digits
		".notes.md.0123456789xy.tmp": false,
	}
	for n := range files {
		p := filepath.Join(dir, n)
		if err := os.WriteFile(p, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(n, ".young") {
			_ = os.Chtimes(p, past, past)
		}
	}
	if n := RemoveStaleTemps(dir, time.Minute); n != 1 {
		t.Errorf("removed %d", n)
	}
	for n, removed := range files {
		if _, err := os.Stat(filepath.Join(dir, n)); errors.Is(err, os.ErrNotExist) != removed {
			t.Errorf("%s: removed %v, want %v", n, !removed, removed)
		}
	}
}

// A link planted at a shared write's temporary name is not written through:
// the write fails and the link's target is untouched.
func TestWriteFileSharedRefusesAPlantedTemp(t *testing.T) {
	defer func(f func([]byte) (int, error)) { tempRand = f }(tempRand)
	tempRand = func(b []byte) (int, error) {
		for i := range b {
			b[i] = 0xab
		}
		return len(b), nil
	}
	dir := t.TempDir()
	target := filepath.Join(t.TempDir(), "authorized_keys")
	if err := os.WriteFile(target, []byte("key\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, filepath.Join(dir, ".notes.md.abababababab.tmp")); err != nil {
		t.Fatal(err)
	}
	err := WriteFile(OS{}, filepath.Join(dir, "notes.md"), &WriteOptions{Shared: true}, func(w io.Writer) error {
		_, err := io.WriteString(w, "attacker-chosen? no: ours")
		return err
	})
	if err == nil {
		t.Fatal("wrote through a planted link")
	}
	if b, _ := os.ReadFile(target); string(b) != "key\n" {
		t.Fatalf("the link's target changed: %q", b)
	}
}

//go:build unix

package memory

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ragmem/ragmem/index"
	"github.com/ragmem/ragmem/internal/memory/internal/memtest"
	"github.com/ragmem/ragmem/internal/wal"
)

var within = memtest.Within

// TestPlantedFilesAreNotFollowed: a memory file that is a symbolic link (to
// a secret, to /dev/zero) or a named pipe is never read, copied or waited
// on: writing the memory fails at once with ErrNotRegular, the target is
// untouched, reading it fails the same way, and the directory stays usable.
func TestPlantedFilesAreNotFollowed(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "mem")
	os.MkdirAll(dir, 0o700)
	s := openStore(t, dir)
	secret := filepath.Join(t.TempDir(), "id_key")
	if err := os.WriteFile(secret, []byte("-----BEGIN PRIVATE KEY-----\nsecret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	plant := map[string]func(path string) error{
		"link to a key file": func(p string) error { return os.Symlink(secret, p) },
		"link to /dev/zero":  func(p string) error { return os.Symlink("/dev/zero", p) },
		"named pipe":         func(p string) error { return syscall.Mkfifo(p, 0o600) },
		"directory":          func(p string) error { return os.Mkdir(p, 0o700) },
	}
	i := 0
	for name, mk := range plant {
		i++
		title := "Planted " + string(rune('a'+i))
		p := filepath.Join(dir, Slugify(title)+".md")
		if err := mk(p); err != nil {
			t.Fatal(err)
		}
		err := within(t, 5*time.Second, name+": Add", func() error {
			_, err := s.Add(bg, newMem(title, "when something is planted"))
			return err
		})
		if !errors.Is(err, ErrNotRegular) || strings.Contains(err.Error(), dir) {
			t.Fatalf("%s: Add: %v (want ErrNotRegular, no path)", name, err)
		}
		err = within(t, 5*time.Second, name+": Raw", func() error {
			_, err := s.Raw(bg, Slugify(title))
			return err
		})
		if err == nil {
			t.Fatalf("%s: Raw read it", name)
		}
	}
	b, _ := os.ReadFile(secret)
	if string(b) != "-----BEGIN PRIVATE KEY-----\nsecret\n" {
		t.Fatal("the key file changed")
	}
	// Nothing of the key reached the memory directory or the index.
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if e.Type().IsRegular() {
			if b, _ := os.ReadFile(filepath.Join(dir, e.Name())); strings.Contains(string(b), "PRIVATE KEY") {
				t.Fatalf("the key was copied into %s", e.Name())
			}
		}
	}
	if hits, err := s.Index().FullText(bg, "secret private key", 10, index.Filter{}); err != nil || len(hits) != 0 {
		t.Fatalf("the key is in the index: %v %v", hits, err)
	}
	// The directory still works.
	if _, err := s.Add(bg, newMem("After the plants", "when it still works")); err != nil {
		t.Fatalf("Add after the planted files: %v", err)
	}
	rep, err := s.Refresh(bg)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Problems) < 2 {
		t.Fatalf("planted files not reported: %+v", rep.Problems)
	}
}

// TestOversizedFilesAreNotRead: a memory file over MaxFileBytes (a sparse
// 4 GiB one here) is refused by its size, without being read.
func TestOversizedFilesAreNotRead(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "mem")
	os.MkdirAll(dir, 0o700)
	s := openStore(t, dir)
	p := filepath.Join(dir, "huge.md")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(4 << 30); err != nil {
		t.Skipf("no sparse files here: %v", err)
	}
	f.Close()
	err = within(t, 5*time.Second, "Add to a huge file", func() error {
		_, err := s.Add(bg, newMem("Huge", "when the file is huge"))
		return err
	})
	if !errors.Is(err, ErrTooLarge) {
		t.Fatalf("Add: %v", err)
	}
	if _, err := s.Raw(bg, "huge"); !errors.Is(err, ErrTooLarge) && !errors.Is(err, ErrNotFound) {
		t.Fatalf("Raw: %v", err)
	}
}

// TestDirectoryLockHasADeadline: a writer waits for the directory lock at
// most lockTimeout, whether another process or another writer in this one
// holds it, and then fails with ErrLocked; a lock file planted as a link is
// refused, never written through.
func TestDirectoryLockHasADeadline(t *testing.T) {
	defer func(d time.Duration) { lockTimeout = d }(lockTimeout)
	lockTimeout = 200 * time.Millisecond
	dir := filepath.Join(t.TempDir(), "mem")
	os.MkdirAll(dir, 0o700)
	s := openStore(t, dir)
	// Another "process": an advisory lock on another descriptor.
	lk, err := wal.TryLock(filepath.Join(dir, ".lock"))
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err = s.Add(bg, newMem("Blocked", "when the lock is held"))
	if !errors.Is(err, ErrLocked) || time.Since(start) > 3*time.Second {
		t.Fatalf("Add under another process's lock: %v after %v", err, time.Since(start))
	}
	lk.Unlock()
	// Another writer of this process, stuck.
	s.lock.sem <- struct{}{}
	start = time.Now()
	_, err = s.Add(bg, newMem("Blocked", "when the lock is held"))
	if !errors.Is(err, ErrLocked) || time.Since(start) > 3*time.Second {
		t.Fatalf("Add behind a stuck writer: %v after %v", err, time.Since(start))
	}
	<-s.lock.sem
	if _, err := s.Add(bg, newMem("Unblocked", "when the lock is free")); err != nil {
		t.Fatal(err)
	}
	// A planted lock file.
	dir2 := filepath.Join(t.TempDir(), "mem2")
	os.MkdirAll(dir2, 0o700)
	target := filepath.Join(t.TempDir(), "bashrc")
	os.WriteFile(target, []byte("export PATH=/usr/bin\n"), 0o600)
	if err := os.Symlink(target, filepath.Join(dir2, ".lock")); err != nil {
		t.Fatal(err)
	}
	s2 := openStore(t, dir2)
	if _, err := s2.Add(bg, newMem("Linked lock", "when the lock is a link")); !errors.Is(err, ErrNotRegular) {
		t.Fatalf("Add with a planted lock file: %v", err)
	}
	if b, _ := os.ReadFile(target); string(b) != "export PATH=/usr/bin\n" {
		t.Fatalf("the lock file's target was written: %q", b)
	}
}

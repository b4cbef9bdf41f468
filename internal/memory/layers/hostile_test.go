//go:build unix

package layers

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ragmem/ragmem/internal/memory"
	"github.com/ragmem/ragmem/internal/memory/internal/memtest"
)

// TestLayerFilesAreNotFollowed: the layers' files are not read or appended
// to through a link, and a pipe never blocks an open.
func TestLayerFilesAreNotFollowed(t *testing.T) {
	dir := t.TempDir()
	secret := filepath.Join(t.TempDir(), "secret")
	os.WriteFile(secret, []byte("{\"id\":\"x\",\"content\":\"secret\"}\n"), 0o600)
	if err := os.Symlink(secret, filepath.Join(dir, episodicFile)); err != nil {
		t.Fatal(err)
	}
	_, err := Open(bg, dir, &Options{Logger: quiet()})
	if !errors.Is(err, memory.ErrNotRegular) {
		t.Fatalf("Open with a linked episodic file: %v", err)
	}
	if err := syscall.Mkfifo(filepath.Join(t.TempDir(), "p"), 0o600); err != nil {
		t.Fatal(err)
	}
	dir2 := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(dir2, semanticFile), 0o600); err != nil {
		t.Fatal(err)
	}
	err = memtest.Within(t, 5*time.Second, "Open with a pipe", func() error {
		_, err := Open(bg, dir2, &Options{Logger: quiet()})
		return err
	})
	if !errors.Is(err, memory.ErrNotRegular) {
		t.Fatalf("Open with a pipe: %v", err)
	}
	b, _ := os.ReadFile(secret)
	if !strings.Contains(string(b), "secret") || strings.Count(string(b), "\n") != 1 {
		t.Fatalf("the secret changed: %q", b)
	}
}

package main

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestIndexKeepsSourcesOfUnreadableFolders: a folder sync removes the
// sources of files that are gone, never those of a subfolder it could not
// read (permission denied): their files may well be there. Permissions do
// not stop root, so as root the two index runs are made by a copy of the
// test binary running as nobody.
func TestIndexKeepsSourcesOfUnreadableFolders(t *testing.T) {
	base := t.TempDir()
	dir, data := filepath.Join(base, "notes"), filepath.Join(base, "data")
	writeFile(t, filepath.Join(dir, "open", "herons.md"), "# Herons\n\nHerons wade in shallow water.\n")
	writeFile(t, filepath.Join(dir, "locked", "storks.md"), "# Storks\n\nStorks nest on chimneys.\n")
	run := func(args ...string) string {
		t.Helper()
		out, stderr, err := runCLI(t, append([]string{"--dir", data}, args...)...)
		if err != nil {
			t.Fatalf("ragmem %s: %v\n%s", strings.Join(args, " "), err, stderr)
		}
		return out + stderr
	}
	if os.Geteuid() == 0 {
		run = asNobody(t, base, data)
	}
	run("index", dir)
	if err := os.Chmod(filepath.Join(dir, "locked"), 0); err != nil {
		t.Fatal(err)
	}
	defer os.Chmod(filepath.Join(dir, "locked"), 0o755)
	out := run("index", dir)
	if !strings.Contains(out, "permission denied") {
		t.Fatalf("the second run did not meet the locked folder:\n%s", out)
	}
	if strings.Contains(out, "removed") {
		t.Errorf("the second run removed sources:\n%s", out)
	}
	if src := run("sources"); !strings.Contains(src, "storks.md") || !strings.Contains(src, "herons.md") {
		t.Errorf("sources after the second run:\n%s", src)
	}
}

// asNobody returns a runner of ragmem commands as the user nobody, for a
// test running as root: base (and everything under it) is given to nobody
// and the test binary is copied where nobody can run it.
func asNobody(t *testing.T, base, data string) func(args ...string) string {
	t.Helper()
	const nobody = 65534
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(base, "ragmem")
	src, err := os.Open(self)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	dst, err := os.OpenFile(bin, os.O_CREATE|os.O_WRONLY, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(dst, src); err != nil {
		t.Fatal(err)
	}
	if err := dst.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(data, 0o700); err != nil {
		t.Fatal(err)
	}
	for p := base; p != "/" && p != "."; p = filepath.Dir(p) {
		st, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode().Perm()&0o001 == 0 {
			if err := os.Chmod(p, st.Mode().Perm()|0o011); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := filepath.Walk(base, func(p string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, nobody, nobody)
	}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		filepath.Walk(base, func(p string, _ os.FileInfo, _ error) error { os.Lchown(p, 0, 0); return nil })
	})
	return func(args ...string) string {
		t.Helper()
		cmd := exec.Command(bin, append([]string{"--dir", data}, args...)...)
		cmd.Env = append(os.Environ(), "RAGMEM_TEST_AS_MAIN=1", "HOME="+base, "XDG_CONFIG_HOME="+filepath.Join(base, "config"))
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("ragmem %s (as nobody): %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
}

// TestIndexSkipsSpecialFiles: a path named on the command line that is not
// a regular file (a FIFO, a link to a device) is skipped with that reason,
// at once: it is neither read (a FIFO would block, /dev/zero never ends)
// nor called empty.
func TestIndexSkipsSpecialFiles(t *testing.T) {
	dir := t.TempDir()
	fifo, dev := filepath.Join(dir, "pipe.txt"), filepath.Join(dir, "zero.md")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/dev/zero", dev); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{fifo, dev} {
		out, stderr, err := runCLI(t, "--dir", filepath.Join(dir, "data"), "index", p)
		if err != nil || !strings.Contains(stderr, "skipped: not a regular file") || !strings.Contains(out, "1 skipped") {
			t.Errorf("%s: %v\n%s%s", p, err, out, stderr)
		}
	}
}

package owner_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ragmem/ragmem/internal/owner"
	"github.com/ragmem/ragmem/internal/wal"
)

// TestMain lets the test binary dial a socket as another process (and,
// run as root, as another user).
func TestMain(m *testing.M) {
	if sock := os.Getenv("OWNER_TEST_DIAL"); sock != "" {
		c, err := net.Dial("unix", sock)
		if err != nil {
			os.Stdout.WriteString("dial: " + err.Error())
			os.Exit(3)
		}
		// A refused peer is closed by the owner at once: reading gets EOF.
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		_, err = c.Read(make([]byte, 1))
		os.Stdout.WriteString("read: " + err.Error())
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func TestClaimIsExclusive(t *testing.T) {
	dir := t.TempDir()
	c1, err := owner.TryClaim(dir)
	if err != nil {
		t.Fatal(err)
	}
	_, err = owner.TryClaim(dir)
	var le *wal.LockedError
	if !errors.Is(err, owner.ErrOwned) || !errors.As(err, &le) || le.PID != strconv.Itoa(os.Getpid()) {
		t.Fatalf("second claim: %v", err)
	}
	if owner.LockHolder(dir) != os.Getpid() {
		t.Errorf("lock holder %d", owner.LockHolder(dir))
	}
	if held, known := owner.LockHeld(dir); known && !held {
		t.Error("LockHeld says the lock is free while it is held")
	}
	if err := c1.Release(); err != nil {
		t.Fatal(err)
	}
	if held, known := owner.LockHeld(dir); known && held {
		t.Error("LockHeld says the lock is held after Release")
	}
	c2, err := owner.TryClaim(dir)
	if err != nil {
		t.Fatalf("claim after release: %v", err)
	}
	c2.Release()
}

// TestListenIsPrivate checks the socket's and the directory's modes, the
// owner file, and that Release removes both files.
func TestListenIsPrivate(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	c, err := owner.TryClaim(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Release()
	if fi, _ := os.Stat(dir); fi.Mode().Perm() != 0o700 {
		t.Errorf("data directory mode %v, want 0700", fi.Mode().Perm())
	}
	if len(c.Notes()) != 1 || !strings.Contains(c.Notes()[0], "0755") {
		t.Errorf("notes %q", c.Notes())
	}
	ln, err := c.Listen(owner.Info{Kind: owner.KindServe, HTTP: "http://127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	fi, err := os.Lstat(ln.Path())
	if err != nil || fi.Mode()&os.ModeSocket == 0 || fi.Mode().Perm() != 0o600 {
		t.Fatalf("socket %v %v", fi, err)
	}
	in, err := owner.ReadInfo(dir)
	if err != nil {
		t.Fatal(err)
	}
	if in.PID != os.Getpid() || in.Kind != owner.KindServe || in.Socket != ln.Path() || in.HTTP != "http://127.0.0.1:1" || in.Version == "" || time.Since(in.Since) > time.Minute {
		t.Errorf("owner file %+v", in)
	}
	if fi, _ := os.Stat(owner.InfoPath(dir)); fi.Mode().Perm() != 0o600 {
		t.Errorf("owner file mode %v", fi.Mode().Perm())
	}
	if _, err := c.Listen(owner.Info{}); err == nil {
		t.Error("Listen twice succeeded")
	}
	if err := c.Release(); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{ln.Path(), owner.InfoPath(dir)} {
		if _, err := os.Lstat(p); !os.IsNotExist(err) {
			t.Errorf("%s after Release: %v", p, err)
		}
	}
}

// TestStaleOwnerIsCleaned leaves what a killed owner leaves (its socket
// file, its owner file naming a dead process): Join finds nobody
// answering and the lock free, so it claims; Listen replaces both.
func TestStaleOwnerIsCleaned(t *testing.T) {
	dir := t.TempDir()
	sock, err := owner.SocketPath(dir)
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	l.(*net.UnixListener).SetUnlinkOnClose(false)
	l.Close() // the file stays, nobody listens: connect is refused
	stale := owner.Info{PID: 999999, Kind: owner.KindDaemon, Since: time.Now(), Socket: sock, Version: "old"}
	b, _ := json.Marshal(stale)
	if err := os.WriteFile(owner.InfoPath(dir), b, 0o600); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	in, claim, err := owner.Join(context.Background(), dir, &owner.JoinOptions{Wait: 10 * time.Second})
	if err != nil || claim == nil {
		t.Fatalf("Join: %+v %v %v", in, claim, err)
	}
	defer claim.Release()
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("Join took %v to see the owner was stale", d)
	}
	ln, err := claim.Listen(owner.Info{Kind: owner.KindCLI})
	if err != nil {
		t.Fatalf("Listen over the stale socket: %v", err)
	}
	defer ln.Close()
	in, err = owner.ReadInfo(dir)
	if err != nil || in.PID != os.Getpid() {
		t.Fatalf("owner file after Listen: %+v %v", in, err)
	}
	// Anything but a socket at the socket's path is not removed.
	claim.Release()
	os.WriteFile(sock, []byte("precious"), 0o600)
	c2, err := owner.TryClaim(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Release()
	if _, err := c2.Listen(owner.Info{}); err == nil || !strings.Contains(err.Error(), "not a socket") {
		t.Errorf("Listen over a regular file: %v", err)
	}
	if b, _ := os.ReadFile(sock); string(b) != "precious" {
		t.Error("the regular file was removed")
	}
}

// TestJoin covers the three answers: an owner that answers (its Info), a
// starting owner (Join waits for it), an owner that never answers (Join
// gives up after Wait, naming it).
func TestJoin(t *testing.T) {
	dir := t.TempDir()
	claim, err := owner.TryClaim(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer claim.Release()
	// Held, not listening: Join waits, then gives up.
	start := time.Now()
	_, _, err = owner.Join(context.Background(), dir, &owner.JoinOptions{Wait: 200 * time.Millisecond})
	if !errors.Is(err, owner.ErrOwned) || !strings.Contains(err.Error(), "pid "+strconv.Itoa(os.Getpid())) || time.Since(start) < 200*time.Millisecond {
		t.Fatalf("Join on a silent owner: %v after %v", err, time.Since(start))
	}
	// NoClaim does not wait.
	if _, _, err := owner.Join(context.Background(), dir, &owner.JoinOptions{NoClaim: true}); !errors.Is(err, owner.ErrNoOwner) {
		t.Fatalf("NoClaim: %v", err)
	}
	// Starts listening while Join waits.
	waited := make(chan int, 1)
	go func() {
		time.Sleep(150 * time.Millisecond)
		if _, err := claim.Listen(owner.Info{Kind: owner.KindServe}); err != nil {
			t.Error(err)
		}
	}()
	in, c, err := owner.Join(context.Background(), dir, &owner.JoinOptions{Waiting: func(pid int) { waited <- pid }})
	if err != nil || c != nil || in.PID != os.Getpid() || in.Kind != owner.KindServe {
		t.Fatalf("Join: %+v %v %v", in, c, err)
	}
	if pid := <-waited; pid != os.Getpid() {
		t.Errorf("Waiting(%d)", pid)
	}
	// Cancellation ends a wait at once.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	claim.Withdraw()
	if _, _, err := owner.Join(ctx, dir, nil); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled Join: %v", err)
	}
}

// TestClaimAfter: a process that handed over waits before claiming again,
// so the process it handed over to gets the lock first.
func TestClaimAfter(t *testing.T) {
	dir := t.TempDir()
	start := time.Now()
	_, c, err := owner.Join(context.Background(), dir, &owner.JoinOptions{ClaimAfter: 300 * time.Millisecond})
	if err != nil || c == nil {
		t.Fatal(err)
	}
	defer c.Release()
	if d := time.Since(start); d < 300*time.Millisecond {
		t.Errorf("claimed after %v", d)
	}
}

// TestForeignPeerRefused connects to an owner socket as another user (the
// test must run as root): Accept closes such connections at once.
func TestForeignPeerRefused(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root to connect as another user")
	}
	if _, err := os.Stat("/proc/self"); err != nil {
		t.Skip("SO_PEERCRED is checked on Linux")
	}
	// A socket another user can reach (the owner's is in a 0700
	// directory), to test the uid check by itself.
	base, err := os.MkdirTemp("", "ownerpeer")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(base)
	os.Chmod(base, 0o755) // others may reach, not write (internal/perm refuses a data directory in such a one)
	dir := filepath.Join(base, "d")
	claim, err := owner.TryClaim(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer claim.Release()
	ln, err := claim.Listen(owner.Info{Kind: owner.KindServe})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	os.Chmod(dir, 0o777)
	os.Chmod(ln.Path(), 0o777)
	refusedUID := make(chan int, 1)
	ln.OnRefuse(func(uid int) { refusedUID <- uid })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	// The test binary, where the other user may run it.
	self, _ := os.Executable()
	b, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	exe := filepath.Join(base, "owner.test")
	if err := os.WriteFile(exe, b, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), "OWNER_TEST_DIAL="+ln.Path())
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child: %v %s", err, out)
	}
	select {
	case uid := <-refusedUID:
		if uid != 65534 {
			t.Errorf("refused uid %d", uid)
		}
	case <-time.After(5 * time.Second):
		t.Fatalf("the other user's connection was not refused (child: %s)", out)
	}
	if ln.Refused() != 1 {
		t.Errorf("Refused() = %d", ln.Refused())
	}
	// The owner's own directory keeps other users out before any check.
	os.Chmod(dir, 0o700)
	cmd = exec.Command(exe)
	cmd.Env = append(os.Environ(), "OWNER_TEST_DIAL="+ln.Path())
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, _ = cmd.CombinedOutput()
	if !strings.Contains(string(out), "permission denied") {
		t.Errorf("another user through a 0700 directory: %s", out)
	}
}

// TestPresence: attached clients keep an owner busy and are listed; Leave
// ends their streams with "leaving"; WaitIdle returns once nothing is
// attached or connected for the grace period.
func TestPresence(t *testing.T) {
	dir := t.TempDir()
	claim, err := owner.TryClaim(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer claim.Release()
	ln, err := claim.Listen(owner.Info{Kind: owner.KindDaemon})
	if err != nil {
		t.Fatal(err)
	}
	p := owner.NewPresence(ln)
	h := p.Handler(func(*http.Request) owner.Status { return owner.Status{Owner: claim.Info(), Dir: dir} }, func() error { return owner.ErrHandoverRefused })
	hs := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Header.Get("Authorization") // the real owner mounts it behind the server's authentication
		h.ServeHTTP(w, r)
	})}
	go hs.Serve(ln)
	defer hs.Close()
	writeToken(t, dir)
	c, err := owner.NewClient(dir, claim.Info(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	attached := make(chan struct{})
	ended := make(chan error, 1)
	go func() { ended <- c.Attach(ctx, "mcp", func() { close(attached) }) }()
	<-attached
	st, err := c.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Clients) != 1 || st.Clients[0].Kind != "mcp" || st.Clients[0].PID != os.Getpid() || st.Connections < 2 {
		t.Errorf("status %+v", st)
	}
	if err := c.Handover(ctx); !errors.Is(err, owner.ErrHandoverRefused) {
		t.Errorf("handover: %v", err)
	}
	// Busy while attached.
	ictx, icancel := context.WithTimeout(ctx, 300*time.Millisecond)
	if err := p.WaitIdle(ictx, 100*time.Millisecond, 10*time.Millisecond); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("WaitIdle while a client is attached: %v", err)
	}
	icancel()
	p.Leave(true)
	select {
	case err := <-ended:
		if !errors.Is(err, owner.ErrHandingOver) {
			t.Errorf("Attach ended with %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Attach did not end when the owner left")
	}
	c.Close()
	start := time.Now()
	if err := p.WaitIdle(ctx, 100*time.Millisecond, 10*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d < 100*time.Millisecond || d > 3*time.Second {
		t.Errorf("WaitIdle returned after %v", d)
	}
}

// writeToken writes a token file as `ragmem serve` does.
func writeToken(t *testing.T, dir string) {
	t.Helper()
	b := `{"version":1,"tokens":[{"token":"rgm_test","namespace":"","created":"2026-01-01T00:00:00Z"}]}`
	if err := os.WriteFile(filepath.Join(dir, "server-tokens.json"), []byte(b), 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestSocketPathFallsBackWhenLong(t *testing.T) {
	t.Setenv("XDG_RUNTIME_DIR", t.TempDir())
	long := filepath.Join(t.TempDir(), strings.Repeat("x", 120))
	p, err := owner.SocketPath(long)
	if err != nil {
		t.Fatal(err)
	}
	if len(p) > 103 || !strings.HasPrefix(p, os.Getenv("XDG_RUNTIME_DIR")) {
		t.Errorf("socket path %q", p)
	}
	p2, _ := owner.SocketPath(long + "y")
	if p2 == p {
		t.Error("two directories share a socket path")
	}
	short := t.TempDir()
	if p, _ := owner.SocketPath(short); p != filepath.Join(short, owner.SocketFile) {
		t.Errorf("short path %q", p)
	}
}

func quiet() *slog.Logger { return slog.New(slog.DiscardHandler) }

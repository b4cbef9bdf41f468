// Package owner makes one process the owner of a ragmem data directory and
// every other ragmem process on that directory its client.
//
// The owner is the process that holds the directory's owner lock
// (owner.lock, an advisory lock the kernel releases when the process dies)
// and, through it, the store's own lock. It serves ragmem's HTTP API on a
// Unix socket in the data directory (ragmem.sock, mode 0600 in a directory
// of mode 0700; on Linux each peer's uid is also checked with SO_PEERCRED)
// and announces itself in an owner file (owner.json, written atomically:
// pid, kind, since, version, socket). Clients find the owner through that
// file, check the server's uid on the connection, and authenticate with the
// data directory's API token, exactly as an HTTP client of `ragmem serve`
// does.
//
//	dir/owner.lock   held by the owner (holds its pid)
//	dir/owner.json   who owns the directory and where its socket is
//	dir/ragmem.sock  the owner's API (a directory in $XDG_RUNTIME_DIR or the
//	                 temporary directory when the data directory's path is
//	                 too long for a socket address)
//	dir/owner.log    the log of a background owner
//
// Join decides, for a process that needs the store, whether it becomes a
// client (an owner answers) or the owner (it took the lock: any owner file
// and socket left behind are stale, from a process that died, and are
// removed). A process that finds the lock held but no answer on the socket
// (an owner still opening the store) waits for it.
//
// Claim is safe for concurrent use; Client is safe for concurrent use.
// Everything else is a plain function or value.
package owner

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"time"
)

// File names in the data directory.
const (
	lockFile   = "owner.lock"
	infoFile   = "owner.json"
	SocketFile = "ragmem.sock"
	logFile    = "owner.log"
)

// Kind says what kind of process owns a data directory.
type Kind string

// Kinds of owner.
const (
	// KindServe is `ragmem serve`: it owns until it is stopped, and also
	// serves HTTP on a TCP address for browser extensions.
	KindServe Kind = "serve"
	// KindDaemon is a background owner started by `ragmem mcp` when no
	// owner was running. It exits after a grace period without clients,
	// and hands over to a `ragmem serve` started later.
	KindDaemon Kind = "mcp-daemon"
	// KindCLI is a ragmem command that found no owner and opened the store
	// itself; it answers clients until the command ends.
	KindCLI Kind = "cli"
)

// Errors.
var (
	// ErrOwned: another process holds the owner lock.
	ErrOwned = errors.New("owner: the data directory is owned by another process")
	// ErrNoOwner: no owner file, or no owner answering.
	ErrNoOwner = errors.New("owner: no owner")
	// ErrForeignPeer: the process at the other end of the socket runs as
	// another user.
	ErrForeignPeer = errors.New("owner: the process at the other end of the socket belongs to another user")
	// ErrUnsupported: this platform has no owner sockets; every process
	// opens the store itself.
	ErrUnsupported = errors.New("owner: not supported on this platform")
	// ErrGone: the owner went away (died, or handed over) during a request.
	ErrGone = errors.New("owner: the owner went away")
)

// Info is the owner file: who owns a data directory and how to reach it.
type Info struct {
	PID     int       `json:"pid"`
	Kind    Kind      `json:"kind"`
	Since   time.Time `json:"since"`
	Version string    `json:"version"`
	Socket  string    `json:"socket"`            // absolute path of the Unix socket
	Command string    `json:"command,omitempty"` // the command line of a cli owner
	HTTP    string    `json:"http,omitempty"`    // the TCP address `ragmem serve` also listens on
}

// maxInfoBytes bounds the owner file read.
const maxInfoBytes = 64 << 10

// InfoPath returns the owner file of dir.
func InfoPath(dir string) string { return filepath.Join(dir, infoFile) }

// lockPath returns the owner lock of dir.
func lockPath(dir string) string { return filepath.Join(dir, lockFile) }

// LogPath returns where a background owner of dir logs.
func LogPath(dir string) string { return filepath.Join(dir, logFile) }

// ReadInfo reads the owner file of dir. It fails with ErrNoOwner when there
// is none. The file may be stale (its process gone): only a connection
// tells.
func ReadInfo(dir string) (Info, error) {
	var in Info
	f, err := os.Open(InfoPath(dir))
	if errors.Is(err, fs.ErrNotExist) {
		return in, ErrNoOwner
	}
	if err != nil {
		return in, fmt.Errorf("owner: read owner file: %w", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxInfoBytes+1))
	if err != nil {
		return in, fmt.Errorf("owner: read owner file: %w", err)
	}
	if len(b) > maxInfoBytes {
		return in, fmt.Errorf("owner: owner file %s is larger than %d bytes", InfoPath(dir), maxInfoBytes)
	}
	if err := json.Unmarshal(b, &in); err != nil {
		return in, fmt.Errorf("owner: owner file %s is damaged (%v); the next owner replaces it", InfoPath(dir), err)
	}
	if in.PID <= 0 || in.Socket == "" || !filepath.IsAbs(in.Socket) {
		return in, fmt.Errorf("owner: owner file %s names no process or socket; the next owner replaces it", InfoPath(dir))
	}
	return in, nil
}

// LockHolder returns the pid written in dir's owner lock (0 when unknown).
// It reads the file without taking the lock, so it may name a process that
// has released it since.
func LockHolder(dir string) int {
	b, err := os.ReadFile(lockPath(dir))
	if err != nil {
		return 0
	}
	var pid int
	if _, err := fmt.Sscanf(strings.TrimSpace(string(b)), "%d", &pid); err != nil {
		return 0
	}
	return pid
}

// version returns this binary's version: the module version, else the VCS
// revision it was built from, else "devel".
func version() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "devel"
	}
	if v := bi.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	rev, dirty := "", false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if rev == "" {
		return "devel"
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if dirty {
		rev += "-dirty"
	}
	return "devel-" + rev
}

// maxSocketPath is the longest socket path every supported platform
// accepts (sun_path holds 104 bytes on macOS and the BSDs, 108 on Linux,
// the terminating NUL included).
const maxSocketPath = 103

// SocketPath returns where the owner of dir listens: dir/ragmem.sock, or,
// when that path is too long for a socket address, a file named after a
// hash of dir in a private directory ($XDG_RUNTIME_DIR/ragmem, else
// ragmem-UID in the temporary directory).
func SocketPath(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	p := filepath.Join(abs, SocketFile)
	if len(p) <= maxSocketPath {
		return p, nil
	}
	sum := sha256.Sum256([]byte(abs))
	name := hex.EncodeToString(sum[:8]) + ".sock"
	base, err := runtimeDir()
	if err != nil {
		return "", err
	}
	p = filepath.Join(base, name)
	if len(p) > maxSocketPath {
		return "", fmt.Errorf("owner: no socket path shorter than %d bytes for %s (set $XDG_RUNTIME_DIR to a short directory)", maxSocketPath+1, abs)
	}
	return p, nil
}

// timeNow is time.Now (tests replace it).
var timeNow = time.Now

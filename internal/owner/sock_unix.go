//go:build unix

package owner

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"
)

// listenUnix listens on a Unix socket at path and makes it mode 0600.
func listenUnix(path string) (*Listener, error) {
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("owner: listen on %s: %w", path, err)
	}
	ul := ln.(*net.UnixListener)
	ul.SetUnlinkOnClose(false) // Withdraw removes it, before the listener closes
	if err := os.Chmod(path, 0o600); err != nil {
		_ = ln.Close()
		_ = os.Remove(path)
		return nil, fmt.Errorf("owner: make the socket private: %w", err)
	}
	return &Listener{Listener: ln, path: path}, nil
}

// ownedByMe reports whether fi belongs to this process's user.
func ownedByMe(fi fs.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && int(st.Uid) == os.Getuid()
}

// runtimeDir returns a private directory for sockets whose data
// directory's path is too long: $XDG_RUNTIME_DIR/ragmem, else
// ragmem-UID in the temporary directory. It is created with mode 0700 and
// refused if it is a link, is not a directory, belongs to another user or
// is open to others.
func runtimeDir() (string, error) {
	base := os.Getenv("XDG_RUNTIME_DIR")
	name := "ragmem"
	if base == "" {
		base, name = os.TempDir(), "ragmem-"+strconv.Itoa(os.Getuid())
	}
	d := filepath.Join(base, name)
	if err := os.Mkdir(d, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return "", fmt.Errorf("owner: create socket directory: %w", err)
	}
	fi, err := os.Lstat(d)
	if err != nil {
		return "", fmt.Errorf("owner: socket directory: %w", err)
	}
	if !fi.IsDir() || !ownedByMe(fi) || fi.Mode().Perm()&0o077 != 0 {
		return "", fmt.Errorf("owner: socket directory %s is not a private directory of this user (mode %v); remove it", d, fi.Mode())
	}
	return d, nil
}

// dialTimeout bounds connecting to an owner's socket.
const dialTimeout = 2 * time.Second

// dial connects to the owner socket at path and checks that the process
// listening runs as this user (ErrForeignPeer otherwise).
func dial(ctx context.Context, path string) (net.Conn, error) {
	d := net.Dialer{Timeout: dialTimeout}
	c, err := d.DialContext(ctx, "unix", path)
	if err != nil {
		return nil, err
	}
	uid, err := peerUID(c)
	if err != nil {
		_ = c.Close()
		return nil, fmt.Errorf("owner: check the owner's user: %w", err)
	}
	if uid >= 0 && uid != os.Getuid() {
		_ = c.Close()
		return nil, fmt.Errorf("%w (uid %d) at %s", ErrForeignPeer, uid, path)
	}
	return c, nil
}

// rawConn returns the socket behind c.
func rawConn(c net.Conn) (syscall.RawConn, error) {
	for {
		if u, ok := c.(interface{ Unwrap() net.Conn }); ok {
			c = u.Unwrap()
			continue
		}
		break
	}
	sc, ok := c.(syscall.Conn)
	if !ok {
		return nil, errors.New("owner: not a socket connection")
	}
	return sc.SyscallConn()
}

// Supported reports whether this platform has owner sockets. Where it has
// not, every ragmem process opens the store itself, one at a time.
func Supported() bool { return true }

package owner

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"sync"

	"github.com/ragmem/ragmem/internal/perm"
	"github.com/ragmem/ragmem/internal/wal"
)

// Claim is the ownership of a data directory, held from TryClaim until
// Release. It is safe for concurrent use.
type Claim struct {
	dir   string
	lock  *wal.Lock
	notes []string

	mu       sync.Mutex
	sock     string // the socket path once Listen succeeded
	info     *Info  // the owner file written by Listen
	released bool
}

// TryClaim takes the owner lock of dir without waiting, creating dir (mode
// 0700) if needed. When another process holds it the error wraps ErrOwned
// and a *wal.LockedError naming that process. A data directory that
// another user owns or may write, or that sits in such a directory, is
// refused (internal/perm: ssh's rule); one of this user's that others may
// read is made private, 0700 (Notes says so, for the owner's log): it holds
// the memory, its API token and the owner's socket.
func TryClaim(dir string) (*Claim, error) {
	if err := perm.BeforeCreate(dir); err != nil {
		return nil, fmt.Errorf("owner: the data directory: %w", err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("owner: create data directory: %w", err)
	}
	var notes []string
	note, err := perm.Dir(dir)
	if err != nil {
		return nil, fmt.Errorf("owner: the data directory: %w", err)
	}
	if note != "" {
		notes = append(notes, note)
	}
	lock, err := wal.TryLock(lockPath(dir))
	if err != nil {
		var le *wal.LockedError
		if errors.As(err, &le) {
			return nil, fmt.Errorf("%w (pid %s): %w", ErrOwned, le.PID, le)
		}
		return nil, fmt.Errorf("owner: take the owner lock: %w", err)
	}
	return &Claim{dir: dir, lock: lock, notes: notes}, nil
}

// Dir returns the data directory.
func (c *Claim) Dir() string { return c.dir }

// Notes returns what TryClaim changed that the owner should log.
func (c *Claim) Notes() []string { return c.notes }

// Info returns the owner file Listen wrote (the zero Info before).
func (c *Claim) Info() Info {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.info == nil {
		return Info{}
	}
	return *c.info
}

// Listen creates the owner's socket and announces the owner: it removes a
// socket and an owner file left behind by a process that died (the lock
// proves they are stale), listens on the socket (mode 0600), and writes the
// owner file atomically with info's Kind, Command and HTTP (PID, Since,
// Version and Socket are filled in). The listener accepts only processes
// of this user. Listen may be called once.
func (c *Claim) Listen(info Info) (*Listener, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.released {
		return nil, errors.New("owner: Listen after Release")
	}
	if c.sock != "" {
		return nil, errors.New("owner: Listen called twice")
	}
	path, err := SocketPath(c.dir)
	if err != nil {
		return nil, err
	}
	if err := removeStale(c.dir, path); err != nil {
		return nil, err
	}
	ln, err := listenUnix(path)
	if err != nil {
		return nil, err
	}
	c.sock = path
	info.PID = os.Getpid()
	if info.Since.IsZero() {
		info.Since = timeNow().UTC()
	}
	info.Version = version()
	info.Socket = path
	if err := writeInfo(c.dir, info); err != nil {
		_ = ln.Close()
		_ = os.Remove(path)
		c.sock = ""
		return nil, err
	}
	c.info = &info
	return ln, nil
}

// removeStale removes what a dead owner left: its socket (only a socket;
// anything else at that path is an error to report) and its owner file.
func removeStale(dir, sock string) error {
	if fi, err := os.Lstat(sock); err == nil {
		if fi.Mode()&fs.ModeSocket == 0 {
			return fmt.Errorf("owner: %s exists and is not a socket; remove it", sock)
		}
		if err := os.Remove(sock); err != nil {
			return fmt.Errorf("owner: remove stale socket: %w", err)
		}
	}
	if err := os.Remove(InfoPath(dir)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("owner: remove stale owner file: %w", err)
	}
	return nil
}

func writeInfo(dir string, info Info) error {
	b, err := json.MarshalIndent(info, "", "  ")
	if err != nil {
		return err
	}
	b = append(b, '\n')
	err = wal.WriteFileAtomic(wal.OS{}, InfoPath(dir), func(w io.Writer) error {
		_, err := w.Write(b)
		return err
	})
	if err != nil {
		return fmt.Errorf("owner: write owner file: %w", err)
	}
	return nil
}

// Withdraw removes the owner file and the socket, so that new clients stop
// finding this owner, while the lock is still held: they wait for it to be
// released. Connections already open are not affected. It is safe to call
// more than once.
func (c *Claim) Withdraw() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.withdrawLocked()
}

func (c *Claim) withdrawLocked() error {
	var errs []error
	if c.info != nil {
		if err := os.Remove(InfoPath(c.dir)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
		c.info = nil
	}
	if c.sock != "" {
		if err := os.Remove(c.sock); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Release withdraws the owner (if Withdraw was not called) and releases
// the lock. It is safe to call more than once.
func (c *Claim) Release() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.released {
		return nil
	}
	c.released = true
	err := c.withdrawLocked()
	return errors.Join(err, c.lock.Unlock())
}

// Listener is the owner's socket listener. Accept returns only
// connections from processes of this user; others are closed at once. It
// counts the connections open. It is safe for concurrent use.
type Listener struct {
	net.Listener
	path     string
	mu       sync.Mutex
	open     int
	refused  int
	onRefuse func(uid int)
}

// Path returns the socket's path.
func (l *Listener) Path() string { return l.path }

// Open returns the number of connections open.
func (l *Listener) Open() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.open
}

// Refused returns the number of connections refused because their process
// belonged to another user.
func (l *Listener) Refused() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.refused
}

// OnRefuse sets a function told about each refused connection (for a log
// line). Call it before serving.
func (l *Listener) OnRefuse(f func(uid int)) { l.onRefuse = f }

// Accept implements net.Listener.
func (l *Listener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		uid, err := peerUID(c)
		if err == nil && uid >= 0 && uid != os.Getuid() {
			_ = c.Close()
			l.mu.Lock()
			l.refused++
			l.mu.Unlock()
			if l.onRefuse != nil {
				l.onRefuse(uid)
			}
			continue
		}
		l.mu.Lock()
		l.open++
		l.mu.Unlock()
		return &countedConn{Conn: c, l: l}, nil
	}
}

// countedConn decrements its listener's count once when closed.
type countedConn struct {
	net.Conn
	l    *Listener
	once sync.Once
}

func (c *countedConn) Close() error {
	c.once.Do(func() {
		c.l.mu.Lock()
		c.l.open--
		c.l.mu.Unlock()
	})
	return c.Conn.Close()
}

// Unwrap returns the socket connection (for peer credentials).
func (c *countedConn) Unwrap() net.Conn { return c.Conn }

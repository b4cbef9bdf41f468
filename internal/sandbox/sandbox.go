// Package sandbox runs a function of this program in a child process: the
// same executable, started again with an environment variable that makes
// Main run the function instead of the program. The child is bounded in CPU
// time (RLIMIT_CPU), in address space (RLIMIT_AS, counted from what it had
// mapped when it started) and in wall time (the parent kills its process
// group), reads its input on stdin and hands its result back on stdout in a
// length-prefixed frame that the parent reads with a size bound. Whatever
// the function does (loop forever, exhaust memory, crash the Go runtime
// with a fatal error that no recover reaches) costs only the child: the
// parent gets an error that says which limit was passed or how the child
// failed, and goes on.
//
// A program that calls Run calls Main first in its main function, before
// anything else; so does the TestMain of a package whose tests call Run, so
// that the test binary can act as the child:
//
//	func main() {
//		sandbox.Main()
//		...
//	}
//
// Functions are registered by name with Register, in an init function of
// the package that defines them, so that parent and child (the same binary)
// know the same names.
package sandbox

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"time"
)

// envChild marks a child process started by Run.
const envChild = "RAGMEM_SANDBOX_CHILD"

// Errors. A LimitError wraps ErrLimit, a CrashError ErrCrashed.
var (
	// ErrLimit: the child passed one of its Limits and was stopped.
	ErrLimit = errors.New("sandbox: limit exceeded")
	// ErrCrashed: the child ended without a result (a fatal error of the
	// Go runtime, an unrecovered panic, a signal).
	ErrCrashed = errors.New("sandbox: the child process failed")
	// ErrNested: Run was called inside a child; children start no
	// children of their own.
	ErrNested = errors.New("sandbox: Run called inside a sandboxed child")
	// ErrUnknown: no function is registered under the name.
	ErrUnknown = errors.New("sandbox: no such function")
)

// Defaults of Limits.
const (
	DefaultWall   = 30 * time.Second
	DefaultMemory = 512 << 20
	DefaultOutput = 256 << 20
)

// Limits bound one run of a function in a child. The zero value means all
// defaults.
type Limits struct {
	// Wall is the longest the child may run, from its start to its
	// result; the parent then kills it. Default 30 s.
	Wall time.Duration
	// CPU is the most CPU time the child may use (RLIMIT_CPU, whole
	// seconds rounded up). Default: Wall.
	CPU time.Duration
	// Memory is the most address space the child may map beyond what it
	// had mapped when it started (RLIMIT_AS; on Linux, where the start is
	// measured). The Go runtime's soft memory limit is set to three
	// quarters of it, so that the collector works harder before the hard
	// limit is met. A -race build, whose shadow memory counts, gets eight
	// times as much. Default 512 MiB.
	Memory int64
	// Output is the largest result the parent reads. Default 256 MiB.
	Output int64
}

func (l *Limits) withDefaults() Limits {
	var r Limits
	if l != nil {
		r = *l
	}
	if r.Wall <= 0 {
		r.Wall = DefaultWall
	}
	if r.CPU <= 0 {
		r.CPU = r.Wall
	}
	if r.Memory <= 0 {
		r.Memory = DefaultMemory
	}
	if r.Output <= 0 {
		r.Output = DefaultOutput
	}
	return r
}

// LimitError says which limit stopped a child. Reason reads after "the
// child" or a name for it: "exceeded 30s", "ran out of memory (limit 512
// MiB)", "used more than 30s of CPU time", "answered more than 256 MiB".
type LimitError struct {
	Reason string
}

func (e *LimitError) Error() string { return "sandbox: the child process " + e.Reason }
func (e *LimitError) Unwrap() error { return ErrLimit }

// CrashError says how a child ended without a result. Reason reads after
// "the child" or a name for it: "crashed (fatal error: stack overflow)".
type CrashError struct {
	Reason string
}

func (e *CrashError) Error() string { return "sandbox: the child process " + e.Reason }
func (e *CrashError) Unwrap() error { return ErrCrashed }

// JobError is an error the function returned in the child, carried to the
// parent as its message.
type JobError struct {
	Msg string
}

func (e *JobError) Error() string { return e.Msg }

// Usage is what a child used: its wall time, CPU time (user and system)
// and peak resident memory (0 where the system does not say).
type Usage struct {
	Wall   time.Duration
	CPU    time.Duration
	MaxRSS int64 // bytes
}

// Func is a function a child runs: params as the parent passed them, input
// the bytes the parent sent. Its result goes back to the parent as it is;
// an error goes back as a JobError with its message. ctx is done when the
// wall time is up (the parent kills the child soon after).
type Func func(ctx context.Context, params, input []byte) ([]byte, error)

var (
	regMu sync.Mutex
	funcs = map[string]Func{}
)

// Register makes fn runnable by name in a child. Call it from an init
// function; registering a name twice panics. It is safe for concurrent use.
func Register(name string, fn Func) {
	regMu.Lock()
	defer regMu.Unlock()
	if _, dup := funcs[name]; dup {
		panic("sandbox: " + name + " registered twice")
	}
	funcs[name] = fn
}

func lookup(name string) Func {
	regMu.Lock()
	defer regMu.Unlock()
	return funcs[name]
}

// request is the header the parent writes to the child's stdin, before the
// input.
type request struct {
	Func     string          `json:"func"`
	Params   json.RawMessage `json:"params,omitempty"`
	InputLen int64           `json:"inputLen"`
	CPU      time.Duration   `json:"cpu"`
	Memory   int64           `json:"memory"`
	Wall     time.Duration   `json:"wall"`
}

// The frames. To the child: a 4-byte big-endian length, the request as
// JSON, then InputLen bytes of input. From the child: frameMagic, an
// 8-byte big-endian length, then that many bytes: a status byte and the
// result (or the error message).
const (
	frameMagic     = "RGSB"
	maxRequestSize = 1 << 20
	statusOK       = 0
	statusErr      = 1
)

// Exit statuses of a child that ends itself.
const (
	exitCPU     = 3 // SIGXCPU: the CPU time limit
	exitWall    = 4 // its own wall-time backstop (the parent should have killed it)
	exitRequest = 5 // an unreadable request or an unknown function
)

// Run runs the function registered as name in a child process with params
// and input, within lim (nil: the defaults), and returns its result and
// what the child used. The child is killed when ctx is done, and Run
// returns ctx's error. It fails with a *LimitError when the child passes a
// limit, a *CrashError when it dies without a result, a *JobError when the
// function returned an error, ErrNested inside a child. It is safe for
// concurrent use.
func Run(ctx context.Context, name string, params, input []byte, lim *Limits) ([]byte, Usage, error) {
	start := time.Now()
	out, ps, err := run(ctx, name, params, input, lim)
	u := Usage{Wall: time.Since(start)}
	if ps != nil {
		u.CPU = ps.UserTime() + ps.SystemTime()
		u.MaxRSS = maxRSS(ps)
	}
	return out, u, err
}

func run(ctx context.Context, name string, params, input []byte, lim *Limits) ([]byte, *os.ProcessState, error) {
	if os.Getenv(envChild) != "" {
		return nil, nil, ErrNested
	}
	if lookup(name) == nil {
		return nil, nil, fmt.Errorf("%w: %q", ErrUnknown, name)
	}
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	l := lim.withDefaults()
	hdr, err := json.Marshal(request{Func: name, Params: params, InputLen: int64(len(input)), CPU: l.CPU, Memory: memoryLimit(l.Memory), Wall: l.Wall})
	if err != nil {
		return nil, nil, fmt.Errorf("sandbox: %w", err)
	}
	c, err := startChild()
	if err != nil {
		return nil, nil, err
	}

	// The child is killed at the wall time or when ctx is done, unless it
	// has been waited for.
	w := &watchdog{p: c.cmd.Process}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		w.watch(ctx, l.Wall, done)
	}()
	go func() {
		defer wg.Done()
		c.send(hdr, input)
	}()

	status, result, readErr := readFrame(c.stdout, l.Output)
	if errors.Is(readErr, errOutputTooLarge) {
		w.kill()
	}
	_, _ = io.Copy(io.Discard, c.stdout) // nothing more is expected: the child's os.Stdout is its stderr
	waitErr := c.cmd.Wait()
	w.reaped()
	close(done)
	wg.Wait()

	wall, stopped := w.outcome()
	ps := c.cmd.ProcessState
	switch {
	case stopped:
		return nil, ps, context.Cause(ctx)
	case wall:
		return nil, ps, &LimitError{Reason: "exceeded " + l.Wall.String()}
	case errors.Is(readErr, errOutputTooLarge):
		return nil, ps, &LimitError{Reason: fmt.Sprintf("answered more than %s", sizeString(l.Output))}
	case readErr == nil && waitErr == nil:
		if status != statusOK {
			return nil, ps, &JobError{Msg: string(result)}
		}
		return result, ps, nil
	}
	return nil, ps, classify(ps, c.stderr.String(), l, readErr)
}

// childProc is a started child process and its pipes.
type childProc struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stdout io.ReadCloser
	stderr *headBuffer // the head of what it wrote to stderr
}

// startChild starts this executable as a child, with the child's
// environment and process attributes, its stdin and stdout piped.
func startChild() (*childProc, error) {
	exe, err := executable()
	if err != nil {
		return nil, fmt.Errorf("sandbox: find this executable: %w", err)
	}
	c := &childProc{cmd: exec.Command(exe), stderr: &headBuffer{max: 16 << 10}}
	c.cmd.Env = childEnv()
	c.cmd.SysProcAttr = sysProcAttr()
	if c.stdin, err = c.cmd.StdinPipe(); err != nil {
		return nil, fmt.Errorf("sandbox: %w", err)
	}
	if c.stdout, err = c.cmd.StdoutPipe(); err != nil {
		return nil, fmt.Errorf("sandbox: %w", err)
	}
	c.cmd.Stderr = c.stderr
	c.cmd.WaitDelay = 2 * time.Second // stderr is not held open past the child's end
	if err := c.cmd.Start(); err != nil {
		return nil, fmt.Errorf("sandbox: start a child process: %w", err)
	}
	return c, nil
}

// send writes the request to the child: the header's length, the header,
// then the input. Errors here (the child died early: a broken pipe) show in
// how the child ended.
func (c *childProc) send(hdr, input []byte) {
	var n [4]byte
	binary.BigEndian.PutUint32(n[:], uint32(len(hdr)))
	if _, err := c.stdin.Write(append(n[:], hdr...)); err == nil {
		_, _ = c.stdin.Write(input)
	}
	_ = c.stdin.Close()
}

// watchdog kills a child process at its wall time or when its context is
// done, never after it has been reaped, and remembers which happened.
type watchdog struct {
	p         *os.Process
	mu        sync.Mutex
	reap      bool
	wallHit   bool
	cancelled bool
}

// kill kills the child's process tree unless it has been reaped.
func (w *watchdog) kill() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.reap {
		killTree(w.p)
	}
}

// reaped records that the child has been waited for.
func (w *watchdog) reaped() {
	w.mu.Lock()
	w.reap = true
	w.mu.Unlock()
}

// watch kills the child after wall or when ctx is done, whichever comes
// first, unless done is closed before.
func (w *watchdog) watch(ctx context.Context, wall time.Duration, done <-chan struct{}) {
	t := time.NewTimer(wall)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
		w.mu.Lock()
		w.wallHit = true
		w.mu.Unlock()
		w.kill()
	case <-ctx.Done():
		w.mu.Lock()
		w.cancelled = true
		w.mu.Unlock()
		w.kill()
	}
}

// outcome reports whether the wall time killed the child, and whether its
// context did.
func (w *watchdog) outcome() (wall, cancelled bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.wallHit, w.cancelled
}

// outOfMemory matches what the Go runtime (and the race detector's
// runtime) prints when an allocation fails under RLIMIT_AS.
var outOfMemory = regexp.MustCompile(`out of memory|cannot allocate memory|failed to allocate|failed to create new OS thread|newosproc|ThreadSanitizer failed`)

// classify says why a child ended without a result.
func classify(ps *os.ProcessState, stderr string, l Limits, readErr error) error {
	code := -1
	if ps != nil {
		code = ps.ExitCode()
	}
	switch {
	case code == exitCPU || cpuKilled(ps, l.CPU):
		return &LimitError{Reason: "used more than " + roundUpSeconds(l.CPU).String() + " of CPU time"}
	case outOfMemory.MatchString(stderr):
		return &LimitError{Reason: fmt.Sprintf("ran out of memory (limit %s)", sizeString(l.Memory))}
	case code == exitWall:
		return &LimitError{Reason: "exceeded " + l.Wall.String()}
	case code == exitRequest:
		return &CrashError{Reason: "refused its request: " + firstLine(stderr)}
	case code == 0:
		return &CrashError{Reason: fmt.Sprintf("answered no result (%v; does the program call sandbox.Main first?)", readErr)}
	}
	if line := crashLine(stderr); line != "" {
		return &CrashError{Reason: "crashed (" + line + ")"}
	}
	if ps != nil {
		return &CrashError{Reason: "crashed (" + ps.String() + ")"}
	}
	return &CrashError{Reason: "crashed"}
}

// crashLine picks the line of a child's stderr that says why it died.
func crashLine(stderr string) string {
	for _, l := range strings.Split(stderr, "\n") {
		l = strings.TrimSpace(l)
		if strings.HasPrefix(l, "fatal error:") || strings.HasPrefix(l, "panic:") {
			return clip(l, 200)
		}
	}
	return clip(firstLine(stderr), 200)
}

func firstLine(s string) string {
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			return l
		}
	}
	return ""
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "") + "…"
}

func roundUpSeconds(d time.Duration) time.Duration {
	return (d + time.Second - 1).Truncate(time.Second)
}

func sizeString(n int64) string {
	switch {
	case n >= 1<<30 && n%(1<<30) == 0:
		return fmt.Sprintf("%d GiB", n>>30)
	case n >= 1<<20:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}

var errOutputTooLarge = errors.New("sandbox: output too large")

// readFrame reads the child's result frame, refusing one longer than max.
func readFrame(r io.Reader, max int64) (byte, []byte, error) {
	var hdr [len(frameMagic) + 8 + 1]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return 0, nil, fmt.Errorf("no result frame: %w", err)
	}
	if string(hdr[:len(frameMagic)]) != frameMagic {
		return 0, nil, errors.New("no result frame: something else on stdout")
	}
	n := binary.BigEndian.Uint64(hdr[len(frameMagic):])
	if n == 0 {
		return 0, nil, errors.New("an empty result frame")
	}
	if n-1 > uint64(max) {
		return 0, nil, errOutputTooLarge
	}
	body := make([]byte, n-1)
	if _, err := io.ReadFull(r, body); err != nil {
		return 0, nil, fmt.Errorf("a cut result frame: %w", err)
	}
	return hdr[len(hdr)-1], body, nil
}

// writeFrame writes a result frame.
func writeFrame(w io.Writer, status byte, body []byte) error {
	var hdr [len(frameMagic) + 8 + 1]byte
	copy(hdr[:], frameMagic)
	binary.BigEndian.PutUint64(hdr[len(frameMagic):], uint64(len(body))+1)
	hdr[len(hdr)-1] = status
	if _, err := w.Write(hdr[:]); err != nil {
		return err
	}
	_, err := w.Write(body)
	return err
}

// childEnv is the environment of a child: none of this process's (API
// keys and tokens stay in the parent) but what the Go runtime and the
// system need, the runtime's settings for a child (one thread for Go code,
// no goroutine dumps on a crash; in a -race build, no second of sleep at
// exit), and the child marker.
func childEnv() []string {
	var env []string
	goRace := ""
	for _, kv := range os.Environ() {
		k, v, _ := strings.Cut(kv, "=")
		switch strings.ToUpper(k) {
		case "PATH", "TMPDIR", "TEMP", "TMP", "SYSTEMROOT", "GODEBUG", "GOCOVERDIR":
			env = append(env, kv)
		case "GORACE":
			goRace = v + " "
		}
	}
	env = append(env, envChild+"=1", "GOMAXPROCS=1", "GOTRACEBACK=none")
	if raceEnabled {
		env = append(env, "GORACE="+goRace+"atexit_sleep_ms=0")
	}
	return env
}

// headBuffer keeps the first max bytes written to it. It is safe for
// concurrent use.
type headBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
	max int
}

func (b *headBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if room := b.max - b.buf.Len(); room > 0 {
		b.buf.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

func (b *headBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// Main runs the function a parent asked for and exits, when this process
// is a child started by Run; otherwise it returns at once. Call it first
// in main (and in the TestMain of packages whose tests call Run).
func Main() {
	if os.Getenv(envChild) == "" {
		return
	}
	os.Exit(child())
}

// child is the child's side of Run.
func child() int {
	// The result frame goes to the real stdout; anything else the
	// function prints goes to stderr.
	out := os.Stdout
	os.Stdout = os.Stderr
	var n [4]byte
	if _, err := io.ReadFull(os.Stdin, n[:]); err != nil {
		fmt.Fprintf(os.Stderr, "sandbox: read the request: %v\n", err)
		return exitRequest
	}
	size := binary.BigEndian.Uint32(n[:])
	if size > maxRequestSize {
		fmt.Fprintf(os.Stderr, "sandbox: a request of %d bytes\n", size)
		return exitRequest
	}
	hdr := make([]byte, size)
	if _, err := io.ReadFull(os.Stdin, hdr); err != nil {
		fmt.Fprintf(os.Stderr, "sandbox: read the request: %v\n", err)
		return exitRequest
	}
	var req request
	if err := json.Unmarshal(hdr, &req); err != nil || req.InputLen < 0 {
		fmt.Fprintf(os.Stderr, "sandbox: a malformed request: %v\n", err)
		return exitRequest
	}
	fn := lookup(req.Func)
	if fn == nil {
		fmt.Fprintf(os.Stderr, "sandbox: no function %q in this program\n", req.Func)
		return exitRequest
	}
	if err := applyLimits(req.CPU, req.Memory); err != nil {
		fmt.Fprintf(os.Stderr, "sandbox: set the limits: %v\n", err)
		return exitRequest
	}
	// Backstops in case the parent is gone: the CPU limit ends a busy
	// child (see applyLimits), this timer an idle one.
	time.AfterFunc(req.Wall+2*time.Second, func() {
		fmt.Fprintln(os.Stderr, "sandbox: wall time limit reached")
		os.Exit(exitWall)
	})
	input := make([]byte, req.InputLen)
	if _, err := io.ReadFull(os.Stdin, input); err != nil {
		fmt.Fprintf(os.Stderr, "sandbox: read the input: %v\n", err)
		return exitRequest
	}
	ctx, cancel := context.WithTimeout(context.Background(), req.Wall)
	defer cancel()
	res, err := fn(ctx, req.Params, input)
	if err != nil {
		err = writeFrame(out, statusErr, []byte(err.Error()))
	} else {
		err = writeFrame(out, statusOK, res)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "sandbox: write the result: %v\n", err)
		return exitRequest
	}
	return 0
}

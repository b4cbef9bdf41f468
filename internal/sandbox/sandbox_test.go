package sandbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestMain lets the test binary act as the child.
func TestMain(m *testing.M) {
	Main()
	os.Exit(m.Run())
}

var sink [][]byte

func init() {
	Register("test-echo", func(_ context.Context, params, input []byte) ([]byte, error) {
		return append(append(params, '|'), input...), nil
	})
	Register("test-print", func(_ context.Context, _, input []byte) ([]byte, error) {
		fmt.Println("stray output that is not a frame")
		os.Stdout.WriteString("more of it\n")
		return input, nil
	})
	Register("test-fail", func(context.Context, []byte, []byte) ([]byte, error) {
		return nil, errors.New("the input is no good")
	})
	Register("test-spin", func(context.Context, []byte, []byte) ([]byte, error) {
		x := 0
		for {
			x++
		}
	})
	Register("test-sleep", func(context.Context, []byte, []byte) ([]byte, error) {
		select {}
	})
	Register("test-alloc", func(context.Context, []byte, []byte) ([]byte, error) {
		for {
			b := make([]byte, 8<<20)
			for i := range b {
				b[i] = 1
			}
			sink = append(sink, b)
		}
	})
	Register("test-overflow", func(context.Context, []byte, []byte) ([]byte, error) {
		debug.SetMaxStack(1 << 20)
		return nil, recurse(0)
	})
	Register("test-panic", func(context.Context, []byte, []byte) ([]byte, error) {
		done := make(chan struct{})
		go func() {
			defer close(done)
			panic("boom in a goroutine")
		}()
		<-done
		return nil, nil
	})
	Register("test-big", func(context.Context, []byte, []byte) ([]byte, error) {
		return bytes.Repeat([]byte("x"), 2<<20), nil
	})
	Register("test-exit", func(context.Context, []byte, []byte) ([]byte, error) {
		os.Exit(0)
		return nil, nil
	})
	Register("test-nested", func(ctx context.Context, _, _ []byte) ([]byte, error) {
		_, _, err := Run(ctx, "test-echo", nil, nil, nil)
		return []byte(fmt.Sprint(err)), nil
	})
}

func recurse(n int) error {
	var pad [256]byte
	if n < 0 {
		return errors.New(string(pad[:]))
	}
	return recurse(n + 1)
}

func TestRunReturnsTheResult(t *testing.T) {
	input := bytes.Repeat([]byte("abc"), 1<<20) // larger than a pipe's buffer
	got, u, err := Run(context.Background(), "test-echo", []byte(`"p"`), input, nil)
	if err != nil {
		t.Fatal(err)
	}
	if u.Wall <= 0 || runtime.GOOS == "linux" && u.MaxRSS < 3<<20 {
		t.Errorf("usage %+v: the child held the 3 MiB input", u)
	}
	if want := append([]byte(`"p"|`), input...); !bytes.Equal(got, want) {
		t.Fatalf("result of %d bytes, want %d", len(got), len(want))
	}
	// What the function prints does not spoil the frame.
	got, _, err = Run(context.Background(), "test-print", nil, []byte("kept"), nil)
	if err != nil || string(got) != "kept" {
		t.Fatalf("printing function: %q %v", got, err)
	}
	_, _, err = Run(context.Background(), "test-fail", nil, nil, nil)
	var je *JobError
	if !errors.As(err, &je) || je.Msg != "the input is no good" {
		t.Fatalf("failing function: %v", err)
	}
	if _, _, err := Run(context.Background(), "no-such", nil, nil, nil); !errors.Is(err, ErrUnknown) {
		t.Fatalf("unknown function: %v", err)
	}
	// A child runs no children.
	got, _, err = Run(context.Background(), "test-nested", nil, nil, nil)
	if err != nil || !strings.Contains(string(got), ErrNested.Error()) {
		t.Fatalf("nested: %q %v", got, err)
	}
}

// TestLimits: each way a child can go wrong ends in its own error, in
// about the time its limit allows.
func TestLimits(t *testing.T) {
	cases := []struct {
		fn     string
		lim    Limits
		want   error
		says   string
		within time.Duration
	}{
		// Each limit, and not the wall time behind it, ends the child
		// (the bounds on the time taken allow for a loaded machine).
		{"test-sleep", Limits{Wall: 500 * time.Millisecond}, ErrLimit, "exceeded 500ms", 10 * time.Second},
		{"test-spin", Limits{Wall: 2 * time.Minute, CPU: time.Second}, ErrLimit, "used more than 1s of CPU time", time.Minute},
		{"test-alloc", Limits{Wall: 2 * time.Minute, Memory: 64 << 20}, ErrLimit, "ran out of memory (limit 64 MiB)", time.Minute},
		{"test-big", Limits{Output: 1 << 20}, ErrLimit, "answered more than 1 MiB", 20 * time.Second},
		{"test-overflow", Limits{}, ErrCrashed, "crashed (fatal error: stack overflow)", 20 * time.Second},
		{"test-panic", Limits{}, ErrCrashed, "crashed (panic: boom in a goroutine", 20 * time.Second},
		{"test-exit", Limits{}, ErrCrashed, "answered no result", 20 * time.Second},
	}
	for _, c := range cases {
		start := time.Now()
		_, u, err := Run(context.Background(), c.fn, nil, nil, &c.lim)
		took := time.Since(start)
		if c.fn == "test-alloc" && !raceEnabled && runtime.GOOS == "linux" && u.MaxRSS > c.lim.Memory+32<<20 {
			t.Errorf("test-alloc: peak RSS %d MiB past its limit of %d MiB", u.MaxRSS>>20, c.lim.Memory>>20)
		}
		if !errors.Is(err, c.want) || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%s: %v, want %v saying %q", c.fn, err, c.want, c.says)
		}
		if took > c.within {
			t.Errorf("%s: took %s, want at most %s", c.fn, took, c.within)
		}
		t.Logf("%-13s %-60v in %s", c.fn, err, took.Round(time.Millisecond))
	}
}

// TestCancel: a done context kills the child at once.
func TestCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(300*time.Millisecond, cancel)
	start := time.Now()
	_, _, err := Run(ctx, "test-spin", nil, nil, &Limits{Wall: time.Minute})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: %v", err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Fatalf("took %s to stop", took)
	}
	if _, _, err := Run(ctx, "test-echo", nil, nil, nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("already cancelled: %v", err)
	}
}

// TestChildDiesWithItsParent: a child whose parent is killed does not run
// on (Linux: the parent-death signal). The parent is this test binary,
// started again to run only this test in parent mode.
func TestChildDiesWithItsParent(t *testing.T) {
	if os.Getenv("SANDBOX_TEST_PARENT") == "1" {
		_, _, err := Run(context.Background(), "test-sleep", nil, nil, &Limits{Wall: time.Hour})
		t.Fatalf("the parent's run returned: %v", err)
	}
	if runtime.GOOS != "linux" {
		t.Skip("the parent-death signal is Linux's")
	}
	parent := exec.Command(os.Args[0], "-test.run=^TestChildDiesWithItsParent$")
	parent.Env = append(os.Environ(), "SANDBOX_TEST_PARENT=1")
	if err := parent.Start(); err != nil {
		t.Fatal(err)
	}
	defer parent.Process.Kill()
	var child int
	for deadline := time.Now().Add(30 * time.Second); child == 0; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the parent started no child")
		}
		if kids := childrenOf(parent.Process.Pid); len(kids) > 0 {
			child = kids[0]
		}
	}
	if err := parent.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = parent.Wait()
	for deadline := time.Now().Add(5 * time.Second); alive(child); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			syscall.Kill(child, syscall.SIGKILL)
			t.Fatalf("child %d still runs after its parent was killed", child)
		}
	}
}

// childrenOf lists the child processes of pid.
func childrenOf(pid int) []int {
	var out []int
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", pid))
	for _, f := range tasks {
		b, _ := os.ReadFile(f)
		for _, f := range strings.Fields(string(b)) {
			if n, err := strconv.Atoi(f); err == nil {
				out = append(out, n)
			}
		}
	}
	return out
}

// alive reports whether a process exists and is not a zombie.
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}

func TestClassify(t *testing.T) {
	l := (&Limits{}).withDefaults()
	for _, c := range []struct {
		stderr string
		want   string
	}{
		{"runtime: out of memory: cannot allocate 16777216-byte block (490471424 in use)\nfatal error: out of memory\n", "ran out of memory (limit 512 MiB)"},
		{"==352==ERROR: ThreadSanitizer failed to allocate 0x2000000 (33554432) bytes\n", "ran out of memory"},
		{"runtime: goroutine stack exceeds 1000000000-byte limit\nfatal error: stack overflow\n", "crashed (fatal error: stack overflow)"},
		{"", "crashed"},
	} {
		if err := classify(nil, c.stderr, l, nil); !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want %q", c.stderr, err, c.want)
		}
	}
}

package local

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"

	"github.com/ragmem/ragmem/index"
	"github.com/ragmem/ragmem/index/indextest"
)

// TestConcurrentWritersAndReaders has eight goroutines adding, replacing and
// removing sources (each its own, so that the final state is known) while
// four others search, list and check, and a ninth forces checkpoints. The
// store must end in exactly the state the writers' acknowledged writes
// describe, consistent, and the same after reopening. Run under -race.
func TestConcurrentWritersAndReaders(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	b := mustOpen(t, dir, &Options{Logger: quietLogger(), CheckpointBytes: 32 << 10, CheckpointRatio: -1})
	const writers, opsEach = 8, 40
	finals := make([]state, writers)
	var wg sync.WaitGroup
	stop := make(chan struct{})
	errs := make(chan error, 64)
	for g := 0; g < writers; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(g), 1))
			st := state{}
			for i := 0; i < opsEach; i++ {
				src := fmt.Sprintf("https://w/%d-%d", g, rng.IntN(4))
				var err error
				if rng.IntN(4) == 0 {
					err = b.Apply(ctx, removeSource(src))
					delete(st, src)
				} else {
					v := 1 + rng.IntN(1000)
					err = b.Apply(ctx, putVersion(src, v))
					st[src] = v
				}
				if err != nil {
					errs <- err
					return
				}
			}
			finals[g] = st
		}(g)
	}
	var readers sync.WaitGroup
	for r := 0; r < 4; r++ {
		readers.Add(1)
		go func(r int) {
			defer readers.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				var err error
				switch (i + r) % 5 {
				case 0:
					_, err = b.SearchText(ctx, "durable words", 10, index.Filter{})
				case 1:
					_, err = b.SearchVector(ctx, indextest.Vec(uint64(i)), 10, index.Filter{})
				case 2:
					_, _, err = b.Sources(ctx, index.Filter{}, 0, 0)
				case 3:
					_, err = b.Records(ctx, index.Filter{SourceURL: fmt.Sprintf("https://w/%d-0", i%writers)})
				case 4:
					// Check sees a stable view: no mutation is half-applied.
					var probs []Problem
					if probs, err = b.Check(ctx); err == nil && len(probs) > 0 {
						err = fmt.Errorf("check during writes: %v", probs)
					}
				}
				if err != nil {
					errs <- err
					return
				}
			}
		}(r)
	}
	readers.Add(1)
	go func() {
		defer readers.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			if err := b.Checkpoint(ctx); err != nil {
				errs <- err
				return
			}
		}
	}()
	wg.Wait()
	close(stop)
	readers.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	want := state{}
	for _, st := range finals {
		for k, v := range st {
			want[k] = v
		}
	}
	expectState(t, b, want)
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	b = mustOpen(t, dir, nil)
	defer b.Close()
	expectState(t, b, want)
}

const lockChildEnv = "RAGMEM_LOCK_CHILD"

// lockChild opens the store, says so, and holds it until stdin closes.
func lockChild(dir string) int {
	b, err := Open(context.Background(), dir, &Options{Logger: quietLogger()})
	if err != nil {
		fmt.Println("error", err)
		return 3
	}
	fmt.Println("open")
	_, _ = io.Copy(io.Discard, os.Stdin)
	if err := b.Close(); err != nil {
		return 4
	}
	return 0
}

// TestSecondProcessIsRefused opens a store in another process; opening it
// here must fail at once naming that process, and succeed once it is gone.
func TestSecondProcessIsRefused(t *testing.T) {
	dir := t.TempDir()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), lockChildEnv+"="+dir)
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, _ := bufio.NewReader(stdout).ReadString('\n')
	if strings.TrimSpace(line) != "open" {
		t.Fatalf("child: %q", line)
	}
	_, err = Open(context.Background(), dir, nil)
	want := fmt.Sprintf("store is locked by pid %d", cmd.Process.Pid)
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("second process: err = %v, want it to say %q", err, want)
	}
	stdin.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("child: %v", err)
	}
	b := mustOpen(t, dir, nil)
	b.Close()
}

package local

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ragmem/ragmem/index"
	"github.com/ragmem/ragmem/index/driver"
)

// The crash suite runs a store in a child process (this test binary,
// re-executed), lets it add, replace and remove sources from two goroutines
// at full speed, and kills it with SIGKILL at a random moment. The parent
// then reopens the store and checks that it opens, that Check is clean, that
// every write the child had acknowledged is there, that every source is
// wholly one version, and that each write in flight at the kill is either
// wholly applied or not at all, across all the sources it touched.
//
//	go test -run CrashSuite ./internal/index/local                        # 50 kill points (CI)
//	RAGMEM_CRASH_POINTS=300 go test -run CrashSuite -v ./internal/index/local   # the full run
//	RAGMEM_CRASH_SEED=42 ...                                     # replay a run

const (
	crashChildEnv     = "RAGMEM_CRASH_CHILD"
	crashChildSeedEnv = "RAGMEM_CRASH_CHILD_SEED"
	crashWriters      = 2
	crashSources      = 6 // per writer
)

func TestMain(m *testing.M) {
	if dir := os.Getenv(crashChildEnv); dir != "" {
		os.Exit(crashChild(dir))
	}
	if dir := os.Getenv(lockChildEnv); dir != "" {
		os.Exit(lockChild(dir))
	}
	os.Exit(m.Run())
}

// crashChild is the child process: it writes until it is killed.
func crashChild(dir string) int {
	seed, _ := strconv.ParseUint(os.Getenv(crashChildSeedEnv), 10, 64)
	var outMu sync.Mutex
	say := func(format string, args ...any) {
		outMu.Lock()
		defer outMu.Unlock()
		os.Stdout.WriteString(fmt.Sprintf(format, args...) + "\n")
	}
	ctx := context.Background()
	b, err := Open(ctx, dir, &Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), CheckpointBytes: 16 << 10, CheckpointRatio: -1})
	if err != nil {
		say("openfail %v", err)
		return 3
	}
	say("open")
	var wg sync.WaitGroup
	for g := 0; g < crashWriters; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(seed, uint64(g)))
			src := func() string { return fmt.Sprintf("https://s/%d-%d", g, rng.IntN(crashSources)) }
			for i := 0; i < 1_000_000; i++ {
				var err error
				switch r := rng.IntN(100); {
				case r < 50:
					s, v := src(), 1+rng.IntN(1_000_000)
					say("begin %d put %s %d", g, s, v)
					err = b.Apply(ctx, putVersion(s, v))
				case r < 70:
					s := src()
					say("begin %d rm %s", g, s)
					err = b.Apply(ctx, removeSource(s))
				case r < 90:
					bt := &driver.Batch{}
					line := fmt.Sprintf("begin %d multi", g)
					seen := map[string]bool{}
					for k := 0; k < 3; k++ {
						s, v := src(), 1+rng.IntN(1_000_000)
						if seen[s] {
							continue
						}
						seen[s] = true
						line += fmt.Sprintf(" %s %d", s, v)
						bt.DeleteSources = append(bt.DeleteSources, s)
						bt.Put = append(bt.Put, versionRecords(s, v)...)
					}
					say("%s", line)
					err = b.Apply(ctx, bt)
				default:
					v := 1 + rng.IntN(1_000_000)
					say("begin %d meta k%d %d", g, g, v)
					err = b.SetMeta(ctx, fmt.Sprintf("k%d", g), strconv.Itoa(v))
				}
				if err != nil {
					say("fail %d %v", g, err)
					os.Exit(4)
				}
				say("ack %d", g)
			}
		}(g)
	}
	wg.Wait()
	return 0
}

// crashOp is a write the parent saw begin.
type crashOp struct {
	kind string         // put, rm, multi, meta
	srcs map[string]int // source → new version (0: removed)
	meta [2]string      // key, value
}

type crashStats struct {
	points, duringOpen, idle int
	byKind                   map[string]int // kill points with a write of this kind in flight
	duringCheckpoint         int
	acked                    int
	tornTails                int // reopens that cut an unfinished journal write
	bleveBehind              int // reopens where bleve had not persisted the last operations
	bleveOpsReplayed         int // journal operations bleve had missed, in all
	bleveRebuilt             int // reopens that rebuilt bleve
	reopenFailures           int
	inconsistencies          int
	lostAcked                int
}

func (s *crashStats) String() string {
	kinds := make([]string, 0, len(s.byKind))
	for k, n := range s.byKind {
		kinds = append(kinds, fmt.Sprintf("%s %d", k, n))
	}
	sort.Strings(kinds)
	return fmt.Sprintf("kill points %d (in flight: %s; during open %d; between writes %d; during a checkpoint %d); acknowledged writes %d; "+
		"recovery: torn journal tails cut %d, bleve behind %d (%d operations replayed), bleve rebuilt %d; "+
		"reopen failures %d; inconsistencies %d; lost acknowledged writes %d",
		s.points, strings.Join(kinds, ", "), s.duringOpen, s.idle, s.duringCheckpoint, s.acked,
		s.tornTails, s.bleveBehind, s.bleveOpsReplayed, s.bleveRebuilt,
		s.reopenFailures, s.inconsistencies, s.lostAcked)
}

func TestCrashSuite(t *testing.T) {
	points := 50
	if v := os.Getenv("RAGMEM_CRASH_POINTS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("RAGMEM_CRASH_POINTS=%q", v)
		}
		points = n
	}
	seed := uint64(time.Now().UnixNano())
	if v := os.Getenv("RAGMEM_CRASH_SEED"); v != "" {
		seed, _ = strconv.ParseUint(v, 10, 64)
	}
	t.Logf("crash suite: %d kill points, seed %d (RAGMEM_CRASH_SEED=%d replays it)", points, seed, seed)
	rng := rand.New(rand.NewPCG(seed, 7))
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "store")
	model := state{}
	meta := map[string]string{}
	stats := &crashStats{byKind: map[string]int{}}
	ctx := context.Background()

	for i := 0; i < points; i++ {
		cmd := exec.Command(exe, "-test.run=^$")
		cmd.Env = append(os.Environ(), crashChildEnv+"="+dir, fmt.Sprintf("%s=%d", crashChildSeedEnv, rng.Uint64()))
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		var stderr strings.Builder
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		lines := make(chan string, 1024)
		go func() {
			sc := bufio.NewScanner(stdout)
			for sc.Scan() {
				lines <- sc.Text()
			}
			close(lines)
		}()
		inflight := make([]*crashOp, crashWriters)
		opened := false
		handle := func(line string) {
			f := strings.Fields(line)
			switch {
			case len(f) == 0:
			case f[0] == "open":
				opened = true
			case f[0] == "begin" && len(f) >= 3:
				g, _ := strconv.Atoi(f[1])
				op := &crashOp{kind: f[2], srcs: map[string]int{}}
				switch f[2] {
				case "put":
					v, _ := strconv.Atoi(f[4])
					op.srcs[f[3]] = v
					if _, ok := model[f[3]]; !ok {
						op.kind = "add"
					} else {
						op.kind = "replace"
					}
				case "rm":
					op.srcs[f[3]] = 0
					op.kind = "remove"
				case "multi":
					for k := 3; k+1 < len(f); k += 2 {
						v, _ := strconv.Atoi(f[k+1])
						op.srcs[f[k]] = v
					}
				case "meta":
					op.meta = [2]string{f[3], f[4]}
				}
				inflight[g] = op
			case f[0] == "ack":
				g, _ := strconv.Atoi(f[1])
				if op := inflight[g]; op != nil {
					applyCrashOp(model, meta, op)
					stats.acked++
				}
				inflight[g] = nil
			default:
				t.Errorf("child: %s", line)
			}
		}
		// Let it run: sometimes kill it while it opens (and recovers) the
		// store, usually once it is writing.
		early := rng.IntN(10) == 0
		deadline := time.Now().Add(time.Duration(rng.IntN(20)) * time.Millisecond)
		if !early {
			for line := range lines {
				handle(line)
				if opened {
					break
				}
			}
			deadline = time.Now().Add(time.Duration(5+rng.IntN(80)) * time.Millisecond)
		}
		time.Sleep(time.Until(deadline))
		_ = cmd.Process.Signal(syscall.SIGKILL)
		for line := range lines {
			handle(line)
		}
		_ = cmd.Wait()
		stats.points++
		if !opened {
			stats.duringOpen++
		}
		inFlight := false
		for _, op := range inflight {
			if op != nil {
				stats.byKind[op.kind]++
				inFlight = true
			}
		}
		if opened && !inFlight {
			stats.idle++
		}
		if tmps, _ := filepath.Glob(filepath.Join(dir, "*.tmp")); len(tmps) > 0 {
			stats.duringCheckpoint++
		}

		// Reopen and verify.
		var logBuf strings.Builder
		b, err := Open(ctx, dir, &Options{Logger: slog.New(slog.NewTextHandler(&logBuf, nil))})
		if err != nil {
			stats.reopenFailures++
			t.Errorf("kill point %d: reopen failed: %v\nchild stderr: %s", i, err, stderr.String())
			kept := filepath.Join(t.TempDir(), fmt.Sprintf("failed-%d", i))
			_ = os.Rename(dir, kept)
			model, meta = state{}, map[string]string{}
			continue
		}
		bad := func(format string, args ...any) {
			stats.inconsistencies++
			t.Errorf("kill point %d: "+format+"\nrecovery log:\n%s", append([]any{i}, append(args, logBuf.String())...)...)
		}
		r := b.Recovery()
		if r.Lost != "" {
			bad("recovery reports lost data: %s", r.Lost)
		}
		if r.TornTailBytes > 0 {
			stats.tornTails++
		}
		if r.BleveSeqOnOpen < r.SequenceOnOpen {
			stats.bleveBehind++
			stats.bleveOpsReplayed += int(r.SequenceOnOpen - r.BleveSeqOnOpen)
		}
		if r.BleveRebuilt {
			stats.bleveRebuilt++
		}
		if probs, err := b.Check(ctx); err != nil || len(probs) > 0 {
			bad("check: %v %v", err, probs)
		}
		got, err := readState(ctx, b)
		if err != nil {
			bad("%v", err)
			got = state{}
		}
		if n := len(got); n > 0 {
			hits, err := b.SearchText(ctx, "durable", 1000, index.Filter{})
			st, _ := b.Stats(ctx)
			if err != nil || len(hits) != st.Records {
				bad("full-text search finds %d of %d chunks (%v)", len(hits), st.Records, err)
			}
		}
		// Writes in flight: wholly applied or not at all.
		want := model.clone()
		wantMeta := map[string]string{}
		for k, v := range meta {
			wantMeta[k] = v
		}
		for _, op := range inflight {
			if op == nil {
				continue
			}
			if op.kind == "meta" {
				if v, _, _ := b.Meta(ctx, op.meta[0]); v == op.meta[1] {
					wantMeta[op.meta[0]] = v
				}
				continue
			}
			allNew, allOld := true, true
			for s, v := range op.srcs {
				old, had := model[s]
				now, has := got[s]
				if !(v == 0 && !has || v != 0 && has && now == v) {
					allNew = false
				}
				if !(had == has && (!had || old == now)) {
					allOld = false
				}
			}
			switch {
			case allNew:
				applyCrashOp(want, wantMeta, op)
			case allOld:
			default:
				bad("a %s write was applied in part: wrote %v, store has %v, had %v", op.kind, op.srcs, got, model)
			}
		}
		for s, v := range want {
			if got[s] != v {
				stats.lostAcked++
				t.Errorf("kill point %d: acknowledged version %d of %s is lost; store has %v", i, v, s, got)
			}
		}
		for s := range got {
			if _, ok := want[s]; !ok {
				bad("source %s (v%d) is present but was removed or never written", s, got[s])
			}
		}
		for k, v := range wantMeta {
			if g, _, _ := b.Meta(ctx, k); g != v {
				stats.lostAcked++
				t.Errorf("kill point %d: meta %s = %q, want %q", i, k, g, v)
			}
		}
		model, meta = got, wantMeta
		if rng.IntN(4) == 0 {
			abandon(b) // crash again right after recovery
		} else if err := b.Close(); err != nil {
			t.Errorf("kill point %d: close: %v", i, err)
		}
	}
	t.Logf("crash suite: %v", stats)
	for _, k := range []string{"add", "replace", "remove"} {
		if stats.byKind[k] == 0 && points >= 50 {
			t.Errorf("no kill point landed during a %s; the run does not cover it", k)
		}
	}
}

func applyCrashOp(s state, meta map[string]string, op *crashOp) {
	if op.kind == "meta" {
		meta[op.meta[0]] = op.meta[1]
		return
	}
	for src, v := range op.srcs {
		if v == 0 {
			delete(s, src)
		} else {
			s[src] = v
		}
	}
}

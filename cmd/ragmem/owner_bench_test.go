package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ragmem/ragmem/index"
	"github.com/ragmem/ragmem/internal/benchdata"
	"github.com/ragmem/ragmem/rag"
)

// ownerBenchChunks is the store size of BenchmarkSearchThroughOwner.
const ownerBenchChunks = 25_000

// benchStore returns a data directory holding a store of n synthetic
// one-chunk documents (benchdata, 110 words each, the lexical embedder),
// built once and kept in the temporary directory (or in
// $RAGMEM_BENCH_STORE) for later runs, and queries known to hit it.
func benchStore(b *testing.B, n int) (string, []string) {
	b.Helper()
	dir := os.Getenv("RAGMEM_BENCH_STORE")
	if dir == "" {
		dir = filepath.Join(os.TempDir(), fmt.Sprintf("ragmem-owner-bench-%d", n))
	}
	doc := func(i int) benchdata.Doc { return benchdata.NewSynthDoc(int64(i), i, 110) }
	var queries []string
	qs := benchdata.NewSynth(int64(n))
	for i := range 50 {
		queries = append(queries, qs.KnownItem(fmt.Sprint(i), doc(i*n/50)).Text)
	}
	ctx := context.Background()
	quiet := slog.New(slog.DiscardHandler)
	if _, err := os.Stat(filepath.Join(dir, "closed.rgm")); err == nil {
		eng, err := rag.Open(ctx, dir, &rag.Options{Logger: quiet})
		if err == nil {
			st, _ := eng.Stats(ctx)
			eng.Close()
			if st.ChunkCount == n {
				return dir, queries
			}
		}
	}
	os.RemoveAll(dir)
	start := time.Now()
	eng, err := rag.Open(ctx, dir, &rag.Options{Logger: quiet})
	if err != nil {
		b.Fatal(err)
	}
	for lo := 0; lo < n; lo += 1000 {
		docs := make([]index.Document, 0, 1000)
		for i := lo; i < min(lo+1000, n); i++ {
			d := doc(i)
			docs = append(docs, index.Document{SourceURL: "bench://doc/" + d.ID, Title: d.Title, Content: d.Text})
		}
		if _, err := eng.IndexDocuments(ctx, docs); err != nil {
			b.Fatal(err)
		}
	}
	st, _ := eng.Stats(ctx)
	if err := eng.Close(); err != nil {
		b.Fatal(err)
	}
	if st.ChunkCount != n {
		b.Fatalf("the store has %d chunks, want %d (documents must make one chunk each)", st.ChunkCount, n)
	}
	b.Logf("built a %d-chunk store in %s in %s", n, dir, time.Since(start).Round(time.Second))
	return dir, queries
}

// buildBinary builds ragmem (without the race detector: the figure is a
// user's) into a temporary directory.
func buildBinary(b *testing.B) string {
	b.Helper()
	bin := filepath.Join(b.TempDir(), "ragmem")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		b.Fatalf("build: %v\n%s", err, out)
	}
	return bin
}

// BenchmarkSearchThroughOwner measures `ragmem search` end to end, process
// start included, as a user runs it: the real binary, executed once per
// search, on a 25,000-chunk store owned by a running `ragmem serve`
// (client mode), and, for comparison, with no owner (the command opens the
// store itself), and `ragmem --help` (process start alone). It reports the
// median and 95th percentile in ms.
//
//	go test -run xxx -bench SearchThroughOwner -benchtime 200x ./cmd/ragmem
func BenchmarkSearchThroughOwner(b *testing.B) {
	bin := buildBinary(b)
	dir, queries := benchStore(b, ownerBenchChunks)
	env := append(os.Environ(), "RAGMEM_EMBEDDER=", "RAGMEM_DIR=")
	run := func(args ...string) time.Duration {
		cmd := exec.Command(bin, args...)
		cmd.Env = env
		cmd.Stdout, cmd.Stderr = io.Discard, io.Discard
		start := time.Now()
		if err := cmd.Run(); err != nil {
			b.Fatalf("ragmem %s: %v", strings.Join(args, " "), err)
		}
		return time.Since(start)
	}
	report := func(b *testing.B, ds []time.Duration) {
		slices.Sort(ds)
		q := func(p float64) float64 { return float64(ds[int(p*float64(len(ds)-1))].Microseconds()) / 1000 }
		b.ReportMetric(q(0.5), "p50-ms")
		b.ReportMetric(q(0.95), "p95-ms")
		b.ReportMetric(0, "ns/op")
	}
	b.Run("help", func(b *testing.B) {
		var ds []time.Duration
		for b.Loop() {
			ds = append(ds, run("--help"))
		}
		report(b, ds)
	})
	b.Run("no-owner", func(b *testing.B) {
		var ds []time.Duration
		for i := range min(b.N, 5) { // each opens the whole store: a few are enough
			ds = append(ds, run("--dir", dir, "search", queries[i%len(queries)]))
		}
		report(b, ds)
	})
	b.Run("serve-owner", func(b *testing.B) {
		cmd := exec.Command(bin, "--dir", dir, "serve", "--addr", "127.0.0.1:0")
		cmd.Env = env
		out, _ := cmd.StdoutPipe()
		cmd.Stderr = io.Discard
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		defer func() {
			cmd.Process.Signal(os.Interrupt)
			cmd.Wait()
		}()
		sc := bufio.NewScanner(out)
		for sc.Scan() && !strings.Contains(sc.Text(), "go through this server") {
		}
		go io.Copy(io.Discard, out)
		for i := range 10 { // warm the page cache and the owner
			run("--dir", dir, "search", queries[i%len(queries)])
		}
		var ds []time.Duration
		i := 0
		for b.Loop() {
			ds = append(ds, run("--dir", dir, "search", queries[i%len(queries)]))
			i++
		}
		report(b, ds)
	})
}

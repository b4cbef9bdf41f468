// Command ragmem-load is ragmem's load test: concurrent clients mixing page
// indexing, search and context requests against a ragmem server, with
// throughput, p50/p99 latency and errors per operation.
//
// By default it starts its own server in a temporary directory on a free
// loopback port, fills it with synthetic pages up to -chunks chunks, and runs
// -clients clients for -duration:
//
//	go run ./cmd/ragmem-load                              # 32 clients, 60 s, 10k chunks
//	go run ./cmd/ragmem-load -clients 8 -duration 5s -chunks 1000
//
// With -url it drives a running server instead (loopback addresses only;
// start that server with --rate-limit 0 so that the limiter does not shape
// the run):
//
//	go run ./cmd/ragmem-load -url http://127.0.0.1:7437 -token "$(ragmem token show)"
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/ragmem/ragmem/internal/server"
	"github.com/ragmem/ragmem/internal/server/loadtest"
	"github.com/ragmem/ragmem/rag"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "ragmem-load: "+err.Error())
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("ragmem-load", flag.ContinueOnError)
	base := fs.String("url", "", "server to drive (loopback only); default: start one in a temporary directory")
	token := fs.String("token", "", "bearer token for -url")
	clients := fs.Int("clients", 32, "concurrent clients")
	duration := fs.Duration("duration", 60*time.Second, "how long to run")
	maxReq := fs.Int("max-requests", 1_000_000, "stop after this many requests")
	chunks := fs.Int("chunks", 10_000, "fill the store to at least this many chunks first")
	mix := fs.String("mix", "1:6:3", "relative weights of index:search:context requests")
	seed := fs.Uint64("seed", 1, "corpus and request seed")
	asJSON := fs.Bool("json", false, "print the report as JSON")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the run (client and in-process server) to this file")
	if err := fs.Parse(args); err != nil {
		return err
	}
	var m [3]int
	parts := strings.Split(*mix, ":")
	if len(parts) != 3 {
		return fmt.Errorf("-mix %q: want three weights like 1:6:3", *mix)
	}
	for i, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 {
			return fmt.Errorf("-mix %q: want three non-negative weights", *mix)
		}
		m[i] = n
	}
	cfg := loadtest.Config{BaseURL: *base, Token: *token, Clients: *clients, Duration: *duration, MaxRequests: *maxReq, Mix: m, Seed: *seed}
	if *base == "" {
		stopServer, url, tok, err := startServer(ctx)
		if err != nil {
			return err
		}
		defer stopServer()
		cfg.BaseURL, cfg.Token = url, tok
	} else if err := loadtest.CheckLoopback(*base); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "ragmem-load: filling %s to %d chunks…\n", cfg.BaseURL, *chunks)
	t0 := time.Now()
	have, err := loadtest.Seed(ctx, cfg, *chunks, 5, 4)
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "ragmem-load: store has %d chunks (%.1f s); running %d clients for %s (GOMAXPROCS %d)…\n", have, time.Since(t0).Seconds(), cfg.Clients, cfg.Duration, runtime.GOMAXPROCS(0))
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	rep, err := loadtest.Run(ctx, cfg)
	if err != nil {
		return err
	}
	if *asJSON {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		if err := enc.Encode(rep); err != nil {
			return err
		}
	} else {
		fmt.Fprint(out, rep.String())
	}
	if rep.Errors > 0 {
		return errors.New("the run had errors")
	}
	return nil
}

// startServer runs a ragmem server in a temporary directory on a free
// loopback port, with the rate limit off.
func startServer(ctx context.Context) (stop func(), url, token string, err error) {
	dir, err := os.MkdirTemp("", "ragmem-load-*")
	if err != nil {
		return nil, "", "", err
	}
	token, _, err = server.EnsureToken(dir)
	if err != nil {
		os.RemoveAll(dir)
		return nil, "", "", err
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	srv, err := server.New(ctx, dir, &server.Options{
		Logger: log, RateLimit: -1,
		Open: func(ctx context.Context, d string) (*rag.Engine, error) {
			return rag.Open(ctx, d, &rag.Options{Logger: log, QueueSize: 4096})
		},
	})
	if err != nil {
		os.RemoveAll(dir)
		return nil, "", "", err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		srv.Close()
		os.RemoveAll(dir)
		return nil, "", "", err
	}
	sctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan error, 1)
	go func() { done <- srv.Run(sctx, ln, nil) }()
	stop = func() {
		cancel()
		if err := <-done; err != nil && !errors.Is(err, http.ErrServerClosed) {
			fmt.Fprintln(os.Stderr, "ragmem-load: server:", err)
		}
		os.RemoveAll(dir)
	}
	return stop, "http://" + ln.Addr().String(), token, nil
}

//go:build unix

package sandbox

import (
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// killTree kills the child and its process group (it leads one of its
// own). The group is signalled only while the child is still there (the
// Process handle knows, on Linux through a pidfd), so that a number reused
// by another process is not.
func killTree(p *os.Process) {
	if p.Signal(syscall.Signal(0)) == nil {
		_ = syscall.Kill(-p.Pid, syscall.SIGKILL)
	}
	_ = p.Kill()
}

// applyLimits sets the child's own limits: CPU time (SIGXCPU at the soft
// limit, which ends the child with exitCPU; SIGKILL from the kernel a
// second later) and, where the address space already mapped can be read,
// memory beyond it.
func applyLimits(cpu time.Duration, memory int64) error {
	xcpu := make(chan os.Signal, 1)
	signal.Notify(xcpu, syscall.SIGXCPU)
	go func() {
		<-xcpu
		fmt.Fprintln(os.Stderr, "sandbox: CPU time limit reached")
		os.Exit(exitCPU)
	}()
	secs := uint64(roundUpSeconds(cpu) / time.Second)
	if err := lower(syscall.RLIMIT_CPU, secs, secs+1); err != nil {
		return fmt.Errorf("RLIMIT_CPU: %w", err)
	}
	if memory <= 0 {
		return nil
	}
	mapped, ok := mappedBytes()
	if !ok {
		return nil
	}
	limit := uint64(mapped) + uint64(memory)
	if err := lower(syscall.RLIMIT_AS, limit, limit); err != nil {
		return fmt.Errorf("RLIMIT_AS: %w", err)
	}
	setSoftMemoryLimit(memory)
	return nil
}

// lower sets a limit to at most cur (soft) and max (hard), never above
// the limits the process already has.
func lower(resource int, cur, max uint64) error {
	var old syscall.Rlimit
	if err := syscall.Getrlimit(resource, &old); err != nil {
		return err
	}
	r := syscall.Rlimit{Cur: min(cur, old.Max), Max: min(max, old.Max)}
	r.Cur = min(r.Cur, r.Max)
	return syscall.Setrlimit(resource, &r)
}

// mappedBytes is the address space this process has mapped (VmSize in
// /proc/self/status), where the system says.
func mappedBytes() (int64, bool) {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, false
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmSize:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil {
				return 0, false
			}
			return kb << 10, true
		}
	}
	return 0, false
}

// cpuKilled reports whether a child was killed by the kernel for its CPU
// time: by SIGXCPU, or by SIGKILL after using up its CPU limit.
func cpuKilled(ps *os.ProcessState, cpu time.Duration) bool {
	if ps == nil {
		return false
	}
	ws, ok := ps.Sys().(syscall.WaitStatus)
	if !ok || !ws.Signaled() {
		return false
	}
	switch ws.Signal() {
	case syscall.SIGXCPU:
		return true
	case syscall.SIGKILL:
		return ps.UserTime()+ps.SystemTime() >= roundUpSeconds(cpu)
	}
	return false
}

// maxRSS is a finished child's peak resident set in bytes (Linux counts
// kilobytes, the BSDs and macOS bytes).
func maxRSS(ps *os.ProcessState) int64 {
	ru, ok := ps.SysUsage().(*syscall.Rusage)
	if !ok {
		return 0
	}
	if runtime.GOOS == "darwin" || runtime.GOOS == "ios" {
		return ru.Maxrss
	}
	return ru.Maxrss << 10
}

//go:build !unix

package sandbox

import (
	"os"
	"syscall"
	"time"
)

// sysProcAttr has nothing to set here.
func sysProcAttr() *syscall.SysProcAttr { return nil }

// killTree kills the child.
func killTree(p *os.Process) { _ = p.Kill() }

// applyLimits has no resource limits to set here: the parent's wall time
// and output bounds are all that hold.
func applyLimits(time.Duration, int64) error { return nil }

// cpuKilled is false: no CPU limit is set here.
func cpuKilled(*os.ProcessState, time.Duration) bool { return false }

// maxRSS is not known here.
func maxRSS(*os.ProcessState) int64 { return 0 }

// executable is the program to start again.
func executable() (string, error) { return os.Executable() }

//go:build unix && !linux

package sandbox

import (
	"os"
	"syscall"
)

// sysProcAttr puts the child in a process group of its own, so that it can
// be killed with whatever it started.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}

// executable is the program to start again.
func executable() (string, error) { return os.Executable() }

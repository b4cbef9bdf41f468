package sandbox

import (
	"os"
	"syscall"
)

// sysProcAttr puts the child in a process group of its own, so that it can
// be killed with whatever it started, and has the kernel kill it when the
// parent dies.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// executable is the program to start again: this process's own image,
// which /proc/self/exe names even when the file has been replaced or
// removed since it started (an upgrade under a running index --watch).
func executable() (string, error) {
	if _, err := os.Stat("/proc/self/exe"); err == nil {
		return "/proc/self/exe", nil
	}
	return os.Executable()
}

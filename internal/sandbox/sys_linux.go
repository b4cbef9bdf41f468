package sandbox

import "syscall"

// sysProcAttr puts the child in a process group of its own, so that it can
// be killed with whatever it started, and has the kernel kill it when the
// parent dies.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

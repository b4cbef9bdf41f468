//go:build unix && !linux

package sandbox

import "syscall"

// sysProcAttr puts the child in a process group of its own, so that it can
// be killed with whatever it started.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}

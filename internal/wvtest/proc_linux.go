package wvtest

import "syscall"

// sysProcAttr puts the server in its own process group and kills it when
// the test process dies, so that an interrupted test leaves no server behind.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

//go:build unix

package owner

import (
	"os/exec"
	"syscall"
)

// detach puts the process in a new session, away from the terminal.
func detach(cmd *exec.Cmd) { cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true} }

package owner

import (
	"fmt"
	"os"
	"os/exec"
)

// maxLogBytes is the size past which a background owner's log is rotated
// (to owner.log.1) when the next one starts.
const maxLogBytes = 8 << 20

// Spawn starts a background owner of dir: this executable with args, in a
// session of its own (it outlives the terminal and the process that
// started it), stdin from /dev/null, stdout and stderr appended to
// dir/owner.log (mode 0600; rotated to owner.log.1 past 8 MiB), and the
// environment of this process plus env. It returns once the process has
// started, with a channel that receives its exit; wait for its socket with
// Join.
func Spawn(dir string, args, env []string) (*os.Process, <-chan error, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, nil, fmt.Errorf("owner: find this executable: %w", err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, nil, err
	}
	path := LogPath(dir)
	if fi, err := os.Stat(path); err == nil && fi.Size() > maxLogBytes {
		_ = os.Rename(path, path+".1")
	}
	logf, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return nil, nil, fmt.Errorf("owner: open the background owner's log: %w", err)
	}
	defer logf.Close()
	null, err := os.Open(os.DevNull)
	if err != nil {
		return nil, nil, err
	}
	defer null.Close()
	cmd := exec.Command(exe, args...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = null, logf, logf
	cmd.Env = append(os.Environ(), env...)
	cmd.Dir = "/"
	detach(cmd)
	if err := cmd.Start(); err != nil {
		return nil, nil, fmt.Errorf("owner: start a background owner: %w", err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }() // reaps it if it exits before this process
	return cmd.Process, done, nil
}

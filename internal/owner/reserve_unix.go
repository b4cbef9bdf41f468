//go:build unix

package owner

import (
	"errors"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/ragmem/ragmem/internal/wal"
)

// reservedBy returns the pid of the process that holds the reservation of
// dir's succession (0 when unknown) and whether one does. It checks by
// taking the succession lock shared, without waiting, and letting it go at
// once: processes checking at the same time do not disturb each other, and
// Reserve outlasts them.
func reservedBy(dir string) (pid int, reserved bool) {
	f, _, err := wal.OpenRegular(nextPath(dir), os.O_RDONLY, 0)
	if err != nil {
		return 0, false
	}
	defer f.Close()
	if err := unix.Flock(int(f.Fd()), unix.LOCK_SH|unix.LOCK_NB); err != nil {
		if !errors.Is(err, unix.EWOULDBLOCK) {
			return 0, false
		}
		b := make([]byte, 32)
		n, _ := f.ReadAt(b, 0)
		pid, _ = strconv.Atoi(strings.TrimSpace(string(b[:n])))
		return pid, true
	}
	_ = unix.Flock(int(f.Fd()), unix.LOCK_UN)
	return 0, false
}

package owner

import (
	"bufio"
	"fmt"
	"os"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// LockHeld reports whether a process holds dir's owner lock, without
// taking it (which could make an owner that is starting fail to claim).
// known is false where that cannot be told; Linux reads /proc/locks.
func LockHeld(dir string) (held, known bool) {
	fi, err := os.Stat(lockPath(dir))
	if err != nil {
		return false, true
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return false, false
	}
	f, err := os.Open("/proc/locks")
	if err != nil {
		return false, false
	}
	defer f.Close()
	// 1: FLOCK  ADVISORY  WRITE 1234 08:01:5678 0 EOF
	want := fmt.Sprintf(":%d", st.Ino)
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		for i, w := range fs {
			if w == "FLOCK" && i+4 < len(fs) && strings.HasSuffix(fs[i+4], want) && devMatches(fs[i+4], st) {
				return true, true
			}
		}
	}
	return false, true
}

// devMatches compares the "maj:min:inode" field's device with st's.
func devMatches(field string, st *syscall.Stat_t) bool {
	var maj, min uint64
	var ino uint64
	if _, err := fmt.Sscanf(field, "%x:%x:%d", &maj, &min, &ino); err != nil {
		return true // cannot tell: the inode matched
	}
	dev := uint64(st.Dev)
	return maj == uint64(unix.Major(dev)) && min == uint64(unix.Minor(dev))
}

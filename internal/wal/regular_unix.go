//go:build unix

package wal

import (
	"errors"
	"os"
	"syscall"
)

// openNoFollow opens path without following a symbolic link in its last
// component, and without blocking on a named pipe or a device.
func openNoFollow(path string, flag int, perm os.FileMode) (*os.File, error) {
	return os.OpenFile(path, flag|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, perm)
}

// isLinkError reports whether an open failed because of O_NOFOLLOW.
func isLinkError(err error) bool { return errors.Is(err, syscall.ELOOP) }

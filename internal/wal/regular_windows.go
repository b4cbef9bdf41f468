//go:build windows

package wal

import (
	"errors"
	"os"
)

// openNoFollow opens path, refusing a symbolic link in its last component
// (Windows has no O_NOFOLLOW: checked with Lstat first); OpenRegular then
// refuses anything that is not a regular file.
func openNoFollow(path string, flag int, perm os.FileMode) (*os.File, error) {
	if fi, err := os.Lstat(path); err == nil && fi.Mode()&os.ModeSymlink != 0 {
		return nil, &os.PathError{Op: "open", Path: path, Err: errLink}
	}
	return os.OpenFile(path, flag, perm)
}

var errLink = errors.New("is a symbolic link")

func isLinkError(err error) bool {
	var pe *os.PathError
	return errors.As(err, &pe) && pe.Err == errLink
}

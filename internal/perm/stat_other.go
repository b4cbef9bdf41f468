//go:build !unix

package perm

import (
	"io/fs"
	"os"
)

// lstatInfo reports no owner and a private mode: the system has no Unix
// permissions to check.
func lstatInfo(p string) (info, error) {
	fi, err := os.Lstat(p)
	if err != nil {
		return info{}, err
	}
	return info{uid: -1, gid: -1, mode: fi.Mode()&^fs.ModePerm | 0o700}, nil
}

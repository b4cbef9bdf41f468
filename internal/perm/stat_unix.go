//go:build unix

package perm

import (
	"os"
	"syscall"
)

func lstatInfo(p string) (info, error) {
	fi, err := os.Lstat(p)
	if err != nil {
		return info{}, err
	}
	uid, gid := -1, -1
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		uid, gid = int(st.Uid), int(st.Gid)
	}
	return info{uid: uid, gid: gid, mode: fi.Mode()}, nil
}

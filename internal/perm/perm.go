// Package perm keeps ragmem to files that are the user's: ssh's StrictModes
// rule, applied to the data directory (the store, its API token, the
// owner's socket and announcement, the agent memories) and to the secret
// files ragmem reads (server-tokens.json, the configuration file, an
// export key).
//
// A directory or a file is refused when it belongs to another user (root
// aside) or when users other than its owner may write it (the world, or a
// group other than the owner's private group); so is a directory above it
// that another user owns, or that others may write without the sticky bit
// (/tmp has it: others cannot replace what is yours there). What is the user's but readable by others is made private
// (0700 for a directory, 0600 for a file) and reported, so that a caller
// can log it. The error names the path and the command that fixes it.
//
// On systems without Unix permissions (Windows) the checks pass.
package perm

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
)

// ErrUnsafe is returned for a directory or file another user could change.
var ErrUnsafe = errors.New("perm: another user could change it")

// info is what the rule needs of a file: its owner, group and mode.
type info struct {
	uid, gid int // -1 when the system has no owners
	mode     fs.FileMode
}

// Seams for tests: the file system's answers, the process's user and
// whether a group is a user's private one.
var (
	lstat        = lstatInfo
	euid         = os.Geteuid
	privateGroup = userPrivateGroup
)

// mine reports whether uid may own what ragmem uses: the user, or root.
func mine(uid int) bool { return uid < 0 || uid == 0 || uid == euid() }

// othersMayWrite reports whether users other than fi's owner may write it:
// the world, or a group that is not the owner's private group (the group
// of the owner's name that systems with user private groups give each
// user, and that a umask of 002 makes writable; Debian's ssh allows it
// too).
func othersMayWrite(fi info) bool {
	p := fi.mode.Perm()
	if p&0o002 != 0 {
		return true
	}
	return p&0o020 != 0 && !privateGroup(fi.uid, fi.gid)
}

// userPrivateGroup reports whether gid is the private group of the user
// uid: that user's primary group, bearing the user's name.
func userPrivateGroup(uid, gid int) bool {
	if uid < 0 || gid < 0 {
		return false
	}
	u, err := user.LookupId(strconv.Itoa(uid))
	if err != nil || u.Gid != strconv.Itoa(gid) {
		return false
	}
	g, err := user.LookupGroupId(u.Gid)
	return err == nil && g.Name == u.Username
}

// Dir checks a directory that exists (the data directory, a namespace's,
// the memory directory) and the directories above it, and makes it private
// (0700) when it is the user's and others may read it; note then says so.
func Dir(dir string) (note string, err error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return "", err
	}
	fi, err := lstat(real)
	if err != nil {
		return "", err
	}
	if !fi.mode.IsDir() {
		return "", fmt.Errorf("%s is not a directory", dir)
	}
	if err := ownerOK(dir, real, fi, "directory"); err != nil {
		return "", err
	}
	if othersMayWrite(fi) {
		return "", fmt.Errorf("%w: other users may write the directory %s (mode %04o), so they could replace its files (its API token among them); ragmem does not use it until you run: chmod go-w %s",
			ErrUnsafe, dir, fi.mode.Perm(), shellQuote(real))
	}
	if err := parentsOK(dir, real); err != nil {
		return "", err
	}
	if fi.uid >= 0 && fi.uid == euid() && fi.mode.Perm()&0o077 != 0 {
		if err := os.Chmod(real, 0o700); err == nil {
			note = fmt.Sprintf("made %s private (mode %04o to 0700): what ragmem keeps there is the user's alone", dir, fi.mode.Perm())
		}
	}
	return note, nil
}

// BeforeCreate checks, before dir is created, the directory it will be
// created in: the closest one that exists must pass the rule for the
// directories above (mine, and not open to others' writes without the
// sticky bit), as must those above it. An existing dir is left to Dir.
func BeforeCreate(dir string) error {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	p := abs
	for {
		if _, err := os.Lstat(p); err == nil {
			break
		}
		up := filepath.Dir(p)
		if up == p {
			return nil
		}
		p = up
	}
	if p == abs {
		return nil
	}
	real, err := filepath.EvalSymlinks(p)
	if err != nil {
		return err
	}
	return parentsOK(dir, filepath.Join(real, filepath.Base(abs)))
}

// File checks a secret file ragmem reads (none is fine: "", nil): a regular
// file, not a link, of the user's (or root's), that no one else may write,
// in a directory that passes Dir's rule for the directories above. One of
// the user's that others may read is made private (0600); note then says
// so, and that the secret may have been read.
func File(path string) (note string, err error) { return file(path, true) }

// CheckFile is File without making the file private: it only refuses.
func CheckFile(path string) error {
	_, err := file(path, false)
	return err
}

// CheckTarget is CheckFile for a file that may be a link the user made (a
// configuration file kept with other dotfiles): the directories above the
// link, and the file it names with the directories above that, are checked.
func CheckTarget(path string) error {
	abs, err := filepath.Abs(path)
	if err != nil {
		return err
	}
	real, err := filepath.EvalSymlinks(abs)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if real != abs {
		if err := parentsOK(path, abs); err != nil {
			return err
		}
	}
	return CheckFile(real)
}

func file(path string, tighten bool) (note string, err error) {
	fi, err := lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	if fi.mode&fs.ModeSymlink != 0 {
		return "", fmt.Errorf("%w: %s is a symbolic link; ragmem reads its secrets only from a file of yours: replace the link with the file", ErrUnsafe, path)
	}
	if !fi.mode.IsRegular() {
		return "", fmt.Errorf("%w: %s is not a regular file", ErrUnsafe, path)
	}
	if err := ownerOK(path, path, fi, "file"); err != nil {
		return "", err
	}
	if othersMayWrite(fi) {
		return "", fmt.Errorf("%w: other users may write %s (mode %04o), so it may not be what you wrote; check it, then run: chmod go-w %s",
			ErrUnsafe, path, fi.mode.Perm(), shellQuote(path))
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", err
	}
	if d, err := filepath.EvalSymlinks(filepath.Dir(abs)); err == nil {
		if err := parentsOK(path, filepath.Join(d, filepath.Base(abs))); err != nil {
			return "", err
		}
	}
	if tighten && fi.uid >= 0 && fi.uid == euid() && fi.mode.Perm()&0o077 != 0 {
		if err := os.Chmod(path, 0o600); err == nil {
			note = fmt.Sprintf("made %s private (mode %04o to 0600); other users could read it until now: if it holds a secret they should not know, replace it (ragmem token rotate for the API token)", path, fi.mode.Perm())
		}
	}
	return note, nil
}

// ownerOK refuses what belongs to another user.
func ownerOK(name, real string, fi info, what string) error {
	if mine(fi.uid) {
		return nil
	}
	return fmt.Errorf("%w: the %s %s belongs to another user (uid %d; you are uid %d); ragmem uses only what is yours: take it over (chown %d %s) if you trust it, or use another",
		ErrUnsafe, what, name, fi.uid, euid(), euid(), shellQuote(real))
}

// parentsOK applies the rule to the directories above real (a resolved
// path), from its parent up to the root.
func parentsOK(name, real string) error {
	for p := filepath.Dir(real); ; p = filepath.Dir(p) {
		fi, err := lstat(p)
		if err != nil {
			return err
		}
		if !mine(fi.uid) {
			return fmt.Errorf("%w: %s is in %s, which belongs to another user (uid %d), who could replace it; move it to a directory of yours",
				ErrUnsafe, name, p, fi.uid)
		}
		if othersMayWrite(fi) && fi.mode&fs.ModeSticky == 0 {
			return fmt.Errorf("%w: %s is in %s, which other users may write (mode %04o), so they could replace it; run: chmod go-w %s",
				ErrUnsafe, name, p, fi.mode.Perm(), shellQuote(p))
		}
		if d := filepath.Dir(p); d == p {
			return nil
		}
	}
}

// shellQuote quotes p for a shell command when it needs it.
func shellQuote(p string) string {
	for _, r := range p {
		if !(r == '/' || r == '.' || r == '-' || r == '_' || r == '~' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			return "'" + strings.ReplaceAll(p, "'", `'\''`) + "'"
		}
	}
	return p
}

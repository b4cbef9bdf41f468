// Package pathless keeps the server's file paths out of what its clients
// read: an error message bound for an HTTP or MCP client has each absolute
// path of this machine in it (a path that exists, or a directory above it)
// replaced by a placeholder, so that a full disk or a broken file reports
// what happened without naming the data directory. The caller logs the
// original message.
package pathless

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// Placeholder replaces a path.
const Placeholder = "<server file>"

// maxScan bounds the message scanned and the candidates checked.
const (
	maxScan       = 16 << 10
	maxCandidates = 32
)

// candidateRE finds absolute paths: a "/" at the start or after a space, a
// quote, a parenthesis, "=" or a "file://" URL's scheme, then characters
// other than white space, quotes and brackets. URL paths ("https://h/p")
// start after a host and are not matched.
var candidateRE = regexp.MustCompile(`(?:^|[\s"'(=\[<]|file://)(/[^\s"'()<>\[\]]+)`)

// Message returns msg with the machine's paths in it replaced by
// Placeholder. A path is one when it, or a directory above it other than
// the root, exists on this machine:
// "/v1/memories" in "POST /v1/memories" is left alone, while
// "open /srv/ragmem/queue/queue.log: no space left on device" becomes
// "open <server file>: no space left on device". A message past 16 KiB is
// clipped first. It is safe for concurrent use.
func Message(msg string) string {
	if len(msg) > maxScan {
		msg = strings.ToValidUTF8(msg[:maxScan], "") + "…"
	}
	locs := candidateRE.FindAllStringSubmatchIndex(msg, maxCandidates)
	if len(locs) == 0 {
		return msg
	}
	var b strings.Builder
	last := 0
	for _, l := range locs {
		start, end := l[2], l[3]
		p := strings.TrimRight(msg[start:end], ".,:;!?")
		end = start + len(p)
		if !local(p) {
			continue
		}
		b.WriteString(msg[last:start])
		b.WriteString(Placeholder)
		last = end
	}
	if last == 0 {
		return msg
	}
	b.WriteString(msg[last:])
	return b.String()
}

// local reports whether p, or a directory above it other than the root,
// exists: "/srv/ragmem/gone.tmp" is a path here when /srv is, while
// "/v1/memories" is not when there is no /v1.
func local(p string) bool {
	if len(p) < 2 {
		return false
	}
	for i := 0; i < 64 && p != "/" && p != "."; i++ {
		if _, err := os.Lstat(p); err == nil {
			return true
		}
		p = filepath.Dir(p)
	}
	return false
}

//go:build !unix

package owner

// reservedBy reports no reservation: without owner sockets every process
// opens the store itself, one at a time, and there is no succession to
// reserve.
func reservedBy(string) (int, bool) { return 0, false }

//go:build !unix

package owner

import (
	"context"
	"io/fs"
	"net"
	"time"
)

// dialTimeout bounds connecting to an owner's socket.
const DialTimeout = 2 * time.Second

func listenUnix(string) (*Listener, error)           { return nil, ErrUnsupported }
func ownedByMe(fs.FileInfo) bool                     { return true }
func runtimeDir() (string, error)                    { return "", ErrUnsupported }
func peerUID(net.Conn) (int, error)                  { return -1, nil }
func Dial(context.Context, string) (net.Conn, error) { return nil, ErrUnsupported }

// Supported reports whether this platform has owner sockets. Where it has
// not, every ragmem process opens the store itself, one at a time.
func Supported() bool { return false }

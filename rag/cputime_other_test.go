//go:build !unix

package rag

import "time"

// cpuTime is not measured on this platform.
func cpuTime() time.Duration { return 0 }

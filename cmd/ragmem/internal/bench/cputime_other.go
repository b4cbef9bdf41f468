//go:build !unix

package bench

// cpuSeconds is not measured on this platform (bench reports 0).
func cpuSeconds() float64 { return 0 }

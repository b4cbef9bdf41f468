//go:build !amd64 || purego

package vecindex

// dot8 is Σ a[i]·b[i] in int32 (no overflow below 2^17 dimensions).
func dot8(a, b []int8) int32 { return dot8Go(a, b) }

//go:build !amd64 || purego

package vecindex

// axpyInt8 adds q·float32(col[i]) to acc[i].
func axpyInt8(acc []float32, col []int8, q float32) { axpyInt8Go(acc, col, q) }

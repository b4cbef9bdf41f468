//go:build !unix

package local

import (
	"errors"
	"os"
)

func mapReadOnly(f *os.File, off, n int64) ([]byte, error) {
	return nil, errors.New("index: memory mapping is not available on this platform")
}

func unmap(b []byte) error { return nil }

func releasePages(b []byte) {}

// canMap is false: vector sections are read into memory instead.
const canMap = false

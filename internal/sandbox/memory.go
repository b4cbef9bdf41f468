package sandbox

import "runtime/debug"

// memoryLimit is the address-space allowance of a child: a -race build's
// shadow memory takes several times the memory it shadows.
func memoryLimit(m int64) int64 {
	if raceEnabled {
		return 8 * m
	}
	return m
}

// setSoftMemoryLimit has the collector work harder as the heap nears three
// quarters of the allowance, before the hard limit ends the child.
func setSoftMemoryLimit(memory int64) {
	if raceEnabled {
		memory /= 8
	}
	debug.SetMemoryLimit(memory * 3 / 4)
}

//go:build !race

package chunk

// raceEnabled reports a -race build, where timings mean little.
const raceEnabled = false

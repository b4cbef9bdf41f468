//go:build !race

package sandbox

// raceEnabled reports a -race build.
const raceEnabled = false

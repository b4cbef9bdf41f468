//go:build !race

package vecindex

// raceEnabled reports a -race build, which is about ten times slower.
const raceEnabled = false

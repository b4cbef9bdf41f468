//go:build race

package tokens

// raceEnabled reports a -race build, which is about ten times slower.
const raceEnabled = true

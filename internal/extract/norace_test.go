//go:build !race

package extract_test

// raceEnabled reports a -race build, whose memory and time are several times larger.
const raceEnabled = false

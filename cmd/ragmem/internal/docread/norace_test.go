//go:build !race

package docread

// raceEnabled reports a -race build, whose memory is several times larger.
const raceEnabled = false

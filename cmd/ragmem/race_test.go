//go:build race

package main

// raceEnabled reports a -race build, whose memory is several times larger.
const raceEnabled = true

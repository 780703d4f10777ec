//go:build race

package api

// raceEnabled reports that the race detector slows everything down.
const raceEnabled = true

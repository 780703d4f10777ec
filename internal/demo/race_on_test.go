//go:build race

package demo

// raceEnabled: the race detector makes every goroutine several times
// slower and bigger, so the fleet tests shrink under it (scripts/test.sh
// runs them at full size without it).
const raceEnabled = true

//go:build !race

package pollux

// raceEnabled skips the slow single-goroutine quality checks under -race.
const raceEnabled = false

//go:build !race

package scheduler

// raceEnabled skips the slow single-goroutine quality checks under -race.
const raceEnabled = false

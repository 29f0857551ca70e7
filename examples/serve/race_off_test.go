//go:build !race

package main

// raceEnabled skips the hour-long replays of the headline figures under -race.
const raceEnabled = false

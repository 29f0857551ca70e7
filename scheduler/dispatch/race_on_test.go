//go:build race

package dispatch

// raceEnabled scales the long single-goroutine property runs down under
// -race, where every memory access is instrumented.
const raceEnabled = true

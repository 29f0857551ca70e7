//go:build race

package main

// raceEnabled: the race detector slows every goroutine several-fold, so
// latency figures under it mean nothing.
const raceEnabled = true

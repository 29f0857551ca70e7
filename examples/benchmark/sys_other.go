//go:build !linux

package main

import "time"

// peakRSSMiB is not measured on this platform: the rss_* keys are left
// out.
func peakRSSMiB() (float64, bool) { return 0, false }

// cpuClock is not measured on this platform (-clock cpu is refused).
func cpuClock() time.Duration { return 0 }

// cpuClockWorks reports whether cpuClock reads a CPU time here.
func cpuClockWorks() bool { return false }

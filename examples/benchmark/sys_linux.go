//go:build linux

package main

import (
	"syscall"
	"time"
)

// peakRSSMiB returns the process's peak resident set size so far in MiB
// (getrusage's ru_maxrss, KiB on Linux).
func peakRSSMiB() (float64, bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil || ru.Maxrss <= 0 {
		return 0, false
	}
	return float64(ru.Maxrss) / 1024, true
}

// cpuClock reads this process's user+system CPU time.
func cpuClock() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// cpuClockWorks reports whether cpuClock reads a CPU time here.
func cpuClockWorks() bool { return cpuClock() > 0 }

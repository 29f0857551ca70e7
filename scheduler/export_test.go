package scheduler

import (
	"testing"
	"time"
)

// Test hooks for the external tests of this directory (package
// scheduler_test), which may import packages above scheduler.

// CarbonBenchInput is carbonBenchInput.
var CarbonBenchInput = carbonBenchInput

// BenchSchedule is benchSchedule.
var BenchSchedule = benchSchedule

// The baselines live in package scheduler/baselines, which imports this
// package, so the internal tests that run every built-in policy get them
// through these variables, which hooks_test.go (package scheduler_test)
// sets when the test binary starts.
var (
	fifo, optimus Policy
	tiresiasAt    func(threshold time.Duration) Policy
)

// SetBaselines sets the baselines for the internal tests.
func SetBaselines(f, o Policy, t func(time.Duration) Policy) { fifo, optimus, tiresiasAt = f, o, t }

func TestBaselinesHooked(t *testing.T) {
	if fifo == nil || optimus == nil || tiresiasAt == nil {
		t.Fatal("hooks_test.go did not set the baselines: the tests that run every policy would run Pollux in their place")
	}
}

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

// The baselines (package scheduler/baselines) and the genetic reference
// (package scheduler/genetic) import this package, so the internal tests
// that run every policy get them through these variables, which
// hooks_test.go (package scheduler_test) sets when the test binary starts.
var (
	fifo, optimus Policy
	tiresiasAt    func(threshold time.Duration) Policy
	geneticAt     func(population, generations int, seed uint64) Policy
	maxPopulation int
)

// SetBaselines sets the baselines for the internal tests.
func SetBaselines(f, o Policy, t func(time.Duration) Policy) { fifo, optimus, tiresiasAt = f, o, t }

// SetGenetic sets the genetic reference and its MaxPopulation for the
// internal tests.
func SetGenetic(g func(population, generations int, seed uint64) Policy, max int) {
	geneticAt, maxPopulation = g, max
}

func TestBaselinesHooked(t *testing.T) {
	if fifo == nil || optimus == nil || tiresiasAt == nil || geneticAt == nil || maxPopulation == 0 {
		t.Fatal("hooks_test.go did not set the baselines and the genetic reference: the tests that run every policy would run Pollux in their place")
	}
}

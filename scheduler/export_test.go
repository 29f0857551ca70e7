package scheduler

// Test hooks for the external tests of this directory (package
// scheduler_test), which may import packages above scheduler.

// CarbonBenchInput is carbonBenchInput.
var CarbonBenchInput = carbonBenchInput

// BenchSchedule is benchSchedule.
var BenchSchedule = benchSchedule

package gavel

import (
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// TestWaterFillingLeximinOracle500 holds water-filling to the sequential-LP
// leximin oracle (leximinClasses: gonum's simplex or a tableau simplex on
// the problem aggregated by job class) on 500 random instances of 20–500
// jobs on 5 or 6 types, the shape on which about 1% once missed leximin.
// The sorted share vectors must agree to 1e-6. Under -race (and -short) it
// runs the first 40 only; .ci/run runs all without -race.
func TestWaterFillingLeximinOracle500(t *testing.T) {
	count := 500
	if raceEnabled || testing.Short() {
		count = 40
	}
	rng := rand.New(rand.NewPCG(42, 500))
	worst, bad := 0.0, 0
	var solveTime time.Duration
	for trial := range count {
		n := 20 + rng.IntN(481)
		k := 5 + rng.IntN(2)
		classes := min(n, 5+rng.IntN(16))
		p := classProblem(rng, n, classes, k)
		if p.Validate() != nil {
			continue // a gang larger than every type
		}
		q, norm := maskedOracle(p, false)
		want := leximinClassesOf(t, q, norm, 1e-13)
		start := time.Now()
		sol, err := Solve(context.Background(), p, MaxMinFairness{WaterFilling: true}, nil)
		solveTime += time.Since(start)
		if err != nil {
			t.Fatalf("trial %d (n=%d k=%d): %v", trial, n, k, err)
		}
		if err := p.CheckAllocation(sol.X, 1e-9); err != nil {
			t.Errorf("trial %d (n=%d k=%d): %v", trial, n, k, err)
		}
		got, _ := p.NormalizedShares(sol.X)
		slices.Sort(got)
		slices.Sort(want)
		d := 0.0
		for i := range want {
			d = max(d, math.Abs(got[i]-want[i])/want[i])
		}
		worst = max(worst, d)
		if d > 1e-6 {
			bad++
			t.Errorf("trial %d (n=%d, %d classes, k=%d, %d levels): sorted shares differ from leximin by %.2g", trial, n, classes, k, sol.Levels, d)
		}
	}
	t.Logf("%d instances: %d differ by more than 1e-6, largest relative difference %.2g; water-filling took %v in all", count, bad, worst, solveTime)
}

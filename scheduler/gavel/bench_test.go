package gavel

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
)

func benchProblem(n, k int) Problem {
	rng := rand.New(rand.NewPCG(7, uint64(n)))
	p := randomProblem(rng, n, k, false)
	p.Weight = nil
	for j := range k {
		p.Devices[j] = max(1, n/8)
	}
	return p
}

func BenchmarkMaxMin(b *testing.B) {
	for _, n := range []int{2048, 10000} {
		b.Run(fmt.Sprintf("jobs=%d/types=4", n), func(b *testing.B) {
			p := benchProblem(n, 4)
			b.ReportAllocs()
			var sol Solution
			for b.Loop() {
				var err error
				sol, err = Solve(context.Background(), p, MaxMinFairness{}, nil)
				if err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(sol.Gap, "gap")
			b.ReportMetric(float64(sol.Iterations), "iters")
		})
	}
}

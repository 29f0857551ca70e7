package carbon

import (
	"math/rand/v2"
	"testing"
)

// BenchmarkPlanWeekHourly is the target: a one-week hourly plan
// (168 slots, 7 scales, concave curve) in at most 1 ms.
func BenchmarkPlanWeekHourly(b *testing.B) {
	r := rand.New(rand.NewPCG(9, 10))
	c := randConcave(r, 7)
	s := randSeries(r, 168)
	work := c.WorkPerSecond[7] * 3600 * 24
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Plan(s, c, work, s.End(), PlanOptions{}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPlanWeekHourlyNbody10k plans with CarbonScaler's nbody10k
// profile, which is not quite concave: Auto certifies the greedy plan
// against its lower bound instead of running DP.
func BenchmarkPlanWeekHourlyNbody10k(b *testing.B) {
	r := rand.New(rand.NewPCG(9, 10))
	c := nbody10k(b)
	s := randSeries(r, 168)
	work := c.WorkPerSecond[7] * 3600 * 24
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Plan(s, c, work, s.End(), PlanOptions{}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPlanWeekHourlyForcedDP is the DP fallback on the same size.
func BenchmarkPlanWeekHourlyForcedDP(b *testing.B) {
	r := rand.New(rand.NewPCG(9, 10))
	c := nbody10k(b)
	s := randSeries(r, 168)
	work := c.WorkPerSecond[7] * 3600 * 24
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Plan(s, c, work, s.End(), PlanOptions{Method: DP}); err != nil {
			b.Fatal(err)
		}
	}
}

package carbon

import (
	"math/rand/v2"
	"testing"
)

// benchPlan plans a day of full-scale work within a random one-week hourly
// series (168 slots) with curve c, over and over.
func benchPlan(b *testing.B, r *rand.Rand, c Curve, opts ScheduleOptions) {
	b.Helper()
	s := randSeries(r, 168)
	work := c.WorkPerSecond[7] * 3600 * 24
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Schedule(s, c, work, s.End(), opts); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPlanWeekHourly is the target: a one-week hourly plan
// (168 slots, 7 scales, concave curve) in at most 1 ms.
func BenchmarkPlanWeekHourly(b *testing.B) {
	r := rand.New(rand.NewPCG(9, 10))
	benchPlan(b, r, randConcave(r, 7), ScheduleOptions{})
}

// BenchmarkPlanWeekHourlyNbody10k plans with CarbonScaler's nbody10k
// profile, which is not quite concave: Auto certifies the greedy plan
// against its lower bound instead of running DP.
func BenchmarkPlanWeekHourlyNbody10k(b *testing.B) {
	benchPlan(b, rand.New(rand.NewPCG(9, 10)), nbody10k(b), ScheduleOptions{})
}

// BenchmarkPlanWeekHourlyForcedDP is the DP fallback on the same size.
func BenchmarkPlanWeekHourlyForcedDP(b *testing.B) {
	benchPlan(b, rand.New(rand.NewPCG(9, 10)), nbody10k(b), ScheduleOptions{Method: DP})
}

// BenchmarkPlanWeekHourlyChangeCost is the week's plan with a change cost
// (DP over scales and quanta, then the exact whole-scale search that
// checks DP's rounding).
func BenchmarkPlanWeekHourlyChangeCost(b *testing.B) {
	c := nbody10k(b)
	benchPlan(b, rand.New(rand.NewPCG(9, 10)), c, ScheduleOptions{ChangeCostG: c.Watts[c.MaxScale()] / 1000 * 250})
}

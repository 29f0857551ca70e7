package scheduler_test

import (
	"testing"

	"github.com/goodsched/goodsched/scheduler"
	"github.com/goodsched/goodsched/scheduler/carbonaware"
)

// BenchmarkCarbonRound2000x8192 times, on the same input (every elastic
// job delay-tolerant with a deadline), a round of Pollux and a round of
// carbon-aware Pollux (faster when it defers jobs: Pollux then allocates
// fewer).
func BenchmarkCarbonRound2000x8192(b *testing.B) {
	in := scheduler.CarbonBenchInput()
	b.Run("pollux", func(b *testing.B) { scheduler.BenchSchedule(b, scheduler.Pollux{}, in) })
	b.Run("carbon", func(b *testing.B) { scheduler.BenchSchedule(b, carbonaware.Policy{CarbonWeight: 1}, in) })
}

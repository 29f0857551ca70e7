package scheduler

import (
	"context"
	"testing"
	"time"

	"github.com/goodsched/goodsched/carbon"
)

var (
	shape160x64 = genOpts{groups: []group{{16, 4, "t4"}}, jobs: 160, maxReplicas: 16, rounds: 2, pinnedFrac: 0.05, rigidFrac: 0.2}
	shape2000x8 = genOpts{groups: []group{{256, 8, "a100"}, {256, 8, "v100"}, {512, 4, "t4"}, {128, 16, "h100"}},
		jobs: 2000, maxReplicas: 32, rounds: 1, pinnedFrac: 0.05, rigidFrac: 0.2}
)

func benchSchedule(b *testing.B, pol Policy, in Input) {
	s, _ := New(Config{Policy: pol})
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if _, err := s.Schedule(context.Background(), in); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkGoodput160x64 is Pollux's testbed size: target ≤ 5 ms per round.
func BenchmarkGoodput160x64(b *testing.B) { benchSchedule(b, Pollux{}, genInput(1, shape160x64)) }

// BenchmarkGoodput2000x8192 is 2,000 jobs on 8,192 devices of 4 types:
// target ≤ 500 ms per round.
func BenchmarkGoodput2000x8192(b *testing.B) {
	benchSchedule(b, Pollux{}, genInput(1, shape2000x8))
}

// BenchmarkGenetic160x64 is the reference search on the 160×64 instance.
func BenchmarkGenetic160x64(b *testing.B) {
	benchSchedule(b, Genetic{Seed: 1}, genInput(1, shape160x64))
}

func BenchmarkFIFO2000x8192(b *testing.B)     { benchSchedule(b, FIFO{}, genInput(1, shape2000x8)) }
func BenchmarkTiresias2000x8192(b *testing.B) { benchSchedule(b, Tiresias{}, genInput(1, shape2000x8)) }
func BenchmarkOptimus2000x8192(b *testing.B)  { benchSchedule(b, Optimus{}, genInput(1, shape2000x8)) }

// BenchmarkGoodput40x64 is the small end: 40 jobs on 64 T4s, where the
// polish on replayed placements runs (≤ 48 jobs).
func BenchmarkGoodput40x64(b *testing.B) {
	benchSchedule(b, Pollux{}, genInput(1, genOpts{groups: []group{{16, 4, "t4"}}, jobs: 40, maxReplicas: 16, rounds: 2, pinnedFrac: 0.05, rigidFrac: 0.2}))
}

// carbonBenchInput is shape2000x8 with every elastic job delay-tolerant,
// with a deadline 12 to 36 hours away and a day of hourly intensities.
func carbonBenchInput() Input {
	in := genInput(1, shape2000x8)
	ci := make([]float64, 48)
	for h := range ci {
		ci[h] = 200 + 100*float64((h*7)%11)/10
	}
	in.Carbon = carbon.Series{Start: in.Now.Truncate(time.Hour), Step: time.Hour, Values: ci, Unit: carbon.GPerKWh}
	for i := range in.Jobs {
		if j := &in.Jobs[i]; j.Kind != Rigid {
			j.DelayTolerant = true
			j.Deadline = in.Now.Add(time.Duration(12+i%25) * time.Hour)
			j.RemainingWork = float64(1+i%7) * 3600
		}
	}
	return in
}

// BenchmarkCarbonRound2000x8192 times, on the same input (every elastic
// job delay-tolerant with a deadline), a round of Pollux, a round of
// CarbonAware (faster when it defers jobs: Pollux then allocates fewer),
// and the carbon planning alone (every job's plan, on a built Round): the
// planner adds at most plan/pollux to a round (target ≤ 10%).
func BenchmarkCarbonRound2000x8192(b *testing.B) {
	in := carbonBenchInput()
	b.Run("pollux", func(b *testing.B) { benchSchedule(b, Pollux{}, in) })
	b.Run("carbon", func(b *testing.B) { benchSchedule(b, CarbonAware{CarbonWeight: 1}, in) })
	b.Run("plan", func(b *testing.B) {
		r := mustRound(b, in)
		c := CarbonAware{CarbonWeight: 1}
		b.ReportAllocs()
		b.ResetTimer()
		for b.Loop() {
			if _, _, err := c.caps(r); err != nil {
				b.Fatal(err)
			}
		}
	})
}

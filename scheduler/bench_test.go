package scheduler

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/goodsched/goodsched/accel"
	"github.com/goodsched/goodsched/carbon"
	"github.com/goodsched/goodsched/scheduler/quota"
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

// BenchmarkGoodputParallel2000x8192 is BenchmarkGoodput2000x8192 with
// Pollux.Parallel (run it with -cpu 1,2 against the plain one).
func BenchmarkGoodputParallel2000x8192(b *testing.B) {
	benchSchedule(b, Pollux{Parallel: true}, genInput(1, shape2000x8))
}

// BenchmarkGoodputParallel160x64 is BenchmarkGoodput160x64 with
// Pollux.Parallel: on a round this small the hand-off may cost more than
// the second core saves.
func BenchmarkGoodputParallel160x64(b *testing.B) {
	benchSchedule(b, Pollux{Parallel: true}, genInput(1, shape160x64))
}

// BenchmarkGenetic160x64 is the reference search on the 160×64 instance.
func BenchmarkGenetic160x64(b *testing.B) {
	benchSchedule(b, geneticAt(0, 0, 1), genInput(1, shape160x64))
}

func BenchmarkFIFO2000x8192(b *testing.B) { benchSchedule(b, fifo, genInput(1, shape2000x8)) }
func BenchmarkTiresias2000x8192(b *testing.B) {
	benchSchedule(b, tiresiasAt(0), genInput(1, shape2000x8))
}
func BenchmarkOptimus2000x8192(b *testing.B) { benchSchedule(b, optimus, genInput(1, shape2000x8)) }

// BenchmarkGoodput40x64 is the small end: 40 jobs on 64 T4s, where the
// polish on replayed placements runs (≤ 48 jobs).
func BenchmarkGoodput40x64(b *testing.B) {
	benchSchedule(b, Pollux{}, genInput(1, genOpts{groups: []group{{16, 4, "t4"}}, jobs: 40, maxReplicas: 16, rounds: 2, pinnedFrac: 0.05, rigidFrac: 0.2}))
}

// queued50 gives in 50 queues: 5 cohorts of 9 leaf queues, each leaf a
// nominal share of 80% of every type (the rest is borrowed), weights 1 to
// 3; the jobs are spread over the leaves by index.
func queued50(in Input) Input {
	caps := make(map[accel.TypeKey]int)
	for _, n := range in.Cluster.Nodes {
		for _, d := range n.Devices {
			caps[d.Type]++
		}
	}
	var leaves []string
	for c := range 5 {
		cohort := fmt.Sprintf("org%d", c)
		in.Queues = append(in.Queues, quota.Queue{Name: cohort})
		for l := range 9 {
			name := fmt.Sprintf("%s.team%d", cohort, l)
			q := quota.Queue{Name: name, Parent: cohort, Weight: float64(1 + l%3)}
			for _, tk := range slices.Sorted(maps.Keys(caps)) {
				q.Quotas = append(q.Quotas, quota.Quota{Type: tk, Nominal: caps[tk] * 8 / 10 / 45})
			}
			in.Queues = append(in.Queues, q)
			leaves = append(leaves, name)
		}
	}
	in.Jobs = slices.Clone(in.Jobs)
	for i := range in.Jobs {
		in.Jobs[i].Queue = leaves[(i*7)%len(leaves)]
	}
	return in
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

// BenchmarkQueues50x2000x8192 is a round with 50 queues over 2,000 jobs on
// 8,192 devices of 4 types, from a placement made without queues (so that
// many queues start over their entitlements and are reclaimed): target
// ≤ 500 ms per round.
func BenchmarkQueues50x2000x8192(b *testing.B) {
	benchSchedule(b, Pollux{}, queued50(genInput(1, shape2000x8)))
}

// BenchmarkQueuesFIFO50x2000x8192 is the same round under FIFO, whose
// targets the Scheduler trims to the entitlements.
func BenchmarkQueuesFIFO50x2000x8192(b *testing.B) {
	benchSchedule(b, fifo, queued50(genInput(1, shape2000x8)))
}

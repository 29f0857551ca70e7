package scheduler

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/goodsched/goodsched/placement"
)

// onegpuInput is issue 19's wide cluster: nodes nodes of one T4 each and
// five elastic jobs without an upper bound, speedup c/(1+α(c−1)) with
// α = 0.0005·(i+1) and no cross-node penalty (as examples/benchmark's
// round_goodput_65536x1_ms). With current, jobs 0–3 hold nodes/64·(i+1)
// consecutive nodes each.
func onegpuInput(nodes int, current bool) Input {
	cl := testCluster(group{nodes, 1, "t4"})
	in := Input{Cluster: cl, Now: t0.Add(time.Hour)}
	for i := range 5 {
		in.Jobs = append(in.Jobs, Job{
			ID:          fmt.Sprintf("job-%d", i),
			Submitted:   in.Now.Add(-time.Duration(600*(i+1)) * time.Second),
			Kind:        Adaptive,
			Speedup:     fakeSpeedup{alpha: 0.0005 * float64(i+1), node: 1},
			MinReplicas: 1,
			Weight:      1,
		})
	}
	if current {
		next := 0
		for i := range 4 {
			var devs []string
			for range nodes / 64 * (i + 1) {
				devs = append(devs, cl.Nodes[next].Devices[0].ID)
				next++
			}
			in.Current = append(in.Current, placement.Assignment{Job: in.Jobs[i].ID, Devices: devs})
		}
	}
	return in
}

// benchFitness is benchSchedule that also reports the plan's fitness
// (scheduler.Pollux{}.Fitness), to compare across changes.
func benchFitness(b *testing.B, in Input) {
	s, _ := New(Config{Policy: Pollux{}})
	var plan Plan
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		var err error
		if plan, err = s.Schedule(context.Background(), in); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	f, err := Pollux{}.Fitness(in, plan)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(f, "fitness")
}

// BenchmarkGoodput65536x1 is a Pollux round on 65,536 one-GPU nodes with
// five unbounded elastic jobs and no current allocation (issue 19):
// target ≤ 1 s.
func BenchmarkGoodput65536x1(b *testing.B) { benchFitness(b, onegpuInput(65536, false)) }

// BenchmarkGoodput65536x1Current is the same round with four of the jobs
// running on 10,240 of the nodes.
func BenchmarkGoodput65536x1Current(b *testing.B) { benchFitness(b, onegpuInput(65536, true)) }

// BenchmarkGoodput8192x1Current is the current-allocation case on 8,192
// nodes, small enough to measure before the fix (9 s then).
func BenchmarkGoodput8192x1Current(b *testing.B) { benchFitness(b, onegpuInput(8192, true)) }

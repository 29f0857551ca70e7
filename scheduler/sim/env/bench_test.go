package env_test

import (
	"context"
	"testing"

	"github.com/goodsched/goodsched/scheduler"
	"github.com/goodsched/goodsched/scheduler/baselines"
	"github.com/goodsched/goodsched/scheduler/sim"
	"github.com/goodsched/goodsched/scheduler/sim/env"
)

// BenchmarkStepFIFO plays FIFO through the environment on Pollux's
// default workloads (16 × 4 T4, the eight workloads of 160 jobs) and
// reports steps per second of the whole loop: simulation, observation
// and the agent's decision.
func BenchmarkStepFIFO(b *testing.B) {
	_, ws := pollux(b)
	var all [][]sim.JobSpec
	for _, w := range ws {
		all = append(all, w.Jobs)
	}
	e, err := env.New(env.Config{Sim: simConfig(b, "16x4:t4", nil), Workloads: all})
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	b.ReportAllocs()
	steps := 0
	ctx := context.Background()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := e.Reset(uint64(i)); err != nil {
			b.Fatal(err)
		}
		for {
			tg, err := baselines.FIFO{}.Allocate(ctx, e.Round())
			if err != nil {
				b.Fatal(err)
			}
			st, err := e.Step(env.ActionOf(tg))
			if err != nil {
				b.Fatal(err)
			}
			steps++
			if st.Done {
				break
			}
		}
	}
	b.ReportMetric(float64(steps)/b.Elapsed().Seconds(), "steps/s")
	b.ReportMetric(float64(steps)/float64(b.N), "steps/episode")
}

// BenchmarkSimFIFO is the baseline of BenchmarkStepFIFO: the same
// workloads through sim.Run with FIFO as its policy; calls/s counts the
// rounds that asked the policy (the environment's steps).
func BenchmarkSimFIFO(b *testing.B) {
	_, ws := pollux(b)
	calls := 0
	for i := 0; i < b.N; i++ {
		cfg := simConfig(b, "16x4:t4", ws[i%len(ws)].Jobs)
		cfg.Policy = countingFIFO{&calls}
		if _, err := sim.Run(context.Background(), cfg); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(calls)/b.Elapsed().Seconds(), "calls/s")
}

type countingFIFO struct{ n *int }

func (c countingFIFO) Allocate(ctx context.Context, r *scheduler.Round) ([]scheduler.Target, error) {
	*c.n++
	return baselines.FIFO{}.Allocate(ctx, r)
}

package scheduler

import (
	"context"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/goodsched/goodsched/goodput"
)

// withCurves gives every job of in a goodput.Curve, one random Pollux
// model per type of the cluster (the speedups a Scheduler may carry from
// round to round).
func withCurves(t *testing.T, seed uint64, in Input) Input {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 13))
	u := func(lo, hi float64) float64 { return lo + rng.Float64()*(hi-lo) }
	out := in
	out.Jobs = append([]Job(nil), in.Jobs...)
	for i := range out.Jobs {
		models := map[string]goodput.CurveModel{}
		for _, typ := range in.Cluster.Types() {
			p := goodput.Params{Form: goodput.FormPollux, AlphaC: u(0.005, 0.05), BetaC: u(1e-4, 6e-4),
				AlphaR: u(0.005, 0.03), BetaR: u(1e-4, 2e-3), AlphaN: u(0.03, 0.15), BetaN: u(1e-3, 1e-2), Gamma: u(1.2, 3)}
			models[string(typ)] = goodput.CurveModel{Model: goodput.Model{Params: p,
				Grad:   goodput.GradStats{Sqr: u(0.05, 1), Var: u(1, 10)},
				Limits: goodput.Limits{InitBatch: 64, MaxBatch: 2048, MinLocal: 16, MaxLocal: 256, Accumulation: true}}}
		}
		c, err := goodput.NewCurve(models, goodput.CurveOptions{})
		if err != nil {
			t.Fatal(err)
		}
		out.Jobs[i].Speedup = c
	}
	return out
}

// TestRoundsReuseSpeedups: a Scheduler that carries the engine's speedup
// evaluations from round to round plans every round exactly as a fresh
// Scheduler does, also when the jobs' curves change, and when rounds run
// concurrently.
func TestRoundsReuseSpeedups(t *testing.T) {
	ctx := context.Background()
	for k, sh := range shapes {
		in := withCurves(t, uint64(k), genInput(uint64(k)+40, sh))
		s, _ := New(Config{})
		for round := range 4 {
			fresh, _ := New(Config{})
			want, err := fresh.Schedule(ctx, in)
			if err != nil {
				t.Fatal(err)
			}
			got, err := s.Schedule(ctx, in)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("shape %d round %d: the plan differs from a fresh Scheduler's", k, round)
			}
			// The next round: the plan applied, a minute later, and from
			// round 2 on new curves for every other job.
			next := in
			next.Current, next.Now = got.Assignments(), in.Now.Add(time.Minute)
			if round >= 1 {
				renewed := withCurves(t, uint64(100+round), in)
				next.Jobs = append([]Job(nil), in.Jobs...)
				for i := range next.Jobs {
					if i%2 == round%2 {
						next.Jobs[i].Speedup = renewed.Jobs[i].Speedup
					}
				}
			}
			in = next
		}
		fresh, err := New(Config{})
		if err != nil {
			t.Fatal(err)
		}
		plan, err := fresh.Schedule(ctx, in)
		if err != nil {
			t.Fatal(err)
		}
		schedulesConcurrently(t, s, []Input{in, in, in, in}, []Plan{plan, plan, plan, plan})
	}
}

package gavel

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/goodsched/goodsched/accel"
	"github.com/goodsched/goodsched/placement"
	"github.com/goodsched/goodsched/scheduler"
)

// benchProblem is the reference instance of heterogeneity.md §6.2: n
// single-device jobs, k types with job-specific speedups (a fifth of the
// jobs cannot use some type), n/8 devices per type, unit weights.
func benchProblem(n, k int) Problem {
	rng := rand.New(rand.NewPCG(7, uint64(n)))
	p := randomProblem(rng, n, k, false)
	p.Weight = nil
	for j := range k {
		p.Devices[j] = max(1, n/8)
	}
	return p
}

func benchSolve(b *testing.B, p Problem, obj Objective, s *Settings) {
	b.ReportAllocs()
	var sol Solution
	c0 := cpuTime()
	for b.Loop() {
		var err error
		sol, err = Solve(context.Background(), p, obj, s)
		if err != nil {
			b.Fatal(err)
		}
	}
	if c := cpuTime() - c0; c > 0 {
		b.ReportMetric(float64(c.Microseconds())/1e3/float64(b.N), "cpu-ms/op")
	}
	b.ReportMetric(sol.Gap, "gap")
	b.ReportMetric(float64(sol.Iterations), "rounds")
}

// BenchmarkMaxMin is the headline figure: heterogeneity-aware max-min
// fairness at 2,048 and 10,000 jobs × 4 types, at the default tolerance
// (1e-7) and at the 0.005 gap the target allows.
func BenchmarkMaxMin(b *testing.B) {
	for _, n := range []int{2048, 10000} {
		p := benchProblem(n, 4)
		for _, tol := range []float64{0, 0.005} {
			b.Run(fmt.Sprintf("jobs=%d/types=4/tol=%g", n, tol), func(b *testing.B) {
				benchSolve(b, p, MaxMinFairness{}, &Settings{Tolerance: tol})
			})
		}
	}
}

// BenchmarkMaxMinPOP measures POP partitioning against the direct solve.
func BenchmarkMaxMinPOP(b *testing.B) {
	p := benchProblem(10000, 4)
	for _, k := range []int{1, 4, 16} {
		b.Run(fmt.Sprintf("jobs=10000/parts=%d", k), func(b *testing.B) {
			benchSolve(b, p, MaxMinFairness{}, &Settings{Partitions: k, Tolerance: 0.005})
		})
	}
}

func BenchmarkObjectives(b *testing.B) {
	p := benchProblem(2048, 4)
	clear(p.Elapsed) // all jobs just arrived: finish-time fairness is not trivial
	cost := []float64{3, 2, 1.5, 1}
	for _, obj := range []Objective{MaxMinFairness{HeterogeneityBlind: true}, MaxMinFairness{WaterFilling: true},
		MinMakespan{}, MaxThroughputPerCost{CostPerHour: cost}, FinishTimeFairness{}} {
		b.Run(obj.Name(), func(b *testing.B) {
			benchSolve(b, p, obj, &Settings{Tolerance: 0.005})
		})
	}
}

// BenchmarkPolicyRound is one Allocate of the round mechanism: 2,048 jobs
// of Gavel's classes on 256 nodes × 4 devices of three types.
func BenchmarkPolicyRound(b *testing.B) {
	benchPolicyRound(b, 2048, "64x4:v100,96x4:p100,96x4:k80", false)
}

// BenchmarkPolicyRoundLarge is the Policy round at 50,000 jobs of Gavel's
// classes on 4,096 nodes × 4 devices (16,384 GPUs: 1,024 v100, 1,536 p100
// and 1,536 k80 nodes, the BenchmarkPolicyRound cluster × 16; the cluster
// of examples/benchmark's gavel_round_50000_ms). Each round runs on the
// previous round's placement, 6 minutes later, so most running jobs keep
// their devices. "policy" times scheduler.NewRound + Policy.Allocate (the
// Packer's placement between rounds is not timed); "schedule" times a
// whole Scheduler.Schedule with placement.Packer, as examples/benchmark
// does.
func BenchmarkPolicyRoundLarge(b *testing.B) {
	const n, spec = 50000, "1024x4:v100,1536x4:p100,1536x4:k80"
	b.Run("policy", func(b *testing.B) { benchPolicyRound(b, n, spec, false) })
	b.Run("schedule", func(b *testing.B) { benchPolicyRound(b, n, spec, true) })
}

// benchPolicyRound times rounds of n trace jobs on the cluster spec, each
// on the placement of the one before: NewRound + Allocate, or with
// schedule the whole Scheduler.Schedule with the Packer.
func benchPolicyRound(b *testing.B, n int, spec string, schedule bool) {
	tab, err := Published()
	if err != nil {
		b.Fatal(err)
	}
	c, err := accel.ParseSpec(spec)
	if err != nil {
		b.Fatal(err)
	}
	trace := gavelTrace(b, tab, n, time.Second, 1)
	jobs, throughput := traceJobs(tab, trace)
	pol, err := NewPolicy(Config{Throughput: throughput,
		Settings: Settings{Tolerance: 0.005}})
	if err != nil {
		b.Fatal(err)
	}
	s, err := scheduler.New(scheduler.Config{Policy: pol, Placer: placement.Packer{}})
	if err != nil {
		b.Fatal(err)
	}
	var cur []placement.Assignment
	var cpu time.Duration
	b.ReportAllocs()
	r := 0
	for b.Loop() {
		in := scheduler.Input{Cluster: c, Jobs: jobs, Current: cur, Now: t0.Add(time.Duration(r) * 6 * time.Minute)}
		r++
		c0 := cpuTime()
		if schedule {
			plan, err := s.Schedule(context.Background(), in)
			if err != nil {
				b.Fatal(err)
			}
			cpu += cpuTime() - c0
			cur = plan.Assignments()
			continue
		}
		tg, err := allocate(pol, in)
		if err != nil {
			b.Fatal(err)
		}
		cpu += cpuTime() - c0
		b.StopTimer()
		res, err := packTargets(c, cur, tg)
		if err != nil {
			b.Fatal(err)
		}
		cur = res.Assignments
		b.StartTimer()
	}
	if cpu > 0 {
		b.ReportMetric(float64(cpu.Microseconds())/1e3/float64(b.N), "cpu-ms/op")
	}
}

// BenchmarkWaterFilling is leximin water-filling at the default tolerance on
// the reference instance with 200 and 1,000 jobs on 4 and 6 types: every
// level's bottleneck jobs are proven by LPs, so it costs tens of max-min
// solves.
func BenchmarkWaterFilling(b *testing.B) {
	for _, n := range []int{200, 1000} {
		for _, k := range []int{4, 6} {
			p := benchProblem(n, k)
			b.Run(fmt.Sprintf("jobs=%d/types=%d", n, k), func(b *testing.B) {
				benchSolve(b, p, MaxMinFairness{WaterFilling: true}, nil)
			})
		}
	}
}

package main

import (
	"context"
	"fmt"
	"reflect"
	"time"

	"github.com/goodsched/goodsched/accel"
	"github.com/goodsched/goodsched/placement"
	"github.com/goodsched/goodsched/scheduler"
	"github.com/goodsched/goodsched/scheduler/baselines"
	"github.com/goodsched/goodsched/scheduler/sim"
	"github.com/goodsched/goodsched/scheduler/sim/env"
	"github.com/goodsched/goodsched/scheduler/sim/polluxdata"
)

// EnvResult holds the figures of the simulator's step-wise environment
// (package scheduler/sim/env) on Pollux's default workload: its eight
// workloads of 160 jobs on 16 nodes × 4 T4, rigid jobs, FIFO as the agent.
type EnvResult struct {
	// StepsPerSecond is the environment's throughput through the Go API:
	// steps over the wall time spent inside Reset and Step (the agent's
	// own decisions are not counted), the best of the passes over the
	// workloads; over the CPU time instead with -clock cpu (ClockCPU).
	StepsPerSecond float64 `json:"env_steps_per_s"`
	// ClockCPU is 1 when StepsPerSecond is over CPU time.
	ClockCPU int `json:"env_clock_cpu,omitempty"`
	// CPUStepsPerSecond is the same over the CPU time the process spent
	// inside Reset and Step (every thread's, the garbage collector's
	// included), which other processes on a loaded machine do not skew;
	// 0 where the platform does not report it.
	CPUStepsPerSecond float64 `json:"env_cpu_steps_per_s"`
	// FIFOMatchesSim reports that FIFO played through the environment gave
	// exactly (every field of sim.Result) what sim.Run gives with FIFO as
	// its policy, on every workload.
	FIFOMatchesSim bool `json:"env_fifo_matches_sim"`
	// Steps is the number of steps of one pass; Episodes its episodes.
	Steps    int `json:"env_steps"`
	Episodes int `json:"env_episodes"`
}

// measureEnv plays FIFO through the environment on the first workloads
// of Pollux's default set, passes times, and compares each episode's
// result with the simulator's own FIFO run.
func measureEnv(workloads, passes int, cpuClock bool) (EnvResult, error) {
	ctx := context.Background()
	apps, err := sim.LoadProfiles(sim.ProfileOptions{}, sim.ProfileSource{FS: polluxdata.FS, Dir: "traces"})
	if err != nil {
		return EnvResult{}, err
	}
	ws, err := sim.LoadWorkloads(polluxdata.FS, "workloads")
	if err != nil {
		return EnvResult{}, err
	}
	ws = ws[:min(workloads, len(ws))]
	cluster, err := accel.ParseSpec("16x4:t4")
	if err != nil {
		return EnvResult{}, err
	}
	// As examples/simulate runs its fifo policy.
	base := sim.Config{Cluster: cluster, Apps: apps, Kind: scheduler.Rigid, Placer: placement.Packer{}}
	var all [][]sim.JobSpec
	for _, w := range ws {
		all = append(all, w.Jobs)
	}
	e, err := env.New(env.Config{Sim: base, Workloads: all})
	if err != nil {
		return EnvResult{}, err
	}
	defer e.Close()
	out := EnvResult{FIFOMatchesSim: true, Episodes: len(ws)}
	best, bestCPU := time.Duration(0), time.Duration(0)
	for pass := 0; pass < passes; pass++ {
		var inEnv, inEnvCPU time.Duration
		steps := 0
		for i := range ws {
			start, startCPU := time.Now(), cpuTime()
			_, err := e.Reset(uint64(i))
			inEnv, inEnvCPU = inEnv+time.Since(start), inEnvCPU+cpuTime()-startCPU
			if err != nil {
				return out, err
			}
			for {
				tg, err := baselines.FIFO{}.Allocate(ctx, e.Round())
				if err != nil {
					return out, err
				}
				a := env.ActionOf(tg)
				start, startCPU := time.Now(), cpuTime()
				st, err := e.Step(a)
				inEnv, inEnvCPU = inEnv+time.Since(start), inEnvCPU+cpuTime()-startCPU
				if err != nil {
					return out, err
				}
				steps++
				if st.Done {
					break
				}
			}
			if pass > 0 {
				continue
			}
			got, err := e.Result()
			if err != nil {
				return out, err
			}
			cfg := base
			cfg.Jobs, cfg.Policy = all[i], baselines.FIFO{}
			want, err := sim.Run(ctx, cfg)
			if err != nil {
				return out, err
			}
			if !reflect.DeepEqual(got, want) {
				out.FIFOMatchesSim = false
			}
		}
		out.Steps = steps
		if best == 0 || inEnv < best {
			best = inEnv
		}
		if bestCPU == 0 || inEnvCPU < bestCPU {
			bestCPU = inEnvCPU
		}
	}
	if best <= 0 {
		return out, fmt.Errorf("no time measured")
	}
	out.StepsPerSecond = float64(out.Steps) / best.Seconds()
	if bestCPU > 0 {
		out.CPUStepsPerSecond = float64(out.Steps) / bestCPU.Seconds()
	}
	if cpuClock {
		out.StepsPerSecond, out.ClockCPU = out.CPUStepsPerSecond, 1
	}
	return out, nil
}

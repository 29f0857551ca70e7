package main

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"runtime"
	"time"

	"github.com/goodsched/goodsched/fleet"
	"github.com/goodsched/goodsched/scheduler"
)

// fleetProcs is the GOMAXPROCS of the fleet round's wall-time ratio: one
// per cluster.
const fleetProcs = 5

// fleetShape is the fleet part's instance (issue 50): 5 clusters, each a
// fifth of the 20,000×100,000 generated cluster (625×8 a100, v100 and
// h100, 1,250×4 t4: 20,000 devices), and 20,000 jobs waiting at the
// fleet. With -quick: 5 clusters of 64 devices and 200 jobs.
func fleetShape(quick bool) (cluster shape, clusters int) {
	if quick {
		return shape{groups: []group{{2, 8, "a100"}, {2, 8, "v100"}, {4, 4, "t4"}, {2, 8, "h100"}}, jobs: 200}, 5
	}
	return shape{groups: []group{{625, 8, "a100"}, {625, 8, "v100"}, {1250, 4, "t4"}, {625, 8, "h100"}}, jobs: 20000}, 5
}

// fleetFigures measures fleet_overhead_cpu_ratio (the fleet layer's
// CPU time, fleet.Fleet.Route: validation, routing, the clusters'
// inputs, over the CPU time of the clusters' Pollux-policy rounds it
// feeds, each timed alone) and fleet_round_100k_wall_ratio (the wall time
// of fleet.Fleet.Schedule, its cluster rounds concurrent, over the wall
// time of its slowest cluster round alone, both at GOMAXPROCS 5), and
// reports their parts.
func fleetFigures(ctx context.Context, cfg config, log io.Writer, add func(key string, v float64, unit, target string)) error {
	sh, k := fleetShape(cfg.quick)
	rng := rand.New(rand.NewPCG(cfg.seed, 50))
	reps := min(cfg.reps, planetReps)
	fmt.Fprintf(log, "fleet: generating %d clusters of %d devices, %d jobs …\n", k, sh.devices(), sh.jobs)
	in := fleet.Input{Now: time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)}
	for i := range k {
		in.Clusters = append(in.Clusters, fleet.Cluster{Name: fmt.Sprintf("cluster-%d", i), Cluster: cluster(sh.groups)})
	}
	types := in.Clusters[0].Cluster.Types()
	for i := range sh.jobs {
		j, err := randomJob(rng, i, types, in.Now)
		if err != nil {
			return err
		}
		j.Attained = 0 // never ran: the fleet routes it freely
		in.Jobs = append(in.Jobs, fleet.Job{Job: j})
	}
	def := cfg.goodput()
	newFleet := func(workers int) (*fleet.Fleet, error) {
		f, err := fleet.New(fleet.Config{Workers: workers, NewScheduler: func(string) (*scheduler.Scheduler, error) { return scheduler.New(def) }})
		if err != nil {
			return nil, err
		}
		// One round without jobs, as every timed round's Scheduler has run.
		_, err = f.Schedule(ctx, fleet.Input{Clusters: in.Clusters, Now: in.Now})
		runtime.GC()
		return f, err
	}
	prev := runtime.GOMAXPROCS(fleetProcs)
	defer runtime.GOMAXPROCS(prev)
	cpu := cpuClock
	if !cpuClockWorks() {
		cpu = wallClock()
	}
	f, err := newFleet(1)
	if err != nil {
		return err
	}
	rt, err := f.Route(ctx, in)
	if err != nil {
		return err
	}
	fmt.Fprintln(log, "fleet: routing (the fleet layer alone) …")
	routeMS, err := medianMS(cpu, reps, nil, func() error {
		_, err := f.Route(ctx, in)
		return err
	})
	if err != nil {
		return err
	}
	var sumCPU, slowestWall float64
	for _, c := range rt.Clusters {
		fmt.Fprintf(log, "fleet: %s's round alone (%d jobs) …\n", c.Name, len(c.Input.Jobs))
		ms, _, err := timeRoundBudget(ctx, cpu, def, c.Input, nil, reps, cfg.budget, io.Discard)
		if err != nil {
			return err
		}
		sumCPU += ms
		wall, _, err := timeRoundBudget(ctx, wallClock(), def, c.Input, nil, reps, cfg.budget, io.Discard)
		if err != nil {
			return err
		}
		slowestWall = max(slowestWall, wall)
	}
	fmt.Fprintln(log, "fleet: fleet rounds, one goroutine per cluster …")
	var g *fleet.Fleet
	var plan fleet.Plan
	roundMS, err := medianMS(wallClock(), reps, func() (err error) {
		g, err = newFleet(0)
		return err
	}, func() (err error) {
		plan, err = g.Schedule(ctx, in)
		return err
	})
	if err != nil {
		return err
	}
	placed := 0
	for _, d := range plan.Jobs {
		if d.Cluster.To > 0 {
			placed++
		}
	}
	fmt.Fprintf(log, "  route %.4g ms CPU, cluster rounds %.4g ms CPU in all, slowest %.4g ms wall, fleet round %.4g ms wall; %d of %d jobs run\n",
		routeMS, sumCPU, slowestWall, roundMS, placed, len(in.Jobs))
	size := fmt.Sprintf("%dx%d", k, sh.devices())
	add("fleet_route_"+size+"_ms", routeMS, "ms", "")
	add("fleet_round_"+size+"_ms", roundMS, "ms", "")
	add("fleet_slowest_cluster_round_"+size+"_ms", slowestWall, "ms", "")
	add("fleet_overhead_cpu_ratio", routeMS/sumCPU, "ratio", "≤ 0.1")
	add("fleet_round_100k_wall_ratio", roundMS/slowestWall, "ratio", "≤ 1.2 at GOMAXPROCS 5")
	add("fleet_gomaxprocs", float64(fleetProcs), "", "")
	add("fleet_cores", float64(runtime.NumCPU()), "", "")
	return nil
}

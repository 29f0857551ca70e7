package main

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"github.com/goodsched/goodsched/accel"
	"github.com/goodsched/goodsched/carbon"
	"github.com/goodsched/goodsched/energy"
	"github.com/goodsched/goodsched/placement"
	"github.com/goodsched/goodsched/provision"
	"github.com/goodsched/goodsched/scheduler"
)

// provisionFigure times one provision.Planner decision (which nodes stay
// on, the jobs planned jointly as examples/simulate -provision plans
// them) for nodes nodes of 4 T4 and jobs jobs, the median of reps after a
// warm-up, in ms: delay-tolerant jobs (nine in ten) with concave
// speedups, deadlines 6 to 54 h ahead and up to 200 device-hours of work,
// a third running on 1 to 4 devices of a node of their own, the rest
// unable to wait, under a week of hourly intensity with a daily cycle.
func provisionFigure(clk clock, rng *rand.Rand, nodes, jobs, reps int) (float64, error) {
	cl, err := accel.ParseSpec(fmt.Sprintf("%dx4:t4", nodes))
	if err != nil {
		return 0, err
	}
	now := time.Date(2022, 4, 11, 9, 20, 0, 0, time.UTC)
	ci := carbon.Series{Start: now.Truncate(time.Hour), Step: time.Hour, Unit: carbon.GPerKWh}
	for h := range 7 * 24 {
		ci.Values = append(ci.Values, 250+150*math.Cos(2*math.Pi*float64(h-4)/24)+20*rng.Float64())
	}
	in := scheduler.Input{Cluster: cl, Now: now, Carbon: ci}
	node := 0
	for i := range jobs {
		j := scheduler.Job{ID: fmt.Sprintf("j%04d", i), Submitted: now.Add(-time.Duration(rng.IntN(24*60)) * time.Minute),
			Kind: scheduler.Adaptive, MaxReplicas: 64, Speedup: amdahl(0.01 + 0.2*rng.Float64())}
		if rng.IntN(10) > 0 {
			j.DelayTolerant = true
			j.Deadline = now.Add(time.Duration(6+rng.IntN(48)) * time.Hour)
			j.RemainingWork = 3600 * (1 + 200*rng.Float64()*rng.Float64())
		}
		if rng.IntN(3) == 0 && node < nodes {
			var devs []string
			for d := range 1 + rng.IntN(4) {
				devs = append(devs, cl.Nodes[node].Devices[d].ID)
			}
			node++
			in.Current = append(in.Current, placement.Assignment{Job: j.ID, Devices: devs})
		}
		in.Jobs = append(in.Jobs, j)
	}
	states := make([]energy.NodeState, nodes)
	p := provision.Planner{Joint: true}
	return medianMS(clk, reps+1, nil, func() error {
		_, err := p.Provision(context.Background(), in, states)
		return err
	})
}

package provision

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/goodsched/goodsched/accel"
	"github.com/goodsched/goodsched/carbon"
	"github.com/goodsched/goodsched/energy"
	"github.com/goodsched/goodsched/placement"
	"github.com/goodsched/goodsched/scheduler"
)

// concave is the speedup c/(1+alpha·(c−1)).
type concave struct{ alpha float64 }

func (s concave) Speedup(_ string, _, k int) float64 {
	if k <= 0 {
		return 0
	}
	c := float64(k)
	return c / (1 + s.alpha*(c-1))
}

// BenchInput is a provisioning round of jobs jobs on nodes nodes of 4
// T4: delay-tolerant jobs with concave speedups, deadlines 6 to 54 h
// ahead and up to a few hundred device-hours of work, a third of them
// running on 1 to 4 devices, a tenth that cannot wait, under a week of
// hourly intensity with a daily cycle. Exported for examples/benchmark
// through BenchmarkInput.
func benchInput(nodes, jobs int, seed uint64) scheduler.Input {
	rng := rand.New(rand.NewPCG(seed, 49))
	cl, _ := accel.ParseSpec(fmt.Sprintf("%dx4:t4", nodes))
	now := time.Date(2022, 4, 11, 9, 20, 0, 0, time.UTC)
	ci := carbon.Series{Start: now.Truncate(time.Hour), Step: time.Hour, Unit: carbon.GPerKWh}
	for h := range 7 * 24 {
		ci.Values = append(ci.Values, 250+150*math.Cos(2*math.Pi*float64(h+9-13)/24)+20*rng.Float64())
	}
	in := scheduler.Input{Cluster: cl, Now: now, Carbon: ci}
	free := 0
	for i := range jobs {
		j := scheduler.Job{ID: fmt.Sprintf("j%04d", i), Submitted: now.Add(-time.Duration(rng.IntN(24*60)) * time.Minute),
			Kind: scheduler.Adaptive, MaxReplicas: 64, Speedup: concave{alpha: 0.01 + 0.2*rng.Float64()}}
		if rng.IntN(10) > 0 {
			j.DelayTolerant = true
			j.Deadline = now.Add(time.Duration(6+rng.IntN(48)) * time.Hour)
			j.RemainingWork = 3600 * (1 + 200*rng.Float64()*rng.Float64())
		}
		if rng.IntN(3) == 0 && free+4 <= cl.Size() {
			k := 1 + rng.IntN(4)
			var devs []string
			for range k {
				n, d := free/4, free%4
				devs = append(devs, cl.Nodes[n].Devices[d].ID)
				free++
			}
			free = (free + 3) / 4 * 4 // one job per node
			in.Current = append(in.Current, placement.Assignment{Job: j.ID, Devices: devs})
		}
		in.Jobs = append(in.Jobs, j)
	}
	return in
}

// BenchmarkProvision1000Nodes: one decision for 1,000 nodes and 2,000
// jobs, planned jointly as examples/simulate -provision plans them
// (examples/benchmark reports it as provision_1000_nodes_ms; target
// ≤ 20 ms).
func BenchmarkProvision1000Nodes(b *testing.B) {
	in := benchInput(1000, 2000, 1)
	states := make([]energy.NodeState, len(in.Cluster.Nodes))
	p := Planner{Joint: true}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := p.Provision(context.Background(), in, states); err != nil {
			b.Fatal(err)
		}
	}
}

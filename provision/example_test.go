package provision_test

import (
	"context"
	"fmt"
	"time"

	"github.com/goodsched/goodsched/accel"
	"github.com/goodsched/goodsched/carbon"
	"github.com/goodsched/goodsched/placement"
	"github.com/goodsched/goodsched/provision"
	"github.com/goodsched/goodsched/scheduler"
)

// linear is a speedup of k on k devices.
type linear struct{}

func (linear) Speedup(_ string, _, k int) float64 { return float64(k) }

// Four nodes of 4 T4 at 9:00, with the grid dirty until 11:00 and then
// clean for an hour: the one delay-tolerant job's plan runs it at full
// width in the clean hour, so every node goes down now; the node that
// holds a job that cannot wait stays on. Nodes down for 2 h are powered
// off (past the 1.9 h break-even of off over suspend).
func ExamplePlanner_Provision() {
	cluster, _ := accel.ParseSpec("4x4:t4")
	now := time.Date(2022, 4, 11, 9, 0, 0, 0, time.UTC)
	ci := carbon.Series{Start: now, Step: time.Hour, Unit: carbon.GPerKWh,
		Values: []float64{420, 400, 90, 380, 410, 430, 440, 450, 450, 440, 430, 420}}
	in := scheduler.Input{Cluster: cluster, Now: now, Carbon: ci, Jobs: []scheduler.Job{
		{ID: "train", Kind: scheduler.Elastic, MaxReplicas: 16, Speedup: linear{}, Submitted: now,
			DelayTolerant: true, Deadline: now.Add(12 * time.Hour), RemainingWork: 16 * 3600 * 0.75},
		{ID: "serve", Kind: scheduler.Rigid, Requested: 1},
	}}
	in.Current = []placement.Assignment{{Job: "serve", Devices: []string{cluster.Nodes[3].Devices[0].ID}}}
	states, err := provision.Planner{}.Provision(context.Background(), in, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	for i, s := range states {
		fmt.Printf("%s: %v\n", cluster.Nodes[i].Name, s)
	}
	d, _ := provision.Planner{}.Demand(in)
	fmt.Println("t4 devices per hour:", d.Devices[0][:4])
	// Output:
	// t4-0: off
	// t4-1: off
	// t4-2: off
	// t4-3: on
	// t4 devices per hour: [1 1 16 1]
}

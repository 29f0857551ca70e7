package topoplace_test

import (
	"context"
	"fmt"

	"github.com/goodsched/goodsched/accel"
	"github.com/goodsched/goodsched/accel/topology"
	"github.com/goodsched/goodsched/placement"
	"github.com/goodsched/goodsched/scheduler/topoplace"
)

// Two NVLink racks of two 4-GPU nodes under one IB block. A gang that
// requires one rack goes to the rack it fills best (r0, next to the
// running job, leaving r1 whole); a gang that requires a rack larger than
// any waits with a reason naming the level.
func Example() {
	c, _ := accel.ParseSpec("4x4:gb200") // nodes gb200-0..gb200-3
	top, _ := topology.Build(topology.Spec{
		Levels: []topology.Level{{Name: "block", Bandwidth: 50}, {Name: "rack", Bandwidth: 900}},
		Domains: []topology.DomainSpec{{Name: "b0", Level: "block"},
			{Name: "r0", Level: "rack", Parent: "b0"}, {Name: "r1", Level: "rack", Parent: "b0"}},
		Nodes: []topology.Membership{{Node: "gb200-0", Domain: "r0"}, {Node: "gb200-1", Domain: "r0"},
			{Node: "gb200-2", Domain: "r1"}, {Node: "gb200-3", Domain: "r1"}},
	})
	x, _ := placement.NewIndex(c)
	p := topoplace.Placer{
		Topology: top,
		Constraint: func(job string) topoplace.Constraint {
			return topoplace.Constraint{Required: "rack"}
		},
		Keep: map[string]float64{"rack": 1, "block": 0.5}, // NVLink racks, IB between them
	}
	res, err := p.Place(context.Background(), placement.PlaceInput{Cluster: x,
		Current: []placement.Assignment{{Job: "small", Devices: []string{"gb200-0/0"}}},
		Targets: []placement.Target{
			{Job: "small", Type: "gb200", Count: 1},
			{Job: "train", Type: "gb200", Count: 6},
			{Job: "huge", Type: "gb200", Count: 12},
		}})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, a := range res.Assignments {
		fmt.Println(a.Job, a.Devices)
	}
	for _, u := range res.Unplaced {
		fmt.Println(u.Target.Job, "waits:", u.Reason.Code, "-", u.Reason.Text)
	}
	// Output:
	// small [gb200-0/0]
	// train [gb200-0/1 gb200-0/2 gb200-1/0 gb200-1/1 gb200-1/2 gb200-1/3]
	// huge waits: topology - no rack domain holds 12 free gb200 devices (most: 8 in r1)
}

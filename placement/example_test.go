package placement_test

import (
	"fmt"

	"github.com/goodsched/goodsched/accel"
	"github.com/goodsched/goodsched/placement"
)

// Example places a job that may run on either of two types on the one
// where it is worth most (here by goodput per type), and shows what is
// left.
func Example() {
	node := func(name string, t accel.TypeKey, n int) accel.Node {
		nd := accel.Node{Name: name}
		for i := range n {
			nd.Devices = append(nd.Devices, accel.Device{
				ID: fmt.Sprintf("%s/%d", name, i), Node: name, Index: i, Type: t, NUMANode: 0, Healthy: true,
			})
			for j := i + 1; j < n; j++ {
				nd.Links = append(nd.Links, accel.Link{A: i, B: j, NVLinks: 12})
			}
		}
		return nd
	}
	cluster := accel.Cluster{Nodes: []accel.Node{
		node("a100-0", "a100-40gb", 8),
		node("a100-1", "a100-40gb", 8),
		node("v100-0", "v100", 8),
	}}
	// a100-0 is half used already.
	state, err := placement.NewState(cluster, []placement.Assignment{
		{Job: "old", Devices: []string{"a100-0/0", "a100-0/1", "a100-0/2", "a100-0/3"}},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	var p placement.Chooser // pack, interference avoidance on
	req := placement.Request{
		Job:    "bert",
		Types:  []accel.TypeKey{"v100", "a100-40gb"},
		Values: map[accel.TypeKey]float64{"v100": 1.0, "a100-40gb": 2.6}, // goodput per type
		Count:  4,
	}
	a, err := p.Place(state, req)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(a.Job, a.Devices)
	if err := state.Assign(a); err != nil {
		fmt.Println(err)
		return
	}
	// Two more 8-GPU single-node gangs: the first takes the idle a100 node,
	// the second falls back to the v100s.
	for _, job := range []string{"gpt", "t5"} {
		req.Job, req.Count, req.SingleNode = job, 8, true
		a, err = p.Place(state, req)
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println(a.Job, a.Devices)
		if err := state.Assign(a); err != nil {
			fmt.Println(err)
			return
		}
	}
	for _, f := range state.Fragmentation() {
		fmt.Printf("%s: free %d, largest one-node gang %d, partly used nodes %d\n", f.Type, f.Free, f.LargestNodeGang, f.PartlyUsedNodes)
	}
	// Output:
	// bert [a100-0/4 a100-0/5 a100-0/6 a100-0/7]
	// gpt [a100-1/0 a100-1/1 a100-1/2 a100-1/3 a100-1/4 a100-1/5 a100-1/6 a100-1/7]
	// t5 [v100-0/0 v100-0/1 v100-0/2 v100-0/3 v100-0/4 v100-0/5 v100-0/6 v100-0/7]
	// a100-40gb: free 0, largest one-node gang 0, partly used nodes 0
	// v100: free 0, largest one-node gang 0, partly used nodes 0
}

// ExampleChooser_Round realises a round of targets with the fewest moves:
// a satisfied job stays, a job grows next to its devices, a job that must
// change type moves, a new gang starts, a job without target stops.
func ExampleChooser_Round() {
	var cluster accel.Cluster
	for _, n := range []struct {
		name string
		typ  accel.TypeKey
	}{{"a0", "a100-40gb"}, {"a1", "a100-40gb"}, {"t0", "t4"}} {
		nd := accel.Node{Name: n.name}
		for i := range 4 {
			nd.Devices = append(nd.Devices, accel.Device{ID: fmt.Sprintf("%s/%d", n.name, i), Node: n.name, Index: i, Type: n.typ, NUMANode: -1, Healthy: true})
		}
		cluster.Nodes = append(cluster.Nodes, nd)
	}
	state, err := placement.NewState(cluster, []placement.Assignment{
		{Job: "stay", Devices: []string{"a0/0", "a0/1"}},
		{Job: "grow", Devices: []string{"a0/2"}},
		{Job: "retype", Devices: []string{"t0/0", "t0/1"}},
		{Job: "done", Devices: []string{"t0/2"}},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	var p placement.Chooser
	res, err := p.Round(state, []placement.Target{
		{Job: "stay", Type: "a100-40gb", Count: 2},
		{Job: "grow", Type: "a100-40gb", Count: 2},
		{Job: "retype", Type: "a100-40gb", Count: 2},
		{Job: "new", Type: "t4", Count: 4},
		{Job: "big", Type: "a100-40gb", Count: 8},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, d := range res.Decisions {
		fmt.Println(d.Job, d.Action, d.Devices)
	}
	for _, u := range res.Unplaced {
		fmt.Printf("unplaced %s: %s: %s\n", u.Target.Job, u.Reason.Code, u.Reason.Text)
	}
	// Output:
	// done stop []
	// grow grow [a0/2 a0/3]
	// new start [t0/0 t0/1 t0/2 t0/3]
	// retype move [a1/0 a1/1]
	// stay keep [a0/0 a0/1]
	// unplaced big: capacity: 2 free a100-40gb devices, 8 asked
}

package scheduler_test

import (
	"context"
	"fmt"
	"time"

	"github.com/goodsched/goodsched/accel"
	"github.com/goodsched/goodsched/placement"
	"github.com/goodsched/goodsched/scheduler"
)

// amdahl is a toy concave speedup: faster devices by a per-type factor,
// a serial fraction, and a penalty per extra node.
type amdahl struct {
	serial float64
	perTyp map[string]float64
}

func (a amdahl) Speedup(typ string, nodes, replicas int) float64 {
	if replicas <= 0 {
		return 0
	}
	n := float64(replicas)
	s := a.perTyp[typ] * n / (1 + a.serial*(n-1))
	for k := 1; k < nodes; k++ {
		s *= 0.9
	}
	return s
}

// mixed is two 4-GPU A100 nodes and two 4-GPU T4 nodes.
func mixed() accel.Cluster {
	var c accel.Cluster
	for _, spec := range []struct {
		name string
		typ  accel.TypeKey
	}{{"a0", "a100"}, {"a1", "a100"}, {"t0", "t4"}, {"t1", "t4"}} {
		n := accel.Node{Name: spec.name}
		for i := range 4 {
			n.Devices = append(n.Devices, accel.Device{ID: fmt.Sprintf("%s/%d", spec.name, i), Node: spec.name, Index: i, Type: spec.typ, Healthy: true, NUMANode: -1})
		}
		c.Nodes = append(c.Nodes, n)
	}
	return c
}

// Example schedules four jobs on a small mixed cluster: a running elastic
// job that can grow, a new adaptive job that prefers A100s, a rigid job
// that asks for 2 devices and a non-preemptible job that stays put.
func Example() {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	fast := map[string]float64{"a100": 3, "t4": 1}
	in := scheduler.Input{
		Cluster: mixed(),
		Now:     now,
		Jobs: []scheduler.Job{
			{ID: "bert", Kind: scheduler.Elastic, MinReplicas: 1, MaxReplicas: 8, Submitted: now.Add(-2 * time.Hour),
				Speedup: amdahl{serial: 0.05, perTyp: fast}, Types: []accel.TypeKey{"a100"}},
			{ID: "resnet", Kind: scheduler.Adaptive, MinReplicas: 1, MaxReplicas: 4, Submitted: now.Add(-time.Minute),
				Speedup: amdahl{serial: 0.02, perTyp: fast}},
			{ID: "yolo", Kind: scheduler.Rigid, Requested: 2, Submitted: now.Add(-30 * time.Minute),
				Speedup: amdahl{serial: 0.1, perTyp: map[string]float64{"a100": 1.5, "t4": 1}}},
			{ID: "ncf", Kind: scheduler.Elastic, MinReplicas: 1, MaxReplicas: 2, NonPreemptible: true, Submitted: now.Add(-3 * time.Hour)},
		},
		Current: []placement.Assignment{
			{Job: "bert", Devices: []string{"a0/0", "a0/1"}},
			{Job: "ncf", Devices: []string{"t1/0"}},
		},
	}
	s, err := scheduler.New(scheduler.Config{}) // Pollux policy, placement round
	if err != nil {
		fmt.Println(err)
		return
	}
	plan, err := s.Schedule(context.Background(), in)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, d := range plan.Decisions {
		fmt.Printf("%-6s %-5v %v\n", d.Job, d.Action, d.Assignment.Devices)
		fmt.Printf("       %s\n", d.Message)
	}
	// Output:
	// bert   grow  [a0/0 a0/1 a0/2 a0/3]
	//        grew 2→4: speedup 5.71→10.43, restart factor 1.00
	// ncf    keep  [t1/0]
	//        kept 1×t4: non-preemptible
	// resnet start [a1/0 a1/1 a1/2 a1/3]
	//        started on 4×a100 (1 node): speedup 0.00→11.32
	// yolo   start [t1/1 t1/2]
	//        started on 2×t4 (1 node): speedup 0.00→1.82
}

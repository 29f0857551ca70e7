package scheduler_test

import (
	"context"
	"fmt"
	"time"

	"github.com/goodsched/goodsched/accel"
	"github.com/goodsched/goodsched/placement"
	"github.com/goodsched/goodsched/scheduler"
	"github.com/goodsched/goodsched/scheduler/quota"
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

// ExampleQueue shares 8 A100s between two teams with 4 guaranteed each.
// In round 1 only nlp has work and borrows vision's idle quota; in round
// 2 vision's job arrives and reclaims its 4 devices within the round.
func ExampleQueue() {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	fast := map[string]float64{"a100": 3, "t4": 1}
	in := scheduler.Input{
		Cluster: mixed(),
		Now:     now,
		Queues: []quota.Queue{
			{Name: "nlp", Quotas: []quota.Quota{{Type: "a100", Nominal: 4}}},
			{Name: "vision", Quotas: []quota.Quota{{Type: "a100", Nominal: 4}}},
		},
		Jobs: []scheduler.Job{
			{ID: "gpt", Queue: "nlp", Kind: scheduler.Elastic, MinReplicas: 1, MaxReplicas: 8, Types: []accel.TypeKey{"a100"},
				Submitted: now.Add(-2 * time.Hour), Speedup: amdahl{serial: 0.02, perTyp: fast}},
		},
	}
	s, err := scheduler.New(scheduler.Config{})
	if err != nil {
		fmt.Println(err)
		return
	}
	show := func(plan scheduler.Plan) {
		for _, d := range plan.Decisions {
			fmt.Printf("%-4s %s\n", d.Job, d.Message)
		}
		for _, u := range plan.Queues {
			if u.Type == "a100" {
				fmt.Printf("  %-6s guaranteed %d, used %d, borrowed %d, lent %d, pending %d\n", u.Queue, u.Guaranteed, u.Used, u.Borrowed, u.Lent, u.Pending)
			}
		}
	}
	plan, err := s.Schedule(context.Background(), in)
	if err != nil {
		fmt.Println(err)
		return
	}
	show(plan)
	// Round 2: vision's job arrives.
	in.Current, in.Now = plan.Assignments(), now.Add(time.Minute)
	in.Jobs = append(in.Jobs, scheduler.Job{ID: "vit", Queue: "vision", Kind: scheduler.Elastic, MinReplicas: 1, MaxReplicas: 4,
		Types: []accel.TypeKey{"a100"}, Submitted: in.Now, Speedup: amdahl{serial: 0.02, perTyp: fast}})
	if plan, err = s.Schedule(context.Background(), in); err != nil {
		fmt.Println(err)
		return
	}
	show(plan)
	// Output:
	// gpt  started on 8×a100 (2 nodes): speedup 0.00→18.95; queue nlp borrows 4 a100 beyond its nominal 4
	//   nlp    guaranteed 4, used 8, borrowed 4, lent 0, pending 0
	//   vision guaranteed 4, used 0, borrowed 0, lent 4, pending 0
	// gpt  shrank 8→4: reclaimed by queue vision (below its nominal 4 a100); queue nlp held 8 a100, borrowed beyond its nominal 4 (entitled 4)
	// vit  started on 4×a100 (1 node): speedup 0.00→11.32; within queue vision's nominal 4 a100
	//   nlp    guaranteed 4, used 4, borrowed 0, lent 0, pending 4
	//   vision guaranteed 4, used 4, borrowed 0, lent 0, pending 0
}

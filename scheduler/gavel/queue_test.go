package gavel_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/goodsched/goodsched/accel"
	"github.com/goodsched/goodsched/scheduler"
	"github.com/goodsched/goodsched/scheduler/gavel"
	"github.com/goodsched/goodsched/scheduler/quota"
)

// TestQueuesCapGavel: Gavel knows nothing of queues, so the Scheduler
// trims its targets to the queues' entitlements: a queue with a nominal
// quota of 2 of 8 devices and no borrowing never holds more than 2, round
// after round, while the other queue's jobs use the rest.
func TestQueuesCapGavel(t *testing.T) {
	var cl accel.Cluster
	for n := range 2 {
		node := accel.Node{Name: fmt.Sprintf("n%d", n)}
		for d := range 4 {
			node.Devices = append(node.Devices, accel.Device{ID: fmt.Sprintf("n%d/%d", n, d), Node: node.Name, Index: d, Type: "v100", Healthy: true, NUMANode: -1})
		}
		cl.Nodes = append(cl.Nodes, node)
	}
	zero := 0
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	in := scheduler.Input{Cluster: cl, Now: now, Queues: []quota.Queue{
		{Name: "small", Quotas: []quota.Quota{{Type: "v100", Nominal: 2, BorrowingLimit: &zero}}},
		{Name: "big", Quotas: []quota.Quota{{Type: "v100", Nominal: 6}}},
	}}
	for k := range 6 {
		q := "small"
		if k%2 == 1 {
			q = "big"
		}
		in.Jobs = append(in.Jobs, scheduler.Job{ID: fmt.Sprintf("j%d", k), Queue: q, Kind: scheduler.Rigid, Requested: 1 + k%2, Submitted: now})
	}
	pol, err := gavel.NewPolicy(gavel.Config{})
	if err != nil {
		t.Fatal(err)
	}
	s, err := scheduler.New(scheduler.Config{Policy: pol})
	if err != nil {
		t.Fatal(err)
	}
	for round := range 5 {
		plan, err := s.Schedule(context.Background(), in)
		if err != nil {
			t.Fatal(err)
		}
		for _, u := range plan.Queues {
			if u.Used > u.Entitled || (u.Queue == "small" && u.Used > 2) {
				t.Fatalf("round %d: %+v", round, u)
			}
		}
		in.Current = plan.Assignments()
		in.Now = in.Now.Add(6 * time.Minute)
	}
}

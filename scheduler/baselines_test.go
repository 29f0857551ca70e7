package scheduler

import (
	"context"
	"testing"
	"time"

	"github.com/goodsched/goodsched/placement"
)

func counts(t *testing.T, pol Policy, in Input) map[string]int {
	t.Helper()
	s, _ := New(Config{Policy: pol})
	plan, err := s.Schedule(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	checkPlan(t, in, plan)
	out := make(map[string]int)
	for _, d := range plan.Decisions {
		out[d.Job] = d.To
	}
	return out
}

func TestBaselines(t *testing.T) {
	cl := testCluster(group{2, 4, "t4"}) // 8 devices
	h := time.Hour
	cases := []struct {
		name string
		pol  Policy
		in   Input
		want map[string]int
	}{
		{"fifo order and backfill", FIFO{}, Input{Cluster: cl, Now: t0.Add(h), Jobs: []Job{
			{ID: "a", Submitted: t0, Requested: 4},
			{ID: "b", Submitted: t0.Add(time.Minute), Requested: 8}, // does not fit: waits
			{ID: "c", Submitted: t0.Add(2 * time.Minute), Requested: 2},
		}}, map[string]int{"a": 4, "b": 0, "c": 2}},
		{"fifo never preempts", FIFO{}, Input{Cluster: cl, Now: t0.Add(h), Jobs: []Job{
			{ID: "old", Submitted: t0.Add(time.Minute), Requested: 8},
			{ID: "new", Submitted: t0, Requested: 4, Priority: 5},
		}, Current: []placement.Assignment{{Job: "old", Devices: []string{
			"t4-0-000/0", "t4-0-000/1", "t4-0-000/2", "t4-0-000/3", "t4-0-001/0", "t4-0-001/1", "t4-0-001/2", "t4-0-001/3"}}}},
			map[string]int{"old": 8, "new": 0}},
		{"fifo priority first", FIFO{}, Input{Cluster: cl, Now: t0.Add(h), Jobs: []Job{
			{ID: "a", Submitted: t0, Requested: 8},
			{ID: "b", Submitted: t0.Add(time.Minute), Requested: 8, Priority: 1},
		}}, map[string]int{"a": 0, "b": 8}},
		{"tiresias demotes at 16 GPU-hours", Tiresias{}, Input{Cluster: cl, Now: t0.Add(h), Jobs: []Job{
			{ID: "hog", Submitted: t0, Requested: 8, Attained: 20 * h},
			{ID: "fresh", Submitted: t0.Add(time.Minute), Requested: 8, Attained: h},
		}}, map[string]int{"hog": 0, "fresh": 8}},
		{"tiresias custom threshold", Tiresias{Threshold: 30 * h}, Input{Cluster: cl, Now: t0.Add(h), Jobs: []Job{
			{ID: "hog", Submitted: t0, Requested: 8, Attained: 20 * h},
			{ID: "fresh", Submitted: t0.Add(time.Minute), Requested: 8, Attained: h},
		}}, map[string]int{"hog": 8, "fresh": 0}},
		{"optimus favours long jobs' marginal gain", Optimus{}, Input{Cluster: cl, Now: t0.Add(h), Jobs: []Job{
			{ID: "long", Kind: Elastic, MinReplicas: 1, MaxReplicas: 8, RemainingWork: 1000},
			{ID: "short", Kind: Elastic, MinReplicas: 1, MaxReplicas: 8, RemainingWork: 10},
		}}, map[string]int{"long": 7, "short": 1}},
		{"optimus rigid gets requested", Optimus{}, Input{Cluster: cl, Now: t0.Add(h), Jobs: []Job{
			{ID: "r", Kind: Rigid, Requested: 2, RemainingWork: 5},
			{ID: "e", Kind: Elastic, MinReplicas: 1, MaxReplicas: 8, RemainingWork: 50},
		}}, map[string]int{"r": 2, "e": 6}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := counts(t, c.pol, c.in)
			for id, n := range c.want {
				if got[id] != n {
					t.Errorf("%s: %d devices, want %d (all: %v)", id, got[id], n, got)
				}
			}
		})
	}
}

// Interference avoidance: with the default configuration no node hosts
// two distributed jobs.
func TestInterferenceAvoided(t *testing.T) {
	for seed := uint64(0); seed < 6; seed++ {
		in := genInput(seed, genOpts{groups: []group{{8, 4, "t4"}}, jobs: 10, maxReplicas: 16, rounds: 2})
		s, _ := New(Config{})
		plan, err := s.Schedule(context.Background(), in)
		if err != nil {
			t.Fatal(err)
		}
		nodeOf := make(map[string]string)
		for _, n := range in.Cluster.Nodes {
			for _, d := range n.Devices {
				nodeOf[d.ID] = n.Name
			}
		}
		owner := make(map[string]string)
		for _, d := range plan.Decisions {
			if d.Nodes < 2 {
				continue
			}
			for _, id := range d.Assignment.Devices {
				n := nodeOf[id]
				if o, ok := owner[n]; ok && o != d.Job {
					t.Fatalf("seed %d: node %s hosts distributed jobs %s and %s", seed, n, o, d.Job)
				}
				owner[n] = d.Job
			}
		}
	}
}

// Config.AllowInterference lets two distributed jobs share a node: the
// policy and the placer read the one setting.
func TestAllowInterferenceReachesPolicyAndPlacer(t *testing.T) {
	in := Input{Cluster: testCluster(group{3, 4, "t4"}), Now: t0.Add(time.Hour), Jobs: []Job{
		{ID: "a", Kind: Adaptive, MinReplicas: 6, MaxReplicas: 6, Speedup: fakeSpeedup{node: 1}},
		{ID: "b", Kind: Adaptive, MinReplicas: 6, MaxReplicas: 6, Speedup: fakeSpeedup{node: 1}},
	}}
	for _, allow := range []bool{false, true} {
		s, _ := New(Config{AllowInterference: allow})
		plan, err := s.Schedule(context.Background(), in)
		if err != nil {
			t.Fatal(err)
		}
		checkPlan(t, in, plan)
		running := 0
		for _, d := range plan.Decisions {
			if len(d.Assignment.Devices) == 6 {
				running++
			}
		}
		if want := map[bool]int{false: 1, true: 2}[allow]; running != want {
			t.Errorf("AllowInterference %v: %d jobs running, want %d", allow, running, want)
		}
	}
}

// Heterogeneous: every job gets one type, and the fast policy puts a job
// that runs much faster on one type there when it can.
func TestHeterogeneousOneType(t *testing.T) {
	cl := testCluster(group{1, 4, "a100"}, group{1, 4, "t4"})
	in := Input{Cluster: cl, Now: t0.Add(time.Hour), Jobs: []Job{
		{ID: "loves-a100", Kind: Adaptive, MinReplicas: 1, MaxReplicas: 4, Speedup: fakeSpeedup{alpha: 0.05, node: 0.9, scale: map[string]float64{"a100": 5, "t4": 1}}},
		{ID: "indifferent", Kind: Adaptive, MinReplicas: 1, MaxReplicas: 4, Speedup: fakeSpeedup{alpha: 0.05, node: 0.9, scale: map[string]float64{"a100": 1.1, "t4": 1}}},
	}}
	s, _ := New(Config{})
	plan, err := s.Schedule(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	checkPlan(t, in, plan)
	if d, _ := plan.Decision("loves-a100"); d.Type != "a100" || d.To != 4 {
		t.Fatalf("loves-a100: %+v", d)
	}
	if d, _ := plan.Decision("indifferent"); d.Type != "t4" || d.To != 4 {
		t.Fatalf("indifferent: %+v", d)
	}
}

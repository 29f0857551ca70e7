package scheduler

import (
	"context"
	"testing"
	"time"
)

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

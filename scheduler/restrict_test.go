package scheduler

import (
	"errors"
	"testing"
	"time"
)

// TestRestrict: a view leaves jobs out, caps them and holds them to one
// type; bad limits fail with ErrPolicy.
func TestRestrict(t *testing.T) {
	in := Input{Cluster: testCluster(group{2, 4, "t4"}, group{1, 8, "a100"}), Now: t0.Add(time.Hour), Jobs: []Job{
		{ID: "a", Submitted: t0, Kind: Elastic, MinReplicas: 2, MaxReplicas: 8},
		{ID: "b", Submitted: t0, Kind: Elastic, MinReplicas: 1, MaxReplicas: 4},
		{ID: "c", Submitted: t0, Kind: Rigid, Requested: 2},
	}}
	r, err := NewRound(in)
	if err != nil {
		t.Fatal(err)
	}
	v, err := r.Restrict([]Limit{{Job: "a", Max: 3, Type: "t4"}, {Job: "b", Out: true}})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := v.Job("b"); ok {
		t.Fatal("b is in the view")
	}
	a, _ := v.Job("a")
	if a.Max != 3 || len(a.Types) != 1 || a.Types[0] != "t4" {
		t.Fatalf("a in the view: max %d, types %v", a.Max, a.Types)
	}
	if orig, _ := r.Job("a"); orig.Max != 8 || len(orig.Types) != 2 {
		t.Fatalf("the round changed: %+v", orig)
	}
	for _, bad := range [][]Limit{
		{{Job: "zz", Max: 1}}, {{Job: "a", Max: 1}}, {{Job: "a", Type: "v100"}}, {{Job: "a", Max: 4}, {Job: "a", Out: true}},
	} {
		if _, err := r.Restrict(bad); !errors.Is(err, ErrPolicy) {
			t.Errorf("%+v: err = %v, want ErrPolicy", bad, err)
		}
	}
}

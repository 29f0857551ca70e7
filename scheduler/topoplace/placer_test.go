package topoplace

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/goodsched/goodsched/accel/topology"
	"github.com/goodsched/goodsched/placement"
)

func place(t *testing.T, p Placer, x *placement.Index, cur []placement.Assignment, tg ...placement.Target) placement.PlaceResult {
	t.Helper()
	res, err := p.Place(context.Background(), placement.PlaceInput{Cluster: x, Current: cur, Targets: tg})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// perDomain counts a job's devices per rack.
func perRack(devs []string) map[string]int {
	out := map[string]int{}
	for _, d := range devs {
		out[d[:strings.LastIndex(d[:strings.LastIndex(d, "/")], "/")]]++
	}
	return out
}

// TestBalancedKEPExample: Kueue's KEP example, 12 pods on two domains of
// 10 free: BestFit gives 10+2, Balanced 6+6.
func TestBalancedKEPExample(t *testing.T) {
	_, top, x := fabric(t, 1, 2, 10, 1, nil)
	for _, bal := range []bool{false, true} {
		for _, st := range []Strategy{BestFit, LeastLoss} {
			p := Placer{Topology: top, Strategy: st, Constraint: constraints(map[string]Constraint{"j": {Preferred: "rack", Balanced: bal}})}
			res := place(t, p, x, nil, placement.Target{Job: "j", Type: "gb200", Count: 12})
			got := perRack(res.Assignments[0].Devices)
			counts := []int{got["b0/r0"], got["b0/r1"]}
			slices.Sort(counts)
			want := []int{2, 10}
			if bal {
				want = []int{6, 6}
			}
			if !slices.Equal(counts, want) {
				t.Errorf("%v balanced=%v: per rack %v, want %v", st, bal, counts, want)
			}
		}
	}
}

// TestRequiredWaits: a required level no domain can hold makes that job
// wait with ReasonTopology naming the level; the others are placed.
func TestRequiredWaits(t *testing.T) {
	_, top, x := fabric(t, 2, 2, 4, 4, nil) // racks of 16
	for _, st := range []Strategy{LeastLoss, BestFit, Binpack} {
		p := Placer{Topology: top, Strategy: st, Constraint: constraints(map[string]Constraint{"big": {Required: "rack"}, "ok": {Required: "block"}})}
		res := place(t, p, x, nil,
			placement.Target{Job: "big", Type: "gb200", Count: 20},
			placement.Target{Job: "ok", Type: "gb200", Count: 24})
		if len(res.Unplaced) != 1 || res.Unplaced[0].Target.Job != "big" || res.Unplaced[0].Reason.Code != placement.ReasonTopology ||
			!strings.Contains(res.Unplaced[0].Reason.Text, "rack") {
			t.Fatalf("%v: unplaced %+v", st, res.Unplaced)
		}
		if len(res.Assignments) != 1 || len(res.Assignments[0].Devices) != 24 {
			t.Fatalf("%v: assignments %+v", st, res.Assignments)
		}
		if n, err := Check(x, top, res.Assignments, p.Constraint); err != nil || n != 0 {
			t.Fatalf("%v: %d violations, %v", st, n, err)
		}
	}
}

// TestUnknownLevel: a constraint naming a level the topology lacks is a
// typed error naming the job; so is a bad Keep.
func TestUnknownLevel(t *testing.T) {
	_, top, x := fabric(t, 1, 1, 2, 4, nil)
	p := Placer{Topology: top, Constraint: constraints(map[string]Constraint{"j": {Required: "zone"}})}
	_, err := p.Place(context.Background(), placement.PlaceInput{Cluster: x, Targets: []placement.Target{{Job: "j", Type: "gb200", Count: 2}}})
	if !errors.Is(err, topology.ErrUnknownLevel) || !strings.Contains(err.Error(), `"j"`) {
		t.Fatalf("err = %v", err)
	}
	for _, bad := range []Placer{{}, {Topology: top, Keep: map[string]float64{"rack": 1.5}}, {Topology: top, Keep: map[string]float64{"zone": 0.5}},
		{Topology: top, Preempt: &Preemption{}}, {Topology: top, Strategy: 9}} {
		if err := bad.Validate(); err == nil {
			t.Errorf("%+v: no error", bad)
		}
	}
	for _, c := range []Constraint{{Preferred: "block", Required: "rack"}, {Slices: []Slice{{"rack", 4}, {"block", 2}}}, {Slices: []Slice{{"block", 6}, {"rack", 4}}},
		{Slices: []Slice{{"rack", 0}}}, {Required: "rack", Slices: []Slice{{"block", 4}}}} {
		if err := c.Validate(top); err == nil {
			t.Errorf("%+v: no error", c)
		}
	}
}

// TestLeastLossConsolidates: with NVLink racks (rack as good as a node),
// a gang that fits a rack is placed in the fullest rack that holds it,
// leaving the empty rack whole for a rack-sized gang; Kueue's
// LeastFreeCapacity for an unconstrained gang scatters it over the
// fullest nodes of both racks.
func TestLeastLossConsolidates(t *testing.T) {
	_, top, x := fabric(t, 1, 2, 4, 4, nil)
	cur := []placement.Assignment{{Job: "old", Devices: []string{"b0/r0/n0/0", "b0/r0/n0/1", "b0/r0/n0/2", "b0/r1/n0/0"}}}
	keep := map[string]float64{"rack": 1, "block": 0.5}
	tg := []placement.Target{{Job: "old", Type: "gb200", Count: 4}, {Job: "new", Type: "gb200", Count: 8}}
	res := place(t, Placer{Topology: top, Keep: keep}, x, cur, tg...)
	for _, a := range res.Assignments {
		if a.Job == "new" {
			if r := perRack(a.Devices); len(r) != 1 {
				t.Fatalf("least-loss spread the gang: %v", r)
			}
		}
	}
}

// TestPreemptFreesOneDomain: a required-rack gang evicts the cheapest
// lower-priority jobs inside one rack, and nothing of higher priority.
func TestPreemptFreesOneDomain(t *testing.T) {
	_, top, x := fabric(t, 1, 2, 2, 4, nil) // racks of 8
	cur := []placement.Assignment{
		{Job: "a", Devices: []string{"b0/r0/n0/0", "b0/r0/n0/1", "b0/r0/n0/2", "b0/r0/n0/3"}},
		{Job: "b", Devices: []string{"b0/r0/n1/0", "b0/r0/n1/1"}},
		{Job: "c", Devices: []string{"b0/r1/n0/0", "b0/r1/n0/1", "b0/r1/n0/2", "b0/r1/n0/3"}},
		{Job: "vip", Devices: []string{"b0/r1/n1/0"}},
	}
	prio := map[string]int{"big": 10, "vip": 20}
	cost := map[string]float64{"a": 100, "b": 50, "c": 90, "vip": 1}
	p := Placer{Topology: top, Constraint: constraints(map[string]Constraint{"big": {Required: "rack"}}),
		Preempt: &Preemption{Priority: func(j string) int { return prio[j] }, DeviceSeconds: func(j string) float64 { return cost[j] }}}
	var tg []placement.Target
	for _, a := range cur {
		tg = append(tg, placement.Target{Job: a.Job, Type: "gb200", Count: len(a.Devices)})
	}
	tg = append(tg, placement.Target{Job: "big", Type: "gb200", Count: 7})
	res := place(t, p, x, cur, tg...)
	// r0 needs 5 more: a (4) alone is not enough, a+b = 150; r1 needs 4:
	// c = 90 (vip is higher priority). c it is.
	var got []string
	for _, u := range res.Unplaced {
		got = append(got, u.Target.Job)
	}
	if !slices.Equal(got, []string{"c"}) {
		t.Fatalf("unplaced %v, want [c]; %+v", got, res)
	}
	if n, _ := Check(x, top, res.Assignments, p.Constraint); n != 0 {
		t.Fatalf("%d violations", n)
	}
	ch, err := Victims(x, top, cur, []Candidate{{"a", 100}, {"b", 50}, {"c", 90}}, "gb200", 7, "rack")
	if err != nil || ch.Domain != "b0/r1" || !slices.Equal(ch.Jobs, []string{"c"}) || ch.DeviceSeconds != 90 {
		t.Fatalf("Victims = %+v, %v", ch, err)
	}
}

// TestConcurrentPlace: one Placer on one Index from several goroutines
// (the pooled scratch is per call) answers as it does alone.
func TestConcurrentPlace(t *testing.T) {
	_, top, x := fabric(t, 2, 2, 3, 4, nil)
	p := Placer{Topology: top, Constraint: constraints(map[string]Constraint{"a": {Required: "rack"}, "b": {Preferred: "block"}})}
	in := placement.PlaceInput{Cluster: x, Current: []placement.Assignment{{Job: "c", Devices: []string{"b0/r0/n0/0"}}},
		Targets: []placement.Target{{Job: "a", Type: "gb200", Count: 9}, {Job: "b", Type: "gb200", Count: 14}, {Job: "c", Type: "gb200", Count: 1}}}
	want := place(t, p, x, in.Current, in.Targets...)
	errs := make(chan error, 8)
	for g := 0; g < 8; g++ {
		go func() {
			for k := 0; k < 50; k++ {
				got, err := p.Place(context.Background(), in)
				if err == nil && !reflect.DeepEqual(got, want) {
					err = errors.New("a concurrent Place answered differently")
				}
				if err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	for g := 0; g < 8; g++ {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}

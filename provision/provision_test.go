package provision

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/goodsched/goodsched/accel"
	"github.com/goodsched/goodsched/carbon"
	"github.com/goodsched/goodsched/energy"
	"github.com/goodsched/goodsched/placement"
	"github.com/goodsched/goodsched/scheduler"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// linear is a speedup of k on k devices.
type linear struct{}

func (linear) Speedup(_ string, _, k int) float64 { return float64(k) }

// hourly is an hourly g/kWh forecast from t0.
func hourly(v ...float64) carbon.Series {
	return carbon.Series{Start: t0, Step: time.Hour, Values: v, Unit: carbon.GPerKWh}
}

// flexible is a delay-tolerant job of work device-seconds due in 12 h.
func flexible(id string, work float64) scheduler.Job {
	return scheduler.Job{ID: id, Submitted: t0, Kind: scheduler.Elastic, MaxReplicas: 16, Speedup: linear{},
		DelayTolerant: true, Deadline: t0.Add(12 * time.Hour), RemainingWork: work}
}

// TestProvision: 4 nodes of 4 T4; a job whose whole work fits an hour
// of the cluster, planned (linear speedup: full width) into the one
// clean hour. Every node goes down now: suspended when that hour is the
// next (1 h < the 1.9 h break-even of off), off when it is 3 h away; a
// node holding a job that cannot wait stays on; a node that is on stays
// on while the plans need it within Hold.
func TestProvision(t *testing.T) {
	cl, _ := accel.ParseSpec("4x4:t4")
	work := 0.999 * 16 * 3600 / 1.25 // with the default headroom: the clean hour at 16 devices
	dirty := 500.0
	for _, tc := range []struct {
		name    string
		ci      carbon.Series
		hold    time.Duration
		running bool
		states  []energy.NodeState
		want    []energy.NodeState
	}{
		{"clean in 1 h", hourly(dirty, 100, dirty, dirty, dirty, dirty, dirty, dirty, dirty, dirty, dirty, dirty), 0, false, nil,
			[]energy.NodeState{energy.Suspended, energy.Suspended, energy.Suspended, energy.Suspended}},
		{"clean in 3 h", hourly(dirty, dirty, dirty, 100, dirty, dirty, dirty, dirty, dirty, dirty, dirty, dirty), 0, false, nil,
			[]energy.NodeState{energy.Off, energy.Off, energy.Off, energy.Off}},
		{"a job that cannot wait holds node 2", hourly(dirty, dirty, dirty, 100, dirty, dirty, dirty, dirty, dirty, dirty, dirty, dirty), 0, true, nil,
			[]energy.NodeState{energy.Off, energy.Off, energy.On, energy.Off}},
		{"hold 2 h keeps the on nodes", hourly(dirty, 100, dirty, dirty, dirty, dirty, dirty, dirty, dirty, dirty, dirty, dirty), 2 * time.Hour, false,
			[]energy.NodeState{energy.On, energy.On, energy.Suspended, energy.Off},
			[]energy.NodeState{energy.On, energy.On, energy.Suspended, energy.Off}},
		{"now clean: all on, the fastest back first", hourly(100, dirty, dirty, dirty, dirty, dirty, dirty, dirty, dirty, dirty, dirty, dirty), 0, false,
			[]energy.NodeState{energy.Off, energy.Suspended, energy.Off, energy.Suspended},
			[]energy.NodeState{energy.On, energy.On, energy.On, energy.On}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := scheduler.Input{Cluster: cl, Now: t0, Carbon: tc.ci, Jobs: []scheduler.Job{flexible("flex", work)}}
			if tc.running {
				in.Jobs = append(in.Jobs, scheduler.Job{ID: "serve", Kind: scheduler.Rigid, Requested: 2, MinReplicas: 2, MaxReplicas: 2})
				in.Current = []placement.Assignment{{Job: "serve", Devices: []string{cl.Nodes[2].Devices[0].ID, cl.Nodes[2].Devices[1].ID}}}
			}
			got, err := Planner{Hold: tc.hold}.Provision(context.Background(), in, tc.states)
			if err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

// TestDemand: the plan's devices per slot, and jobs that cannot wait in
// every slot.
func TestDemand(t *testing.T) {
	cl, _ := accel.ParseSpec("4x4:t4")
	in := scheduler.Input{Cluster: cl, Now: t0.Add(10 * time.Minute), Carbon: hourly(500, 100, 100, 500, 500, 500, 500, 500, 500, 500, 500, 500),
		Jobs: []scheduler.Job{
			flexible("flex", 0.999*16*3600*2/1.25),
			{ID: "late", Kind: scheduler.Elastic, MaxReplicas: 3, Speedup: linear{}, DelayTolerant: true, Deadline: t0, RemainingWork: 1},
			{ID: "rigid", Kind: scheduler.Rigid, Requested: 2, MinReplicas: 2, MaxReplicas: 2},
		}}
	d, err := Planner{}.Demand(in)
	if err != nil {
		t.Fatal(err)
	}
	// flex: the two clean hours at 16 devices (slots 1 and 2); late: 3
	// everywhere; rigid: 2.
	if len(d.Types) != 1 || d.Types[0] != "t4" || !d.Start.Equal(t0) || d.Step != time.Hour {
		t.Fatalf("demand %+v", d)
	}
	got := d.Devices[0]
	if got[0] != 5 || got[1] != 21 || got[2] != 21 || got[3] != 5 {
		t.Errorf("devices per slot %v, want 5, 21, 21, 5, …", got)
	}
}

// TestValidate: bad settings fail with ErrInvalid naming the field.
func TestValidate(t *testing.T) {
	cl, _ := accel.ParseSpec("1x4:t4")
	in := scheduler.Input{Cluster: cl, Now: t0}
	for _, p := range []Planner{
		{Hold: -time.Second}, {Headroom: -1}, {DeadlineMargin: -time.Minute},
		{Power: energy.PowerModel{Nodes: energy.NodePower{OffWatts: -1}}},
	} {
		if _, err := p.Provision(context.Background(), in, nil); !errors.Is(err, ErrInvalid) {
			t.Errorf("%+v: %v, want ErrInvalid", p, err)
		}
	}
	if _, err := (Planner{}).Provision(context.Background(), in, make([]energy.NodeState, 3)); !errors.Is(err, ErrInvalid) {
		t.Errorf("wrong state count: %v", err)
	}
}

// TestDemandJoint: the scenario of carbonaware's TestCarbonAwareJoint.
// Two jobs of one hour of full-width work on one node of 4 T4,
// intensities 200, 100, then 500: each alone wants the clean hour at 4
// devices (8 there, none now); jointly each runs half of its work in
// the clean hour and half now, 2 devices each.
func TestDemandJoint(t *testing.T) {
	cl, _ := accel.ParseSpec("1x4:t4")
	work := 0.999 * 4 * 3600 / 1.25
	in := scheduler.Input{Cluster: cl, Now: t0, Carbon: hourly(200, 100, 500, 500, 500, 500, 500, 500, 500, 500, 500, 500, 500),
		Jobs: []scheduler.Job{flexible("a", work), flexible("b", work)}}
	for _, tc := range []struct {
		joint      bool
		now, clean int
	}{{false, 0, 8}, {true, 4, 4}} {
		d, err := Planner{Joint: tc.joint}.Demand(in)
		if err != nil {
			t.Fatal(err)
		}
		if got := d.Devices[0]; got[0] != tc.now || got[1] != tc.clean || got[2] != 0 {
			t.Errorf("joint %v: devices per slot %v, want %d, %d, 0, …", tc.joint, got, tc.now, tc.clean)
		}
	}
}

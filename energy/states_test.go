package energy

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/goodsched/goodsched/accel"
	"github.com/goodsched/goodsched/carbon"
	"github.com/goodsched/goodsched/placement"
)

// TestAccountNodes: three 4-T4 nodes for one hour at 100 g/kWh, PUE 1:
// node 0 on with two busy devices (2 × 70 W + 2 × 10.5 W), node 1
// suspended (15 W), node 2 booting for the first 240 s (48 kJ) and then
// on and idle for 3,360 s (4 × 10.5 W).
func TestAccountNodes(t *testing.T) {
	cl, _ := accel.ParseSpec("3x4:t4")
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	devs := cl.Nodes[0].Devices
	busy := []placement.Assignment{{Job: "a", Devices: []string{devs[0].ID, devs[1].ID}}}
	ci := carbon.Series{Start: t0, Step: time.Hour, Values: []float64{100}, Unit: carbon.GPerKWh}
	nodes := []NodeInterval{{State: On}, {State: Suspended}, {State: On, Moving: 240 * time.Second, MovingJoules: 48000}}
	e, err := PowerModel{}.AccountNodes(cl, busy, nodes, t0, time.Hour, ci)
	if err != nil {
		t.Fatal(err)
	}
	near := func(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b)) }
	wantIdle := 2*10.5*3600 + 4*10.5*3360
	if !near(e.BusyJoules, 2*70*3600) || !near(e.IdleJoules, wantIdle) || !near(e.DownJoules, 15*3600) || !near(e.TransitionJoules, 48000) {
		t.Errorf("joules: %+v", e)
	}
	all := e.BusyJoules + e.IdleJoules + e.DownJoules + e.TransitionJoules
	if !near(e.KWh, all/3.6e6) || !near(e.CarbonG, 100*all/3.6e6) || !near(e.TransitionG, 100*48000/3.6e6) {
		t.Errorf("totals: %+v", e)
	}
	// nil nodes is Account, to the bit.
	a, _ := PowerModel{}.Account(cl, busy, t0, time.Hour, ci)
	b, _ := PowerModel{}.AccountNodes(cl, busy, nil, t0, time.Hour, ci)
	if a != b {
		t.Errorf("Account %+v, AccountNodes(nil) %+v", a, b)
	}
	// A busy device on a node that is not on, and bad intervals, fail.
	for _, bad := range [][]NodeInterval{
		{{State: Off}, {}, {}},
		{{}, {}},
		{{}, {Moving: -time.Second}, {}},
		{{}, {Moving: 2 * time.Hour}, {}},
		{{}, {MovingJoules: math.NaN()}, {}},
	} {
		if _, err := (PowerModel{}).AccountNodes(cl, busy, bad, t0, time.Hour, ci); !errors.Is(err, ErrInvalid) {
			t.Errorf("%+v: %v, want ErrInvalid", bad, err)
		}
	}
}

// TestNodePowerValidate: negative or non-finite watts, durations and
// joules fail with ErrInvalid naming the field, through PowerModel too.
func TestNodePowerValidate(t *testing.T) {
	for _, tc := range []struct {
		n     NodePower
		field string
	}{
		{NodePower{SuspendedWatts: -1}, "SuspendedWatts"},
		{NodePower{OffWatts: math.Inf(1)}, "OffWatts"},
		{NodePower{Boot: Transition{Duration: -time.Second}}, "Boot.Duration"},
		{NodePower{Resume: Transition{Joules: -5}}, "Resume.Joules"},
		{NodePower{Shutdown: Transition{Joules: math.NaN()}}, "Shutdown.Joules"},
	} {
		if err := tc.n.Validate(); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.field) {
			t.Errorf("%+v: %v, want ErrInvalid naming %s", tc.n, err, tc.field)
		}
		if err := (PowerModel{Nodes: tc.n}).Validate(); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "PowerModel.Nodes") {
			t.Errorf("PowerModel with %+v: %v", tc.n, err)
		}
	}
	if err := DefaultNodePower.Validate(); err != nil {
		t.Error(err)
	}
}

// TestChange: every pair of states maps to the transition the doc names;
// a NodePower with only OffWatts set is used as given (0 W suspended).
func TestChange(t *testing.T) {
	d := DefaultNodePower
	for _, tc := range []struct {
		a, b NodeState
		want Transition
	}{
		{On, On, Transition{}}, {On, Suspended, d.Suspend}, {On, Off, d.Shutdown},
		{Suspended, On, d.Resume}, {Suspended, Off, d.Shutdown}, {Off, On, d.Boot},
		{Off, Suspended, Transition{Duration: d.Boot.Duration + d.Suspend.Duration, Joules: d.Boot.Joules + d.Suspend.Joules}},
	} {
		if got := (NodePower{}).Change(tc.a, tc.b); got != tc.want {
			t.Errorf("%v → %v: %+v, want %+v", tc.a, tc.b, got, tc.want)
		}
	}
	given := NodePower{OffWatts: 3}
	if given.Watts(Suspended) != 0 || given.Watts(Off) != 3 || given.Change(Off, On) != (Transition{}) {
		t.Errorf("a set NodePower was not used as given")
	}
	if (NodePower{}).Watts(Off) != 8 || On.String() != "on" || Off.String() != "off" || Suspended.String() != "suspended" {
		t.Errorf("defaults or names changed")
	}
}

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

// TestAccount: 2 of 4 T4 busy for one hour, half at 100 and half at
// 200 g/kWh, PUE 1.5. Busy: 2 × 70 W × 3600 s = 504 kJ = 0.14 kWh; idle:
// 2 × 10.5 W × 3600 s = 75.6 kJ. Facility kWh (0.14 + 0.021) × 1.5 =
// 0.2415; busy carbon 0.21 kWh × (100 + 200)/2 = 31.5 g, idle 4.725 g.
func TestAccount(t *testing.T) {
	cl, _ := accel.ParseSpec("1x4:t4")
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	ids := cl.Nodes[0].Devices
	busy := []placement.Assignment{{Job: "a", Devices: []string{ids[0].ID, ids[1].ID}}}
	ci := carbon.Series{Start: t0, Step: 30 * time.Minute, Values: []float64{100, 200, 999}, Unit: carbon.GPerKWh}
	e, err := PowerModel{PUE: 1.5}.Account(cl, busy, t0, time.Hour, ci)
	if err != nil {
		t.Fatal(err)
	}
	near := func(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b)) }
	if !near(e.BusyJoules, 504000) || !near(e.IdleJoules, 75600) || !near(e.KWh, 0.2415) ||
		!near(e.BusyG, 31.5) || !near(e.IdleG, 4.725) || !near(e.CarbonG, 36.225) {
		t.Errorf("got %+v", e)
	}
	// Two half-hour rounds sum to the hour.
	h1, _ := PowerModel{PUE: 1.5}.Account(cl, busy, t0, 30*time.Minute, ci)
	h2, _ := PowerModel{PUE: 1.5}.Account(cl, busy, t0.Add(30*time.Minute), 30*time.Minute, ci)
	if s := h1.Add(h2); !near(s.CarbonG, e.CarbonG) || !near(s.KWh, e.KWh) {
		t.Errorf("halves sum to %+v, the hour is %+v", s, e)
	}
	// Measured readings replace the model for busy devices.
	cl.Nodes[0].Devices[0].PowerWatts = 50
	m, err := PowerModel{Measured: true, Types: map[accel.TypeKey]DevicePower{"t4": {ActiveWatts: 70, IdleWatts: 10}}}.Account(cl, busy, t0, time.Hour, carbon.Series{})
	if err != nil {
		t.Fatal(err)
	}
	if !near(m.BusyJoules, 120*3600) || !near(m.IdleJoules, 20*3600) || m.CarbonG != 0 {
		t.Errorf("measured: got %+v", m)
	}
	if _, err := (PowerModel{}).Account(cl, busy, t0, 2*time.Hour, carbon.Series{Start: t0, Step: time.Hour, Values: []float64{1}, Unit: carbon.GPerKWh}); err == nil {
		t.Error("an intensity series that does not cover the hour was accepted")
	}
	if _, err := (PowerModel{}).Power("no-such-gpu"); !errors.Is(err, ErrUnknownType) {
		t.Errorf("unknown type: %v", err)
	}
	if p, err := (PowerModel{}).Power("a100"); err != nil || p.ActiveWatts != 400 {
		t.Errorf("alias a100: %+v, %v", p, err)
	}
}

// TestPowerModelValidate: bad settings fail with ErrInvalid naming the
// field.
func TestPowerModelValidate(t *testing.T) {
	for _, tc := range []struct {
		m     PowerModel
		field string
	}{
		{PowerModel{PUE: 0.5}, "PUE"},
		{PowerModel{PUE: math.Inf(1)}, "PUE"},
		{PowerModel{IdleFraction: 2}, "IdleFraction"},
		{PowerModel{Types: map[accel.TypeKey]DevicePower{"t4": {ActiveWatts: math.NaN()}}}, "PowerModel.Types"},
	} {
		if err := tc.m.Validate(); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.field) {
			t.Errorf("%+v: %v, want ErrInvalid naming %s", tc.m, err, tc.field)
		}
	}
}

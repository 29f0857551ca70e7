package energy

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"time"

	"github.com/goodsched/goodsched/accel"
	"github.com/goodsched/goodsched/carbon"
	"github.com/goodsched/goodsched/placement"
)

// ErrInvalid reports a bad PowerModel setting or Account argument;
// ErrUnknownType a device type with no power figure. Both are wrapped
// with the field at fault.
var (
	ErrInvalid     = errors.New("energy: invalid input")
	ErrUnknownType = errors.New("energy: unknown device type")
)

// DefaultIdleFraction is the idle draw of a device as a fraction of its
// TDP when nothing better is known: an approximation (idle boards are
// commonly reported at roughly 10–20% of their TDP, for example about
// 10 W for a 70 W T4 and 50–60 W for a 400 W A100); override it per type
// with PowerModel.Types where measured.
const DefaultIdleFraction = 0.15

// DevicePower is the power of one device.
type DevicePower struct {
	// ActiveWatts is the draw while a job holds the device.
	ActiveWatts float64
	// IdleWatts is the draw while no job holds it.
	IdleWatts float64
}

// PowerModel says how much power devices draw, per accelerator type. The
// zero value takes each type's TDP from the accel catalog
// (accel.Product.TDPWatts) as its active draw, DefaultIdleFraction of it
// as its idle draw, and ignores measured readings. It is a plain value,
// safe for concurrent use once built.
type PowerModel struct {
	// Types overrides the power of the types it lists (both fields must
	// be set: ActiveWatts > 0, 0 ≤ IdleWatts ≤ ActiveWatts).
	Types map[accel.TypeKey]DevicePower
	// IdleFraction is the idle draw as a fraction of TDP for types not in
	// Types; 0 = DefaultIdleFraction, negative (or NaN, or above 1) is an
	// error.
	IdleFraction float64
	// Measured uses a busy device's accel.Device.PowerWatts (an NVML
	// reading) instead of the model when it is positive.
	Measured bool
	// PUE (power usage effectiveness) multiplies IT energy into facility
	// energy: the one setting for it, read by Account and by the carbon
	// planning of policies that use this model; 0 = 1, otherwise at
	// least 1.
	PUE float64
}

// Validate checks the model's settings.
func (m PowerModel) Validate() error {
	if f := m.IdleFraction; math.IsNaN(f) || f < 0 || f > 1 {
		return fmt.Errorf("%w: PowerModel.IdleFraction %v: must be in [0, 1]", ErrInvalid, m.IdleFraction)
	}
	if p := m.PUE; math.IsNaN(p) || math.IsInf(p, 0) || (p != 0 && p < 1) {
		return fmt.Errorf("%w: PowerModel.PUE %v: must be 0 (= 1) or at least 1", ErrInvalid, m.PUE)
	}
	for _, t := range slices.Sorted(maps.Keys(m.Types)) {
		p := m.Types[t]
		if !(p.ActiveWatts > 0) || math.IsInf(p.ActiveWatts, 0) || !(p.IdleWatts >= 0) || p.IdleWatts > p.ActiveWatts {
			return fmt.Errorf("%w: PowerModel.Types[%q]: ActiveWatts %v, IdleWatts %v: want 0 ≤ idle ≤ active, active > 0 and finite",
				ErrInvalid, t, p.ActiveWatts, p.IdleWatts)
		}
	}
	return nil
}

// Power returns the power of a device of type t: Types[t], or the catalog
// TDP (of t, or of the product an alias such as "a100" names) with the
// idle fraction. A type neither lists fails with
// ErrUnknownType.
func (m PowerModel) Power(t accel.TypeKey) (DevicePower, error) {
	if p, ok := m.Types[t]; ok {
		return p, nil
	}
	prod, ok := accel.LookupProduct(t)
	if !ok {
		if ct, err := accel.CanonicalType(string(t)); err == nil {
			prod, ok = accel.LookupProduct(ct) // an alias: "a100" is a100-40gb
		}
	}
	if !ok || !(prod.TDPWatts > 0) {
		return DevicePower{}, fmt.Errorf("%w: PowerModel: no power figure for %q (not in the accel catalog; set PowerModel.Types)", ErrUnknownType, t)
	}
	f := m.IdleFraction
	if f == 0 {
		f = DefaultIdleFraction
	}
	return DevicePower{ActiveWatts: prod.TDPWatts, IdleWatts: f * prod.TDPWatts}, nil
}

// Totals are the energy and emissions of a cluster over an interval.
type Totals struct {
	// BusyJoules and IdleJoules are the IT energy of devices held by a job
	// and of the others (unhealthy devices included: they stay powered).
	BusyJoules, IdleJoules float64
	// KWh is the facility energy, (BusyJoules + IdleJoules) × PUE, in kWh.
	KWh float64
	// BusyG and IdleG are the emissions of each part, in g CO2eq, PUE
	// included; CarbonG is their sum. All zero without an intensity.
	BusyG, IdleG, CarbonG float64
}

// Add returns the sum of e and o.
func (e Totals) Add(o Totals) Totals {
	return Totals{BusyJoules: e.BusyJoules + o.BusyJoules, IdleJoules: e.IdleJoules + o.IdleJoules, KWh: e.KWh + o.KWh,
		BusyG: e.BusyG + o.BusyG, IdleG: e.IdleG + o.IdleG, CarbonG: e.CarbonG + o.CarbonG}
}

// Account returns the energy and emissions of cluster c over [from,
// from+d) with the busy assignments held throughout (a round's plan:
// Plan.Assignments), every other device idle. Emissions use
// carbon.Emissions against intensity ci, which must cover the interval,
// with the model's PUE; a zero ci (no values) accounts energy only. Busy
// devices that are not in c fail with ErrInvalid.
func (m PowerModel) Account(c accel.Cluster, busy []placement.Assignment, from time.Time, d time.Duration, ci carbon.Series) (Totals, error) {
	var e Totals
	if err := m.Validate(); err != nil {
		return e, err
	}
	if d <= 0 {
		return e, fmt.Errorf("%w: Account: duration %v must be positive", ErrInvalid, d)
	}
	pue := m.PUE
	if pue == 0 {
		pue = 1
	}
	held := make(map[string]bool)
	for _, a := range busy {
		for _, id := range a.Devices {
			held[id] = true
		}
	}
	sec := d.Seconds()
	found := 0
	powers := map[accel.TypeKey]DevicePower{}
	for _, n := range c.Nodes {
		for _, dev := range n.Devices {
			p, ok := powers[dev.Type]
			if !ok {
				var err error
				if p, err = m.Power(dev.Type); err != nil {
					return Totals{}, err
				}
				powers[dev.Type] = p
			}
			if !held[dev.ID] {
				e.IdleJoules += p.IdleWatts * sec
				continue
			}
			found++
			w := p.ActiveWatts
			if m.Measured && dev.PowerWatts > 0 && !math.IsInf(dev.PowerWatts, 0) {
				w = dev.PowerWatts
			}
			e.BusyJoules += w * sec
		}
	}
	if found != len(held) {
		return Totals{}, fmt.Errorf("%w: Account: %d busy devices are not in the cluster", ErrInvalid, len(held)-found)
	}
	e.KWh = (e.BusyJoules + e.IdleJoules) * pue / carbon.JoulesPerKWh
	if len(ci.Values) == 0 {
		return e, nil
	}
	to := from.Add(d)
	for k, j := range [2]float64{e.BusyJoules, e.IdleJoules} {
		r, err := carbon.Emissions([]carbon.EnergyInterval{{Start: from, End: to, Joules: j}}, ci, carbon.AccountOptions{PUE: pue})
		if err != nil {
			return Totals{}, fmt.Errorf("%w: Account: %w", ErrInvalid, err)
		}
		if k == 0 {
			e.BusyG = r.OperationalG
		} else {
			e.IdleG = r.OperationalG
		}
	}
	e.CarbonG = e.BusyG + e.IdleG
	return e, nil
}

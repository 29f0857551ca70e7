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
	// Nodes is the power of nodes that are not on, and of changing a
	// node's state (AccountNodes); the zero value is DefaultNodePower.
	// Account, where every node is on, does not read it.
	Nodes NodePower
}

// Validate checks the model's settings.
func (m PowerModel) Validate() error {
	if f := m.IdleFraction; math.IsNaN(f) || f < 0 || f > 1 {
		return fmt.Errorf("%w: PowerModel.IdleFraction %v: must be in [0, 1]", ErrInvalid, m.IdleFraction)
	}
	if p := m.PUE; math.IsNaN(p) || math.IsInf(p, 0) || (p != 0 && p < 1) {
		return fmt.Errorf("%w: PowerModel.PUE %v: must be 0 (= 1) or at least 1", ErrInvalid, m.PUE)
	}
	if err := m.Nodes.Validate(); err != nil {
		return fmt.Errorf("PowerModel.Nodes: %w", err)
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
	// included; CarbonG is the sum of every part. All zero without an
	// intensity.
	BusyG, IdleG, CarbonG float64
	// DownJoules is the IT energy of nodes suspended or off, and
	// TransitionJoules that of nodes changing state (AccountNodes);
	// DownG and TransitionG their emissions. Zero where every node is on.
	DownJoules, TransitionJoules, DownG, TransitionG float64
}

// Add returns the sum of e and o.
func (e Totals) Add(o Totals) Totals {
	return Totals{BusyJoules: e.BusyJoules + o.BusyJoules, IdleJoules: e.IdleJoules + o.IdleJoules, KWh: e.KWh + o.KWh,
		BusyG: e.BusyG + o.BusyG, IdleG: e.IdleG + o.IdleG, CarbonG: e.CarbonG + o.CarbonG,
		DownJoules: e.DownJoules + o.DownJoules, TransitionJoules: e.TransitionJoules + o.TransitionJoules,
		DownG: e.DownG + o.DownG, TransitionG: e.TransitionG + o.TransitionG}
}

// Account returns the energy and emissions of cluster c over [from,
// from+d) with the busy assignments held throughout (a round's plan:
// Plan.Assignments), every other device idle. Emissions use
// carbon.Emissions against intensity ci, which must cover the interval,
// with the model's PUE; a zero ci (no values) accounts energy only. Busy
// devices that are not in c fail with ErrInvalid.
func (m PowerModel) Account(c accel.Cluster, busy []placement.Assignment, from time.Time, d time.Duration, ci carbon.Series) (Totals, error) {
	return m.account(c, busy, nil, from, d, ci)
}

// AccountNodes is Account with every node in the state nodes gives it
// (indexed like c.Nodes): the devices of a node that is On are charged as
// in Account for the part of the interval it is not moving into that
// state; a node Suspended or Off draws NodePower's watts for that part
// (DownJoules; its devices draw nothing, and must not be busy); a
// transition's MovingJoules are TransitionJoules. nil nodes is Account.
// A length other than c's, a negative or longer-than-d Moving, or
// negative MovingJoules fail with ErrInvalid.
func (m PowerModel) AccountNodes(c accel.Cluster, busy []placement.Assignment, nodes []NodeInterval, from time.Time, d time.Duration, ci carbon.Series) (Totals, error) {
	if nodes != nil && len(nodes) != len(c.Nodes) {
		return Totals{}, fmt.Errorf("%w: AccountNodes: %d node intervals for %d nodes", ErrInvalid, len(nodes), len(c.Nodes))
	}
	for i, n := range nodes {
		if n.Moving < 0 || n.Moving > d || math.IsNaN(n.MovingJoules) || math.IsInf(n.MovingJoules, 0) || n.MovingJoules < 0 || n.State > Off {
			return Totals{}, fmt.Errorf("%w: AccountNodes: nodes[%d] = %+v: want a known state, 0 ≤ Moving ≤ %v and finite MovingJoules ≥ 0", ErrInvalid, i, n, d)
		}
	}
	return m.account(c, busy, nodes, from, d, ci)
}

func (m PowerModel) account(c accel.Cluster, busy []placement.Assignment, nodes []NodeInterval, from time.Time, d time.Duration, ci carbon.Series) (Totals, error) {
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
	for i, n := range c.Nodes {
		sec := sec
		if nodes != nil {
			ni := nodes[i]
			e.TransitionJoules += ni.MovingJoules
			sec = (d - ni.Moving).Seconds()
			if ni.State != On {
				e.DownJoules += m.Nodes.Watts(ni.State) * sec
				for _, dev := range n.Devices {
					if held[dev.ID] {
						return Totals{}, fmt.Errorf("%w: AccountNodes: device %s of %s node %s is busy", ErrInvalid, dev.ID, ni.State, n.Name)
					}
				}
				continue
			}
		}
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
	e.KWh = (e.BusyJoules + e.IdleJoules + e.DownJoules + e.TransitionJoules) * pue / carbon.JoulesPerKWh
	if len(ci.Values) == 0 {
		return e, nil
	}
	to := from.Add(d)
	parts := []*float64{&e.BusyG, &e.IdleG}
	joules := []float64{e.BusyJoules, e.IdleJoules}
	if nodes != nil {
		parts, joules = append(parts, &e.DownG, &e.TransitionG), append(joules, e.DownJoules, e.TransitionJoules)
	}
	for k, j := range joules {
		r, err := carbon.Emissions([]carbon.EnergyInterval{{Start: from, End: to, Joules: j}}, ci, carbon.AccountOptions{PUE: pue})
		if err != nil {
			return Totals{}, fmt.Errorf("%w: Account: %w", ErrInvalid, err)
		}
		*parts[k] = r.OperationalG
	}
	e.CarbonG = e.BusyG + e.IdleG + e.DownG + e.TransitionG
	return e, nil
}

package provision

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/goodsched/goodsched/accel"
	"github.com/goodsched/goodsched/carbon"
	"github.com/goodsched/goodsched/energy"
	"github.com/goodsched/goodsched/scheduler"
)

// ErrInvalid reports a bad Planner setting or input, wrapped with the
// field at fault.
var ErrInvalid = errors.New("provision: invalid input")

// Planner decides which nodes are on (see the package documentation).
// The zero value works: the accel catalog's TDPs, DefaultNodePower, the
// carbon-aware policy's planning defaults and one hour of hysteresis. It
// is a plain value, safe for concurrent use.
type Planner struct {
	// Power gives the devices' watts, the PUE and the node states'
	// figures (Power.Nodes).
	Power energy.PowerModel
	// Headroom inflates each job's remaining work when planning, as
	// carbonaware.Policy.Headroom (keep the two equal); 0 = 0.25,
	// negative is an error.
	Headroom float64
	// DeadlineMargin is how long before its deadline a job's plan must
	// finish, as carbonaware.Policy.DeadlineMargin; 0 = one forecast step
	// or a tenth of the job's window, whichever is longer.
	DeadlineMargin time.Duration
	// Hold is the hysteresis: a node that is on stays on while the plans
	// need it at some time within Hold from now; 0 = 1 h, negative is
	// an error.
	Hold time.Duration
	// OffAfter: a node going down, or suspended, is powered off when the
	// plans will not need it for longer than OffAfter, and suspended
	// otherwise; 0 = the break-even times of Power.Nodes' figures (off
	// over suspended for a node going down, off over staying suspended
	// for a suspended one); negative is an error. Learn fits it.
	OffAfter time.Duration
}

var _ interface {
	Provision(context.Context, scheduler.Input, []energy.NodeState) ([]energy.NodeState, error)
} = Planner{}

// Validate checks the settings. Errors wrap ErrInvalid.
func (p Planner) Validate() error {
	if h := p.Headroom; math.IsNaN(h) || math.IsInf(h, 0) || h < 0 {
		return fmt.Errorf("%w: Planner.Headroom %v: must be finite and not negative", ErrInvalid, p.Headroom)
	}
	if p.DeadlineMargin < 0 {
		return fmt.Errorf("%w: Planner.DeadlineMargin %v is negative", ErrInvalid, p.DeadlineMargin)
	}
	if p.Hold < 0 {
		return fmt.Errorf("%w: Planner.Hold %v is negative", ErrInvalid, p.Hold)
	}
	if p.OffAfter < 0 {
		return fmt.Errorf("%w: Planner.OffAfter %v is negative", ErrInvalid, p.OffAfter)
	}
	if err := p.Power.Validate(); err != nil {
		return fmt.Errorf("%w: Planner.Power: %w", ErrInvalid, err)
	}
	return nil
}

// Demand is how many devices of each type the jobs' plans run in each
// slot of the forecast, from the slot holding Input.Now.
type Demand struct {
	// Start and Step locate the slots (Start: the slot holding Now).
	Start time.Time
	Step  time.Duration
	// Types are the cluster's device types, sorted; Devices[t][s] the
	// devices of Types[t] wanted in slot s (slot 0: now, as the plans
	// stand at Now within it).
	Types   []accel.TypeKey
	Devices [][]int
}

// maxLevels bounds a job's planning curve, as in carbonaware: wide jobs
// plan in steps of several devices.
const maxLevels = 16

// typeInfo is what the planner knows of one device type.
type typeInfo struct {
	key      accel.TypeKey
	devices  int // usable devices (healthy: not failed)
	perNode  int
	nodes    []int // cluster node indices whose first device is of this type
	failed   []bool
	wattsDev float64
}

// Demand plans every job of in and adds up their devices per type and
// slot. Jobs that cannot wait (no deadline, not delay-tolerant, pinned,
// no remaining work, a deadline passed or impossible) count in every slot
// with what they hold, or, waiting, with what they ask for (the larger of
// MinReplicas and Requested, at least 1; all they may use when late).
// Without a usable forecast (none, Now outside it) there is one slot.
func (p Planner) Demand(in scheduler.Input) (Demand, error) {
	if err := p.Validate(); err != nil {
		return Demand{}, err
	}
	types, byKey, err := p.types(in.Cluster)
	if err != nil {
		return Demand{}, err
	}
	return p.demand(in, types, byKey)
}

func (p Planner) demand(in scheduler.Input, types []typeInfo, byKey map[accel.TypeKey]int) (Demand, error) {
	fc, err := newForecast(in.Carbon, in.Now)
	if err != nil {
		return Demand{}, err
	}
	d := Demand{Start: in.Now, Step: time.Hour, Devices: make([][]int, len(types))}
	slots := 1
	if fc != nil {
		d.Start, d.Step, slots = fc.start, fc.step, len(fc.ci)
	}
	for t := range types {
		d.Types = append(d.Types, types[t].key)
		d.Devices[t] = make([]int, slots)
	}
	devType := map[string]int{}
	for t, ti := range types {
		for _, n := range ti.nodes {
			for _, dev := range in.Cluster.Nodes[n].Devices {
				devType[dev.ID] = t
			}
		}
	}
	held := map[string][2]int{} // job → type, count
	for _, a := range in.Current {
		if len(a.Devices) > 0 {
			held[a.Job] = [2]int{devType[a.Devices[0]], len(a.Devices)}
		}
	}
	headroom := cmp.Or(p.Headroom, 0.25)
	var g greedy
	for i := range in.Jobs {
		j := &in.Jobs[i]
		h, running := held[j.ID]
		if running && (!j.DelayTolerant || j.Deadline.IsZero() || j.NonPreemptible || j.RemainingWork <= 0) {
			addAll(d.Devices[h[0]], h[1])
			continue
		}
		allowed := allowedTypes(j, types, byKey)
		if len(allowed) == 0 {
			continue
		}
		if !j.DelayTolerant || j.Deadline.IsZero() || j.RemainingWork <= 0 {
			addAll(d.Devices[allowed[0]], max(j.MinReplicas, j.Requested, 1))
			continue
		}
		if !j.Deadline.After(in.Now) || fc == nil {
			t, k := p.widest(j, types, allowed)
			addAll(d.Devices[t], k)
			continue
		}
		if err := p.planJob(&g, j, types, allowed, fc, headroom, d.Devices); err != nil {
			return Demand{}, err
		}
	}
	return d, nil
}

func addAll(v []int, k int) {
	for s := range v {
		v[s] += k
	}
}

// allowedTypes returns the indices in types of the job's allowed types
// that have usable devices.
func allowedTypes(j *scheduler.Job, types []typeInfo, byKey map[accel.TypeKey]int) []int {
	var out []int
	if len(j.Types) == 0 {
		for t := range types {
			if types[t].devices > 0 {
				out = append(out, t)
			}
		}
		return out
	}
	for _, k := range j.Types {
		if t, ok := byKey[k]; ok && types[t].devices > 0 && !slices.Contains(out, t) {
			out = append(out, t)
		}
	}
	return out
}

// maxOf is the most devices of type t job j may use.
func maxOf(j *scheduler.Job, ti typeInfo) int {
	if j.MaxReplicas > 0 {
		return min(j.MaxReplicas, ti.devices)
	}
	return ti.devices
}

// widest is a late job's demand: the allowed type where it is fastest
// at the most devices it may use, and that count.
func (p Planner) widest(j *scheduler.Job, types []typeInfo, allowed []int) (int, int) {
	best, bestK, bestV := allowed[0], maxOf(j, types[allowed[0]]), -1.0
	for _, t := range allowed {
		k := maxOf(j, types[t])
		if k < 1 || j.Speedup == nil {
			continue
		}
		if v := j.Speedup.Speedup(string(types[t].key), packed(k, types[t].perNode), k); v > bestV {
			best, bestK, bestV = t, k, v
		}
	}
	return best, bestK
}

func packed(k, perNode int) int {
	if k <= 0 {
		return 0
	}
	return (k + max(perNode, 1) - 1) / max(perNode, 1)
}

// planJob adds deferrable job j's plan to dev; an impossible plan counts
// the job as late.
func (p Planner) planJob(g *greedy, j *scheduler.Job, types []typeInfo, allowed []int, fc *forecast, headroom float64, dev [][]int) error {
	best, bestK, bestV := -1, 0, -1.0
	if j.Speedup == nil {
		addAll(dev[allowed[0]], max(j.MinReplicas, j.Requested, 1))
		return nil
	}
	for _, t := range allowed {
		k := maxOf(j, types[t])
		if k < j.MinReplicas || k < 1 {
			continue
		}
		if v := j.Speedup.Speedup(string(types[t].key), packed(k, types[t].perNode), k); v > bestV {
			best, bestK, bestV = t, k, v
		}
	}
	if best < 0 || bestV <= 0 {
		return nil // cannot run anywhere
	}
	ti := types[best]
	unit := (bestK + maxLevels - 1) / maxLevels
	sp := make([]float64, bestK/unit)
	for l := range sp {
		k := (l + 1) * unit
		sp[l] = j.Speedup.Speedup(string(ti.key), packed(k, ti.perNode), k)
	}
	curve, err := carbon.CurveFromSpeedup(sp, 1, ti.wattsDev*float64(unit), 0)
	if err != nil {
		addAll(dev[best], max(j.MinReplicas, j.Requested, 1))
		return nil
	}
	minScale := (j.MinReplicas + unit - 1) / unit
	if minScale > curve.MaxScale() {
		return nil
	}
	margin := p.DeadlineMargin
	if margin == 0 {
		margin = max(fc.step, j.Deadline.Sub(j.Submitted)/10)
	}
	n := int(j.Deadline.Add(-margin).Sub(fc.start) / fc.step)
	beyond := n > len(fc.ci)
	n = min(n, len(fc.ci))
	work := j.RemainingWork * (1 + headroom)
	pue := cmp.Or(p.Power.PUE, 1)
	if n < 1 || !g.plan(fc.ci, n, fc.step.Seconds(), curve, minScale, work, pue) {
		if beyond {
			addAll(dev[best], max(j.MinReplicas, j.Requested, 1)) // not shifted: the policy runs it as Pollux would
			return nil
		}
		addAll(dev[best], bestK) // late: full goodput
		return nil
	}
	elapsed := float64(fc.now.Sub(fc.start)) / float64(fc.step)
	for sl := range n {
		level := g.scale(sl)
		if sl == 0 && elapsed >= g.fraction(0) {
			level = g.lower(0)
		}
		if count := level * unit; count > 0 {
			dev[best][sl] += min(max(count, j.MinReplicas), bestK)
		}
	}
	return nil
}

// types groups the cluster's nodes by the type of their first device.
func (p Planner) types(c accel.Cluster) ([]typeInfo, map[accel.TypeKey]int, error) {
	byKey := map[accel.TypeKey]int{}
	var out []typeInfo
	keys := c.Types()
	for _, k := range keys {
		pw, err := p.Power.Power(k)
		if err != nil {
			return nil, nil, fmt.Errorf("%w: %w", ErrInvalid, err)
		}
		byKey[k] = len(out)
		out = append(out, typeInfo{key: k, wattsDev: pw.ActiveWatts})
	}
	for n, node := range c.Nodes {
		if len(node.Devices) == 0 {
			continue
		}
		t := byKey[node.Devices[0].Type]
		ti := &out[t]
		ti.nodes = append(ti.nodes, n)
		healthy := 0
		for _, dev := range node.Devices {
			if dev.Healthy {
				healthy++
			}
		}
		ti.failed = append(ti.failed, healthy == 0)
		ti.devices += healthy
		ti.perNode = max(ti.perNode, len(node.Devices))
	}
	return out, byKey, nil
}

// forecast is the round's intensity from the slot holding Now, in g/kWh.
type forecast struct {
	start time.Time
	step  time.Duration
	now   time.Time
	ci    []float64
}

func newForecast(s carbon.Series, now time.Time) (*forecast, error) {
	if len(s.Values) == 0 {
		return nil, nil
	}
	k, ok := s.Index(now)
	if !ok {
		return nil, nil
	}
	f := 1.0
	switch s.Unit {
	case carbon.GPerKWh, carbon.KgPerMWh:
	case carbon.LbsPerMWh:
		f = carbon.GPerKWhPerLbsPerMWh
	default:
		return nil, fmt.Errorf("%w: Input.Carbon.Unit %q is not convertible to g/kWh (set it)", ErrInvalid, s.Unit)
	}
	ci := make([]float64, len(s.Values)-k)
	for i := range ci {
		ci[i] = s.Values[k+i] * f
	}
	return &forecast{start: s.TimeAt(k), step: s.Step, now: now, ci: ci}, nil
}

func (f *forecast) series(n int) carbon.Series {
	return carbon.Series{Start: f.start, Step: f.step, Values: f.ci[:n], Unit: carbon.GPerKWh}
}

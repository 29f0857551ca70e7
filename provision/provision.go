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
	// Joint plans the deferrable jobs together, as
	// carbonaware.Policy.Joint does (keep the two equal): the jobs of a
	// slot whose plans ask for more devices of a type than are installed
	// are planned again within their shares of it.
	Joint bool
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
	key     accel.TypeKey
	devices int // usable devices (healthy: not failed)
	// installed counts failed devices too (a plan looks ahead, when
	// they are back), as carbonaware's Joint capacity.
	installed int
	perNode   int
	nodes     []int // cluster node indices whose first device is of this type
	failed    []bool
	wattsDev  float64
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
	type deferredJob struct {
		j       *scheduler.Job
		allowed []int
	}
	var deferred []deferredJob // deferrable jobs to plan
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
		deferred = append(deferred, deferredJob{j, allowed})
	}
	pue := cmp.Or(p.Power.PUE, 1)
	plans := make([]jobPlan, len(deferred))
	for k, dj := range deferred {
		pl := &plans[k]
		p.prepare(pl, dj.j, types, dj.allowed, fc, headroom)
		if pl.planned && !pl.place(&g, fc, pue, nil) {
			pl.unplanned(pl.late)
		}
	}
	if p.Joint {
		share(&g, types, fc, pue, plans, d.Devices)
	}
	for _, pl := range plans {
		pl.addTo(d.Devices)
	}
	return d, nil
}

// jobPlan is a deferrable job's planning problem and its devices per
// slot.
type jobPlan struct {
	job  *scheduler.Job
	t    int // the type's index; < 0: none
	fill int // devices in every slot when not planned
	// planned: dev holds the plan's devices in the first n slots, from
	// curve in steps of unit devices (at most bestK) for work.
	planned               bool
	curve                 carbon.Curve
	unit, bestK, minScale int
	n                     int
	work                  float64
	dev                   []int
	// late is fill when the plan fails: all it may use, or its minimum
	// when the forecast ends before its deadline.
	late int
}

// unplanned makes pl a constant demand of k devices.
func (pl *jobPlan) unplanned(k int) {
	pl.planned, pl.fill, pl.dev = false, k, nil
}

// addTo adds pl's devices to dev.
func (pl *jobPlan) addTo(dev [][]int) {
	switch {
	case pl.t < 0:
	case pl.planned:
		for s, v := range pl.dev {
			dev[pl.t][s] += v
		}
	case pl.fill > 0:
		addAll(dev[pl.t], pl.fill)
	}
}

// share re-plans, as carbonaware.Policy.Joint does, every planned job
// with devices in a slot its type is over-booked in (base: the devices
// of the jobs that are not deferred, per type and slot), bounded there
// to its devices times the installed devices over the demand, rounded
// up; all against the same totals. A job whose work does not fit in its
// shares keeps its plan.
func share(g *greedy, types []typeInfo, fc *forecast, pue float64, plans []jobPlan, base [][]int) {
	demand := make([][]int, len(base))
	for t := range base {
		demand[t] = slices.Clone(base[t])
	}
	for k := range plans {
		plans[k].addTo(demand)
	}
	share := make([][]float64, len(types))
	for t, v := range demand {
		inst := types[t].installed
		if inst == 0 || len(v) == 0 || slices.Max(v) <= inst {
			continue
		}
		share[t] = make([]float64, len(v))
		for s, k := range v {
			share[t][s] = min(float64(inst)/float64(max(k, 1)), 1)
		}
	}
	for k := range plans {
		pl := &plans[k]
		if !pl.planned || share[pl.t] == nil {
			continue
		}
		bound := make([]int, pl.n)
		bounded := false
		for s := range bound {
			bound[s] = pl.bestK
			if q := share[pl.t][s]; q < 1 {
				// A slot the plan leaves empty stays empty: bounding it
				// changes nothing.
				bound[s] = int(math.Ceil(float64(pl.dev[s]) * q))
				bounded = bounded || pl.dev[s] > 0
			}
		}
		if bounded {
			pl.place(g, fc, pue, bound)
		}
	}
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

// prepare sets up deferrable job j's plan: its best type, curve and
// horizon, or, for a job it cannot plan, a constant demand.
func (p Planner) prepare(pl *jobPlan, j *scheduler.Job, types []typeInfo, allowed []int, fc *forecast, headroom float64) {
	pl.job, pl.t = j, -1
	if j.Speedup == nil {
		pl.t = allowed[0]
		pl.unplanned(max(j.MinReplicas, j.Requested, 1))
		return
	}
	bestV := -1.0
	for _, t := range allowed {
		k := maxOf(j, types[t])
		if k < j.MinReplicas || k < 1 {
			continue
		}
		if v := j.Speedup.Speedup(string(types[t].key), packed(k, types[t].perNode), k); v > bestV {
			pl.t, pl.bestK, bestV = t, k, v
		}
	}
	if pl.t < 0 || bestV <= 0 {
		pl.t = -1 // cannot run anywhere
		return
	}
	ti := types[pl.t]
	pl.unit = (pl.bestK + maxLevels - 1) / maxLevels
	sp := make([]float64, pl.bestK/pl.unit)
	for l := range sp {
		k := (l + 1) * pl.unit
		sp[l] = j.Speedup.Speedup(string(ti.key), packed(k, ti.perNode), k)
	}
	curve, err := carbon.CurveFromSpeedup(sp, 1, ti.wattsDev*float64(pl.unit), 0)
	if err != nil {
		pl.unplanned(max(j.MinReplicas, j.Requested, 1))
		return
	}
	pl.curve = curve
	pl.minScale = (j.MinReplicas + pl.unit - 1) / pl.unit
	if pl.minScale > curve.MaxScale() {
		pl.t = -1
		return
	}
	n := int(p.due(j, fc.step).Sub(fc.start) / fc.step)
	pl.late = pl.bestK // late: full goodput
	if n > len(fc.ci) {
		pl.late = max(j.MinReplicas, j.Requested, 1) // not shifted: the policy runs it as Pollux would
	}
	pl.n = min(n, len(fc.ci))
	pl.work = j.RemainingWork * (1 + headroom)
	pl.planned = true
	if pl.n < 1 {
		pl.unplanned(pl.late)
	}
}

// place plans pl into pl.dev, at most bound[s] devices in slot s when
// bound is set; it reports false, leaving pl as it was, when the work
// does not fit.
func (pl *jobPlan) place(g *greedy, fc *forecast, pue float64, bound []int) bool {
	var slotMax []int
	if bound != nil {
		slotMax = make([]int, pl.n)
		for s := range pl.n {
			slotMax[s] = bound[s] / pl.unit
		}
	}
	if !g.plan(fc.ci, pl.n, fc.step.Seconds(), pl.curve, pl.minScale, pl.work, pue, slotMax) {
		return false
	}
	if pl.dev == nil {
		pl.dev = make([]int, pl.n)
	}
	elapsed := float64(fc.now.Sub(fc.start)) / float64(fc.step)
	for s := range pl.n {
		level := g.scale(s)
		if s == 0 && elapsed >= g.fraction(0) {
			level = g.lower(0)
		}
		pl.dev[s] = 0
		if count := level * pl.unit; count > 0 {
			pl.dev[s] = min(max(count, pl.job.MinReplicas), pl.bestK)
		}
	}
	return true
}

// due is when job j's plan must finish, as carbonaware's: its deadline
// less DeadlineMargin, or one forecast step or a tenth of the job's
// window, whichever is longer.
func (p Planner) due(j *scheduler.Job, step time.Duration) time.Time {
	margin := p.DeadlineMargin
	if margin == 0 {
		margin = max(step, j.Deadline.Sub(j.Submitted)/10)
	}
	return j.Deadline.Add(-margin)
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
		ti.installed += len(node.Devices)
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

package carbon

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"time"
)

// Method selects how Schedule solves the allocation.
type Method int

// Methods.
const (
	// Auto uses Greedy when there is no ChangeCostG and the greedy plan is
	// provably within Tolerance of the optimum (always, for a concave
	// curve); otherwise it also runs DP and returns the cheaper of the two
	// plans by carbon plus change cost (ties to DP).
	Auto Method = iota
	// Greedy is CarbonScaler's marginal allocation: repeatedly add the
	// (slot, next scale) step with the most work per gram, over the scales
	// on the lower convex hull of the curve's energy against work. Exact
	// for concave curves without change costs; otherwise Plan.BoundG
	// says how far from optimal it can be.
	Greedy
	// DP is dynamic programming over slots and quantised work (and scale,
	// when changes cost). Near-exact for any curve; slower.
	DP
)

// String returns "auto", "greedy" or "dp".
func (m Method) String() string {
	switch m {
	case Greedy:
		return "greedy"
	case DP:
		return "dp"
	}
	return "auto"
}

// ScheduleOptions tune the planners. The zero value is valid: scales 1 to
// the curve's maximum, PUE 1, no change cost, Auto method.
type ScheduleOptions struct {
	// MinScale is the smallest scale at which the job may run (it may
	// also be suspended, scale 0). Zero means 1.
	MinScale int
	// MaxScale is the largest scale. Zero means the curve's maximum.
	MaxScale int
	// SlotMaxScale, when set, bounds the scale slot by slot (slot t of
	// the forecast from its start; slots past its end are bounded by
	// MaxScale only): the share of a slot other work leaves the job, as a
	// planner that fits many jobs into one cluster passes it. A bound
	// below MinScale closes the slot. Greedy honours a bound exactly when
	// it is one of the curve's hull scales (every scale of a concave
	// curve), and otherwise uses the largest hull scale below it. Auto
	// then plans with Greedy alone and its BoundG is zero (the hull bound
	// is not one under slot bounds); DP is an error, and so are negative
	// bounds. Schedule only: the baselines, LowerBound and
	// ClusterEnvelope reject it.
	SlotMaxScale []int
	// PUE multiplies IT energy into facility energy. Zero means 1; below 1
	// is an error.
	PUE float64
	// ChangeCostG is the carbon, in grams, charged per device added when
	// the job grows or resumes, and per device removed when it shrinks
	// while still running (suspending and finishing are free): a stand-in
	// for checkpoint and restart overhead. Zero means scale changes are
	// free. A positive value makes Auto run DP as well as the greedy.
	ChangeCostG float64
	// InitialScale is the job's scale before the first slot, for
	// ChangeCostG. Zero means not running.
	InitialScale int
	// Method selects the solver; zero means Auto.
	Method Method
	// Resolution is the number of work quanta DP uses for the whole job,
	// however short against one slot at full scale (down to 2^-30 of
	// one); zero means 2000, or fewer where the DP's table (slots ×
	// quanta, × scales with ChangeCostG) would pass 10 million cells.
	// Higher is closer to exact and slower; an explicit value whose table
	// is too large is an error.
	Resolution int
	// Tolerance is the relative gap to the proven lower bound within which
	// Auto accepts the greedy plan for a curve that is not concave instead
	// of running DP. Zero means 0.001 (0.1%); negative means always DP.
	Tolerance float64
}

// Slot is the plan for one time slot: run at Scale for Fraction of the
// slot and at Lower for the rest (Lower is Scale-1, the previous allowed
// scale, or 0, suspended). At most a few slots of a plan are fractional.
type Slot struct {
	// Start is the beginning of the slot.
	Start time.Time
	// Scale is the scale to provision in this slot; 0 means suspended.
	Scale int
	// Lower is the scale for the part of the slot after Fraction.
	Lower int
	// Fraction of the slot spent at Scale, in (0, 1]; 1 when Scale is 0.
	Fraction float64
	// IntensityGPerKWh is the forecast intensity the plan used.
	IntensityGPerKWh float64
	// Work done in the slot, in the curve's work units.
	Work float64
	// EnergyJoules is the IT energy in the slot (before PUE).
	EnergyJoules float64
	// CarbonG is the forecast emissions in the slot, PUE included.
	CarbonG float64
}

// Plan is what Schedule and its baselines return: one Slot per slot from
// the forecast's start to the deadline. It is a plain value.
type Plan struct {
	// Start and Step locate the slots.
	Start time.Time
	Step  time.Duration
	// Slots has one entry per slot, including suspended ones.
	Slots []Slot
	// Work is the total planned work (at least what was asked).
	Work float64
	// EnergyJoules is the total IT energy.
	EnergyJoules float64
	// CarbonG is the forecast emissions, PUE included.
	CarbonG float64
	// ChangeCostG is the total change cost charged under
	// ScheduleOptions.ChangeCostG (not included in CarbonG).
	ChangeCostG float64
	// Changes counts scale changes while running, resumes and starts.
	Changes int
	// Method is the solver that produced the plan.
	Method Method
	// Concave reports whether the curve was concave over the scales used.
	Concave bool
	// BoundG is a lower bound on the forecast carbon of any plan for the
	// same job (the optimum when time in a slot may be split among any
	// scales). CarbonG equals it for a concave curve without change
	// costs; zero when the solver did not compute one (DP).
	BoundG float64
}

// Finish returns the end of the last slot with work, or Start when the
// plan does nothing.
func (s Plan) Finish() time.Time {
	for i := len(s.Slots) - 1; i >= 0; i-- {
		if s.Slots[i].Scale > 0 {
			return s.Slots[i].Start.Add(s.Step)
		}
	}
	return s.Start
}

// Scales returns the provisioned scale of each slot.
func (s Plan) Scales() []int {
	out := make([]int, len(s.Slots))
	for i, sl := range s.Slots {
		out[i] = sl.Scale
	}
	return out
}

// problem is a validated planning instance.
type problem struct {
	start  time.Time
	step   time.Duration
	sec    float64   // slot length in seconds
	ci     []float64 // g/kWh per slot
	curve  Curve
	levels []int     // allowed scales: 0, min, ..., max
	work   []float64 // work per slot at each allowed scale
	kwh    []float64 // facility kWh per slot at each allowed scale (PUE in)
	need   float64
	opts   ScheduleOptions
	pue    float64
}

func newProblem(forecast Series, c Curve, work float64, deadline time.Time, opts ScheduleOptions) (*problem, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	if err := forecast.Validate(); err != nil {
		return nil, fmt.Errorf("forecast: %w", err)
	}
	if math.IsNaN(work) || math.IsInf(work, 0) || work <= 0 {
		return nil, fmt.Errorf("%w: work %v must be positive and finite", ErrInvalid, work)
	}
	minS, maxS := opts.MinScale, opts.MaxScale
	if minS == 0 {
		minS = 1
	}
	if maxS == 0 {
		maxS = c.MaxScale()
	}
	if minS < 1 || maxS > c.MaxScale() || minS > maxS {
		return nil, fmt.Errorf("%w: ScheduleOptions.MinScale %d, MaxScale %d for a curve of %d levels", ErrInvalid, opts.MinScale, opts.MaxScale, c.MaxScale())
	}
	if opts.InitialScale < 0 {
		return nil, fmt.Errorf("%w: ScheduleOptions.InitialScale %d", ErrInvalid, opts.InitialScale)
	}
	pue := opts.PUE
	if pue == 0 {
		pue = 1
	}
	if math.IsNaN(pue) || math.IsInf(pue, 0) || pue < 1 {
		return nil, fmt.Errorf("%w: ScheduleOptions.PUE %v must be at least 1", ErrInvalid, opts.PUE)
	}
	if math.IsNaN(opts.ChangeCostG) || math.IsInf(opts.ChangeCostG, 0) || opts.ChangeCostG < 0 {
		return nil, fmt.Errorf("%w: ScheduleOptions.ChangeCostG %v", ErrInvalid, opts.ChangeCostG)
	}
	if opts.Method < Auto || opts.Method > DP {
		return nil, fmt.Errorf("%w: ScheduleOptions.Method %d", ErrInvalid, opts.Method)
	}
	for t, k := range opts.SlotMaxScale {
		if k < 0 {
			return nil, fmt.Errorf("%w: ScheduleOptions.SlotMaxScale[%d] %d is negative", ErrInvalid, t, k)
		}
	}
	if opts.SlotMaxScale != nil && opts.Method == DP {
		return nil, fmt.Errorf("%w: ScheduleOptions.SlotMaxScale needs Method Greedy or Auto", ErrInvalid)
	}
	if opts.Resolution < 0 || opts.Resolution > 1_000_000 {
		return nil, fmt.Errorf("%w: ScheduleOptions.Resolution %d", ErrInvalid, opts.Resolution)
	}
	ci, err := forecast.gramsPerKWh()
	if err != nil {
		return nil, err
	}
	if !deadline.After(forecast.Start) {
		return nil, &InfeasibleError{Need: work}
	}
	n := int(deadline.Sub(forecast.Start) / forecast.Step)
	if n > len(ci) {
		return nil, fmt.Errorf("%w: forecast ends at %v, before the deadline %v", ErrRange, forecast.End(), deadline)
	}
	p := &problem{
		start: forecast.Start, step: forecast.Step, sec: forecast.Step.Seconds(),
		ci: ci[:n], curve: c, need: work, opts: opts, pue: pue,
	}
	p.levels = append(p.levels, 0)
	for k := minS; k <= maxS; k++ {
		p.levels = append(p.levels, k)
	}
	for _, k := range p.levels {
		p.work = append(p.work, c.WorkPerSecond[k]*p.sec)
		p.kwh = append(p.kwh, c.Watts[k]*p.sec/3.6e6*pue)
	}
	fits := 0.0
	for t := range n {
		fits += p.work[p.top(t)]
	}
	if fits < work*(1-1e-12) {
		return nil, &InfeasibleError{Need: work, Fits: fits, Slots: n}
	}
	return p, nil
}

// scheduleOnly rejects the options only Schedule takes.
func (o ScheduleOptions) scheduleOnly() error {
	if o.SlotMaxScale != nil {
		return fmt.Errorf("%w: ScheduleOptions.SlotMaxScale is for Schedule only", ErrInvalid)
	}
	return nil
}

// top is the index in p.levels of the largest scale slot t allows.
func (p *problem) top(t int) int {
	j := len(p.levels) - 1
	if t < len(p.opts.SlotMaxScale) {
		for j > 0 && p.levels[j] > p.opts.SlotMaxScale[t] {
			j--
		}
	}
	return j
}

// alloc is a slot's allocation as indices into problem.levels: upper
// level j for fraction f, level j-1 for the rest (suspended instead when
// stop is set: the slot ends early); j = 0 is suspended.
type alloc struct {
	j    int
	f    float64
	stop bool
}

// lower is the level index of the part of the slot after x.f.
func (x alloc) lower() int {
	if x.stop {
		return 0
	}
	return x.j - 1
}

// Schedule is the marginal planner of CarbonScaler: it decides the scale of an
// elastic job in each slot of forecast, from forecast.Start until the
// deadline (whole slots only), so that the job does work units of work at
// the least forecast carbon. With a concave curve and no change cost the
// greedy over (slot, scale) by marginal work per gram is exact; otherwise
// Auto falls back to DP. The forecast must be in a unit convertible to
// g/kWh. An impossible deadline returns an *InfeasibleError (wrapping
// ErrInfeasible) that says how much work fits.
func Schedule(forecast Series, c Curve, work float64, deadline time.Time, opts ScheduleOptions) (Plan, error) {
	p, err := newProblem(forecast, c, work, deadline, opts)
	if err != nil {
		return Plan{}, err
	}
	concave := c.Concave(p.levels[1], p.levels[len(p.levels)-1])
	tol := opts.Tolerance
	if tol == 0 {
		tol = 0.001
	}
	if math.IsNaN(tol) {
		return Plan{}, fmt.Errorf("%w: ScheduleOptions.Tolerance is NaN", ErrInvalid)
	}
	m := opts.Method
	if m == Auto && tol < 0 {
		m = DP
	}
	if opts.SlotMaxScale != nil {
		m = Greedy
	}
	var greedy Plan
	if m == Greedy || m == Auto {
		a, bound, err := p.hullGreedy()
		if err != nil {
			return Plan{}, err
		}
		greedy = p.plan(a)
		greedy.Method, greedy.Concave, greedy.BoundG = Greedy, concave, bound
		if opts.SlotMaxScale != nil {
			greedy.BoundG = 0
		}
		if m == Greedy || (opts.ChangeCostG == 0 && greedy.CarbonG <= bound*(1+tol)) {
			return greedy, nil
		}
	}
	a, err := p.dp()
	if err != nil {
		return Plan{}, err
	}
	s := p.plan(a)
	s.Method, s.Concave = DP, concave
	if m == Auto && greedy.CarbonG+greedy.ChangeCostG < s.CarbonG+s.ChangeCostG {
		// DP's quantised plan can lose to the greedy plan already at hand.
		return greedy, nil
	}
	return s, nil
}

// slotWork returns the work of allocation x.
func (p *problem) slotWork(x alloc) float64 {
	if x.j == 0 {
		return 0
	}
	lo := x.lower()
	return p.work[lo] + x.f*(p.work[x.j]-p.work[lo])
}

func (p *problem) slotKWh(x alloc) float64 {
	if x.j == 0 {
		return 0
	}
	lo := x.lower()
	return p.kwh[lo] + x.f*(p.kwh[x.j]-p.kwh[lo])
}

// plan turns allocations into a Plan.
func (p *problem) plan(a []alloc) Plan {
	s := Plan{Start: p.start, Step: p.step, Slots: make([]Slot, len(a))}
	for t, x := range a {
		sl := Slot{Start: p.start.Add(time.Duration(t) * p.step), IntensityGPerKWh: p.ci[t], Fraction: 1}
		if x.j > 0 {
			sl.Scale, sl.Lower, sl.Fraction = p.levels[x.j], p.levels[x.j], x.f
			if x.f < 1 {
				sl.Lower = p.levels[x.lower()]
			}
		}
		sl.Work = p.slotWork(x)
		kwh := p.slotKWh(x)
		sl.EnergyJoules = kwh / p.pue * 3.6e6
		sl.CarbonG = kwh * p.ci[t]
		s.Slots[t] = sl
		s.Work += sl.Work
		s.EnergyJoules += sl.EnergyJoules
		s.CarbonG += sl.CarbonG
	}
	s.Changes, s.ChangeCostG = changes(s.Slots, p.opts.InitialScale, p.opts.ChangeCostG)
	return s
}

// changeCost is the charge for going from scale a to scale b.
func changeCost(a, b int) int {
	if b == 0 || a == b {
		return 0
	}
	if b > a {
		return b - a
	}
	return a - b
}

// changes counts scale changes (in the order Scale, then Lower within a
// slot) and their cost.
func changes(slots []Slot, initial int, perDevice float64) (int, float64) {
	n, units := 0, 0
	cur := initial
	step := func(next int) {
		if d := changeCost(cur, next); d > 0 {
			n++
			units += d
		}
		cur = next
	}
	for _, sl := range slots {
		step(sl.Scale)
		if sl.Fraction < 1 {
			step(sl.Lower)
		}
	}
	return n, float64(units) * perDevice
}

// hull returns the indices of the levels on the lower convex hull of
// (work, energy), from level 0 up: the levels a cost-minimising plan would
// use if time in a slot could be split among any scales. With
// SlotMaxScale it keeps the levels on the hull's segments too, so that a
// slot's bound can stop part way along one.
func (p *problem) hull() []int {
	h := []int{0}
	for j := 1; j < len(p.levels); j++ {
		if p.work[j] <= p.work[h[len(h)-1]] {
			continue // no more work for more energy: dominated
		}
		for len(h) >= 2 {
			a, b := h[len(h)-2], h[len(h)-1]
			// Drop b if it lies on or above the segment a -> j.
			lhs := (p.kwh[b] - p.kwh[a]) * (p.work[j] - p.work[a])
			rhs := (p.kwh[j] - p.kwh[a]) * (p.work[b] - p.work[a])
			if lhs < rhs*(1-1e-12) || (p.opts.SlotMaxScale != nil && lhs <= rhs*(1+1e-12)) {
				break // b is below the segment (or on it, kept for slot bounds)
			}
			h = h[:len(h)-1]
		}
		h = append(h, j)
	}
	return h
}

// hullGreedy runs the marginal greedy over the hull levels. Its carbon in
// hull space is a lower bound for every plan. Mapping the one fractional
// slot back onto neighbouring levels gives a feasible plan that is exact
// when every level is on the hull (a concave curve).
func (p *problem) hullGreedy() ([]alloc, float64, error) {
	h := p.hull()
	a, err := p.greedy(h)
	if err != nil {
		return nil, 0, err
	}
	var bound float64
	out := make([]alloc, len(a))
	for t, x := range a {
		if x.j == 0 {
			continue
		}
		hi, lo := h[x.j], h[x.j-1]
		w := p.work[lo] + x.f*(p.work[hi]-p.work[lo])
		bound += p.ci[t] * (p.kwh[lo] + x.f*(p.kwh[hi]-p.kwh[lo]))
		if x.f >= 1 {
			out[t] = alloc{j: hi, f: 1}
			continue
		}
		// The neighbouring levels around w.
		j := lo + 1
		for j < hi && p.work[j] < w {
			j++
		}
		f := 1.0
		if d := p.work[j] - p.work[j-1]; d > 0 {
			f = (w - p.work[j-1]) / d
		}
		out[t] = alloc{j: j, f: min(max(f, 0), 1)}
		if out[t].f == 0 {
			out[t] = alloc{j: j - 1, f: 1}
		}
	}
	return out, bound, nil
}

// greedy is CarbonScaler's marginal allocation over the levels idx (idx[0]
// = 0) with a fractional last step: a max-heap of slots keyed by the work
// per gram of each slot's next step. Allocations index into idx.
func (p *problem) greedy(idx []int) ([]alloc, error) {
	n, L := len(p.ci), len(idx)
	a := make([]alloc, n)
	dW := func(j int) float64 { return p.work[idx[j]] - p.work[idx[j-1]] }
	score := func(t int) float64 {
		j := a[t].j + 1
		dw, dk := dW(j), (p.kwh[idx[j]]-p.kwh[idx[j-1]])*p.ci[t]
		switch {
		case dw <= 0:
			return 0
		case dk <= 0:
			return math.Inf(1)
		}
		return dw / dk
	}
	// lim[t]: the last index of idx slot t allows.
	lim := make([]int, n)
	for t := range n {
		lim[t] = L - 1
		if t < len(p.opts.SlotMaxScale) {
			for lim[t] > 0 && p.levels[idx[lim[t]]] > p.opts.SlotMaxScale[t] {
				lim[t]--
			}
		}
	}
	h := slotHeap{key: make([]float64, n)}
	for t := range n {
		if lim[t] == 0 {
			continue
		}
		h.key[t] = score(t)
		h.items = append(h.items, t)
	}
	h.init()
	remaining := p.need
	eps := p.need * 1e-12
	for remaining > eps {
		if len(h.items) == 0 {
			return nil, &InfeasibleError{Need: p.need, Fits: p.need - remaining, Slots: n}
		}
		t := h.pop()
		j := a[t].j + 1
		dw := dW(j)
		if dw >= remaining && dw > 0 {
			a[t] = alloc{j: j, f: remaining / dw}
			remaining = 0
			break
		}
		a[t] = alloc{j: j, f: 1}
		remaining -= dw
		if j+1 <= lim[t] {
			h.key[t] = score(t)
			h.push(t)
		}
	}
	return a, nil
}

// slotHeap is a binary max-heap of slot indices by key, ties to the
// earlier slot.
type slotHeap struct {
	items []int
	key   []float64
}

func (h *slotHeap) less(i, j int) bool { // i before j
	a, b := h.items[i], h.items[j]
	if h.key[a] != h.key[b] {
		return h.key[a] > h.key[b]
	}
	return a < b
}

func (h *slotHeap) init() {
	for i := len(h.items)/2 - 1; i >= 0; i-- {
		h.down(i)
	}
}

func (h *slotHeap) push(t int) {
	h.items = append(h.items, t)
	i := len(h.items) - 1
	for i > 0 {
		parent := (i - 1) / 2
		if !h.less(i, parent) {
			break
		}
		h.items[i], h.items[parent] = h.items[parent], h.items[i]
		i = parent
	}
}

func (h *slotHeap) pop() int {
	top := h.items[0]
	last := len(h.items) - 1
	h.items[0] = h.items[last]
	h.items = h.items[:last]
	if last > 0 {
		h.down(0)
	}
	return top
}

func (h *slotHeap) down(i int) {
	n := len(h.items)
	for {
		l := 2*i + 1
		if l >= n {
			return
		}
		best := l
		if r := l + 1; r < n && h.less(r, l) {
			best = r
		}
		if !h.less(best, i) {
			return
		}
		h.items[i], h.items[best] = h.items[best], h.items[i]
		i = best
	}
}

// trim removes planned work beyond need, cutting first where the top
// scale step costs the most carbon per unit of work.
func (p *problem) trim(a []alloc) {
	total := 0.0
	for _, x := range a {
		total += p.slotWork(x)
	}
	excess := total - p.need
	for excess > p.need*1e-12 {
		best, bestRate := -1, -1.0
		for t, x := range a {
			if x.j == 0 {
				continue
			}
			dw := p.work[x.j] - p.work[x.j-1]
			if dw <= 0 {
				// A step that adds no work is pure cost: drop it first.
				best, bestRate = t, math.Inf(1)
				break
			}
			r := (p.kwh[x.j] - p.kwh[x.j-1]) * p.ci[t] / dw
			if r > bestRate {
				best, bestRate = t, r
			}
		}
		if best < 0 {
			return
		}
		x := a[best]
		dw := p.work[x.j] - p.work[x.j-1]
		have := x.f * dw
		if dw <= 0 || have <= excess {
			excess -= have
			a[best] = alloc{j: x.j - 1, f: 1}
			continue
		}
		a[best].f = (have - excess) / dw
		excess = 0
	}
}

// trimChanges removes planned work beyond need under a change cost. Each
// step takes, over every running slot, the cut with the largest saving in
// carbon plus change cost: the slot's top step (whole, or a fraction of it
// run at the scale below), or ending the slot early (its scale for part of
// the slot, then suspended; or suspending it whole; or, for the slot where
// DP finishes part way, finishing sooner). A cut is charged for
// the suspend, resume or shrink it adds before and after the slot, so only
// cuts that lower the total are taken: the result never costs more than
// the whole-scale plan it starts from.
func (p *problem) trimChanges(a []alloc) {
	total := 0.0
	for _, x := range a {
		total += p.slotWork(x)
	}
	excess := total - p.need
	eps := p.need * 1e-12
	for excess > eps {
		best, bestSave := -1, 0.0
		var bestY alloc
		for t, x := range a {
			if x.j == 0 || (x.f < 1 && !x.stop) {
				continue
			}
			cur := p.localCost(a, t, x)
			w := p.slotWork(x)
			if x.f < 1 {
				// A slot that already ends early (DP's finish) ends earlier.
				if w > excess {
					try := alloc{j: x.j, f: (w - excess) / p.work[x.j], stop: true}
					if save := cur - p.localCost(a, t, try); save > bestSave+1e-12*math.Abs(cur) {
						best, bestSave, bestY = t, save, try
					}
				}
				continue
			}
			try := func(y alloc) {
				if removed := w - p.slotWork(y); removed > excess+eps {
					return
				}
				if save := cur - p.localCost(a, t, y); save > bestSave+1e-12*math.Abs(cur) {
					best, bestSave, bestY = t, save, y
				}
			}
			// The top step: dropped whole, or cut to remove the excess.
			if dw := w - p.work[x.j-1]; dw <= excess {
				try(alloc{j: x.j - 1, f: 1})
			} else {
				try(alloc{j: x.j, f: (dw - excess) / dw})
			}
			// Ending the slot early.
			if x.j > 1 {
				if w <= excess {
					try(alloc{})
				} else {
					try(alloc{j: x.j, f: (w - excess) / w, stop: true})
				}
			}
		}
		if best < 0 {
			return
		}
		excess -= p.slotWork(a[best]) - p.slotWork(bestY)
		if bestY.j > 0 && bestY.f <= 0 {
			bestY = alloc{j: bestY.lower(), f: 1}
		}
		a[best] = bestY
	}
}

// localCost is slot t's carbon under x plus the change costs of the
// transitions into, within and out of it, with the other slots as in a.
func (p *problem) localCost(a []alloc, t int, x alloc) float64 {
	first := func(y alloc) int { return p.levels[y.j] }
	last := func(y alloc) int {
		if y.j > 0 && y.f < 1 {
			return p.levels[y.lower()]
		}
		return p.levels[y.j]
	}
	prev := p.opts.InitialScale
	if t > 0 {
		prev = last(a[t-1])
	}
	units := changeCost(prev, first(x))
	if x.j > 0 && x.f < 1 {
		units += changeCost(first(x), last(x))
	}
	if t+1 < len(a) {
		units += changeCost(last(x), first(a[t+1]))
	}
	return p.slotKWh(x)*p.ci[t] + float64(units)*p.opts.ChangeCostG
}

// sortedSlots returns the indices of ci in ascending order, ties to
// the earlier index.
func sortedSlots(ci []float64) []int {
	idx := make([]int, len(ci))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int { return cmp.Compare(ci[a], ci[b]) })
	return idx
}

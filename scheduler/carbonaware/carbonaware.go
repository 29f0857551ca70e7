package carbonaware

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

// Policy makes any policy carbon-aware: delay-tolerant jobs with a
// deadline are scaled, down to zero when their deadline allows, so that
// their work lands in the cleanest hours of the round's forecast
// (Input.Carbon) that still meet the deadline, and they share the round's
// Envelope; then the wrapped policy (Inner, Pollux's goodput objective by
// default) decides who gets what among the jobs that run, on a Round
// restricted with scheduler.Round.Restrict. Jobs without a deadline, or
// not delay-tolerant, are treated exactly as under Inner (they may get
// more because flexible work waits).
//
// Per flexible job and round: its curve is its Speedup on its best type
// (the allowed type with the highest speedup at its largest count, counting
// the devices of nodes that are down, failed or powered down, which the
// plan's later slots may use), in
// scale steps of one device, or of ⌈count/16⌉ devices for wide jobs, with
// the power model's active-minus-idle watts per device (idle devices draw
// their idle power whether the job runs or not); its work is
// Job.RemainingWork × (1 + Headroom) device-seconds; carbon.Schedule (the
// CarbonScaler greedy) places that work in the forecast's slots from the
// one holding Input.Now until Deadline − DeadlineMargin at the least
// cost, where a slot's cost per kWh is
//
//	CarbonWeight × CI + (1 − CarbonWeight) × mean CI × (hours from now + 1) / 24
//
// (weight 1: carbon only; lower weights charge delay, a day of it as much
// as the mean intensity). The plan's scale for the current moment caps the
// job's device count this round (0: it waits). Re-planning every round from
// the remaining work corrects for forecast and estimation errors and for
// rounds where the job got less than its cap.
//
// A job whose deadline can no longer be met (the plan is infeasible, or the
// deadline has passed) runs uncapped at full goodput, and its Decision says
// so with ReasonDeadline. A job whose remaining work is unknown (0), or
// with no usable forecast (none given, Now outside it), is not shifted;
// when the forecast ends before the deadline the plan must finish by the
// forecast's end. A pinned (running non-preemptible) job is never capped.
//
// CarbonWeight 0 is carbon-agnostic: Allocate is then Inner.Allocate,
// plan for plan (Input.Carbon and Input.Envelope are ignored).
//
// Policy is a plain value: safe for concurrent use when Inner is.
type Policy struct {
	// Inner decides among the jobs that run; nil = scheduler.Pollux{}.
	Inner scheduler.Policy
	// CarbonWeight in [0, 1] trades carbon against delay (see the cost
	// above); 0 = carbon-agnostic (exactly Goodput), 1 = carbon only.
	CarbonWeight float64
	// Power gives the watts per device the planner charges, and the PUE
	// (it scales every slot alike, so it changes costs, not choices); the
	// zero value is the accel catalog's TDPs at PUE 1.
	Power energy.PowerModel
	// Headroom inflates each job's remaining work when planning, against
	// estimation error and rounds lost to contention; 0 = 0.25, negative
	// (or NaN) is an error.
	Headroom float64
	// DeadlineMargin is how long before its deadline a job's plan must
	// finish; 0 = one forecast step (the current slot is partly over) or
	// a tenth of the job's window (Deadline − Submitted), whichever is
	// longer, so that jobs planned into the same last clean hours have
	// time to catch up; negative is an error.
	DeadlineMargin time.Duration
	// Joint plans the flexible jobs together instead of each as if it
	// had the cluster to itself. When the plans ask for more devices of
	// a type in some slot than the cluster has (counting what the running
	// jobs that are not planned hold), every job planned into such a slot
	// is bounded there to its share, its devices times the cluster's over
	// the plans' (rounded up), and planned again
	// (carbon.ScheduleOptions.SlotMaxScale): the work that does not fit in
	// the clean hours moves, at the job's own best scales, to the next
	// cleanest ones now, instead of every job counting on the clean hours
	// and catching up together at full width before its deadline. A job
	// whose work does not fit in its shares keeps its first plan. A
	// provisioner that powers nodes for the plans must plan the same way
	// (package provision's Planner.Joint).
	Joint bool
}

var _ scheduler.Policy = Policy{}

// Validate checks the policy's settings, and Inner's when it has a
// Validate method (scheduler.New and Allocate call it). Errors wrap
// scheduler.ErrInvalid.
func (c Policy) Validate() error {
	if w := c.CarbonWeight; math.IsNaN(w) || w < 0 || w > 1 {
		return fmt.Errorf("%w: carbonaware.Policy.CarbonWeight %v: must be in [0, 1]", scheduler.ErrInvalid, c.CarbonWeight)
	}
	if h := c.Headroom; math.IsNaN(h) || math.IsInf(h, 0) || h < 0 {
		return fmt.Errorf("%w: carbonaware.Policy.Headroom %v: must be finite and not negative", scheduler.ErrInvalid, c.Headroom)
	}
	if c.DeadlineMargin < 0 {
		return fmt.Errorf("%w: carbonaware.Policy.DeadlineMargin %v is negative", scheduler.ErrInvalid, c.DeadlineMargin)
	}
	if err := c.Power.Validate(); err != nil {
		return fmt.Errorf("%w: carbonaware.Policy.Power: %w", scheduler.ErrInvalid, err)
	}
	if v, ok := c.inner().(scheduler.Validator); ok {
		return v.Validate()
	}
	return nil
}

// inner returns Inner, or its default.
func (c Policy) inner() scheduler.Policy {
	if c.Inner == nil {
		return scheduler.Pollux{}
	}
	return c.Inner
}

// jobCap is the carbon plan's verdict for one job this round.
type jobCap struct {
	capped bool // Max lowered to count (0: the job waits)
	count  int
	typ    accel.TypeKey // the one type the job may use (an Envelope is set), or ""
	reason scheduler.Reason
	note   string
}

// Allocate implements scheduler.Policy: it plans each flexible job's
// device count for now, then lets Inner allocate among the jobs that run,
// each within its cap (a Round restricted with Round.Restrict).
func (c Policy) Allocate(ctx context.Context, r *scheduler.Round) ([]scheduler.Target, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	inner := c.inner()
	if c.CarbonWeight == 0 {
		return inner.Allocate(ctx, r)
	}
	jobs := r.Jobs()
	caps, some, err := c.caps(r, jobs)
	if err != nil {
		return nil, err
	}
	if !some {
		return inner.Allocate(ctx, r)
	}
	var limits []scheduler.Limit
	for i, jc := range caps {
		l := scheduler.Limit{Job: jobs[i].Job.ID, Type: jc.typ}
		switch {
		case jc.capped && jc.count == 0:
			l.Out = true
		case jc.capped:
			l.Max = jc.count
		}
		if l.Out || l.Max > 0 || l.Type != "" {
			limits = append(limits, l)
		}
	}
	sub, err := r.Restrict(limits)
	if err != nil {
		return nil, err
	}
	tg, err := inner.Allocate(ctx, sub)
	if err != nil {
		return nil, err
	}
	seen := make(map[string]int, len(tg))
	for k := range tg {
		seen[tg[k].Job] = k
	}
	for i := range jobs {
		jc := caps[i]
		if jc.reason == scheduler.ReasonUnchanged && jc.note == "" {
			continue
		}
		id := jobs[i].Job.ID
		k, ok := seen[id]
		if !ok {
			tg = append(tg, scheduler.Target{Job: id})
			k = len(tg) - 1
		}
		t := &tg[k]
		switch {
		case jc.reason == scheduler.ReasonDeadline:
			t.Reason, t.Note = scheduler.ReasonDeadline, joinNote(jc.note, t.Note)
		case jc.capped && (jc.count == 0 || t.Count == jc.count):
			// The cap binds: carbon, not the objective, set the count.
			t.Reason, t.Note = scheduler.ReasonCarbon, joinNote(jc.note, t.Note)
		default:
			t.Note = joinNote(t.Note, jc.note)
		}
	}
	return tg, nil
}

func joinNote(a, b string) string {
	switch {
	case a == "":
		return b
	case b == "":
		return a
	}
	return a + "; " + b
}

// caps plans every flexible job of r (jobs: r.Jobs()); the bool reports
// whether some job is capped or annotated.
func (c Policy) caps(r *scheduler.Round, jobs []scheduler.RoundJob) ([]jobCap, bool, error) {
	caps := make([]jobCap, len(jobs))
	in := r.Input()
	var fc *forecast
	if len(in.Carbon.Values) > 0 {
		f, err := newForecast(in.Carbon, in.Now, c.CarbonWeight)
		if err != nil {
			return nil, false, err
		}
		fc = f
	}
	if fc == nil && in.Envelope == nil {
		return caps, false, nil
	}
	some := false
	var flexible, planned []int // jobs that honour the envelope; jobs to plan
	for i := range jobs {
		j := &jobs[i]
		if !j.Job.DelayTolerant || j.Job.Deadline.IsZero() || j.Pinned {
			continue
		}
		if !j.Job.Deadline.After(in.Now) {
			caps[i] = jobCap{reason: scheduler.ReasonDeadline,
				note: fmt.Sprintf("deadline %s passed %v ago: full goodput", j.Job.Deadline.UTC().Format(time.RFC3339), in.Now.Sub(j.Job.Deadline).Round(time.Second))}
			some = true
			continue
		}
		if fc != nil && j.Job.RemainingWork > 0 {
			planned = append(planned, i)
		}
		flexible = append(flexible, i)
	}
	if len(planned) > 0 {
		probs := make([]*problem, len(planned))
		for k, i := range planned {
			pr, err := c.problem(r, &jobs[i], fc)
			if err != nil {
				return nil, false, err
			}
			probs[k] = pr
		}
		if err := c.solve(r, jobs, planned, probs, fc); err != nil {
			return nil, false, err
		}
		for k, i := range planned {
			jc := probs[k].verdict(&jobs[i], fc)
			caps[i] = jc
			some = some || jc.capped || jc.reason != scheduler.ReasonUnchanged || jc.note != ""
		}
		flexible = slices.DeleteFunc(flexible, func(i int) bool { return caps[i].reason == scheduler.ReasonDeadline })
	}
	if in.Envelope != nil && len(flexible) > 0 {
		c.envelope(r, jobs, flexible, caps)
		some = true
	}
	return caps, some, nil
}

// forecast is the round's cost per slot, from the slot holding Now.
type forecast struct {
	start time.Time // start of the slot holding Now
	step  time.Duration
	ci    []float64 // g/kWh from that slot to the forecast's end
	now   time.Time
	w     float64
	// cost is built per horizon length on demand (the delay term uses the
	// mean over the job's own window).
	costs map[int][]float64
	// devices and perNode count the cluster's devices per type, down
	// nodes included (installed).
	devices, perNode map[accel.TypeKey]int
}

func newForecast(s carbon.Series, now time.Time, w float64) (*forecast, error) {
	k, ok := s.Index(now)
	if !ok {
		return nil, nil // Now outside the forecast: nothing to plan with
	}
	f := 1.0
	switch s.Unit {
	case carbon.GPerKWh, carbon.KgPerMWh:
	case carbon.LbsPerMWh:
		f = carbon.GPerKWhPerLbsPerMWh
	default:
		return nil, fmt.Errorf("%w: Input.Carbon.Unit %q is not convertible to g/kWh (set it)", scheduler.ErrInvalid, s.Unit)
	}
	ci := make([]float64, len(s.Values)-k)
	for i := range ci {
		ci[i] = s.Values[k+i] * f
	}
	return &forecast{start: s.TimeAt(k), step: s.Step, ci: ci, now: now, w: w, costs: map[int][]float64{}}, nil
}

// series returns the cost series over the first n slots.
func (f *forecast) series(n int) carbon.Series {
	v, ok := f.costs[n]
	if !ok {
		mean := 0.0
		for _, x := range f.ci[:n] {
			mean += x
		}
		mean /= float64(n)
		v = make([]float64, n)
		for t := range v {
			h := (f.step * time.Duration(t)).Hours()
			v[t] = f.w*f.ci[t] + (1-f.w)*mean*(h+1)/24
		}
		f.costs[n] = v
	}
	return carbon.Series{Start: f.start, Step: f.step, Values: v, Unit: carbon.GPerKWh}
}

// maxLevels bounds a job's planning curve: wide jobs plan in steps of
// several devices.
const maxLevels = 16

// problem is one flexible job's planning problem for the round, and its
// plan.
type problem struct {
	ok       bool // false: not shifted (no usable type or curve)
	best     accel.TypeKey
	bestK    int // devices at the best type's largest count
	unit     int // devices per scale step
	minScale int
	curve    carbon.Curve
	work     float64
	n        int // slots the plan may use
	beyond   bool
	dl       time.Time
	plan     carbon.Plan
	err      error // the last schedule's error (an *InfeasibleError, or nil)
}

// problem builds job j's planning problem against fc.
func (c Policy) problem(r *scheduler.Round, j *scheduler.RoundJob, fc *forecast) (*problem, error) {
	pr := &problem{}
	// Best type: the highest speedup at the largest count it may use.
	bestV := -1.0
	for _, t := range j.Types {
		k := min(j.Max, fc.installed(r, t))
		if k < j.Min || k < 1 {
			continue
		}
		v, err := r.Speedup(j.Job.ID, t, fc.packedNodes(r, t, k), k)
		if err != nil {
			return nil, err
		}
		if v > bestV {
			pr.best, pr.bestK, bestV = t, k, v
		}
	}
	if pr.best == "" || bestV <= 0 {
		return pr, nil // cannot run anywhere: the inner policy says why
	}
	pr.unit = (pr.bestK + maxLevels - 1) / maxLevels
	levels := pr.bestK / pr.unit
	sp := make([]float64, levels)
	for l := range sp {
		k := (l + 1) * pr.unit
		v, err := r.Speedup(j.Job.ID, pr.best, fc.packedNodes(r, pr.best, k), k)
		if err != nil {
			return nil, err
		}
		sp[l] = v
	}
	pw, err := c.Power.Power(pr.best)
	if err != nil {
		return nil, err
	}
	watts := pw.ActiveWatts - pw.IdleWatts
	if watts <= 0 {
		watts = pw.ActiveWatts
	}
	curve, err := carbon.CurveFromSpeedup(sp, 1, watts*float64(pr.unit), 0)
	if err != nil {
		return pr, nil // no work at any scale (a zero speedup): not shifted
	}
	pr.curve = curve
	pr.minScale = (j.Min + pr.unit - 1) / pr.unit
	if pr.minScale > curve.MaxScale() {
		return pr, nil
	}
	deadline := c.due(j.Job, fc.step)
	pr.n = int(deadline.Sub(fc.start) / fc.step)
	if pr.n > len(fc.ci) {
		pr.n, pr.beyond = len(fc.ci), true
	}
	headroom := c.Headroom
	if headroom == 0 {
		headroom = 0.25
	}
	pr.work = j.Job.RemainingWork * (1 + headroom)
	pr.dl = fc.start.Add(time.Duration(pr.n) * fc.step)
	pr.ok = true
	return pr, nil
}

// schedule plans pr at fc's costs, at most bound devices in each slot
// (nil: no bound); with a bound that the work does not fit in, it keeps
// the plan it had.
func (pr *problem) schedule(id string, fc *forecast, bound []int, pue float64) error {
	if !pr.ok {
		return nil
	}
	if pr.n < 1 {
		pr.plan, pr.err = carbon.Plan{}, &carbon.InfeasibleError{Need: pr.work}
		return nil
	}
	opts := carbon.ScheduleOptions{MinScale: pr.minScale, PUE: pue, Method: carbon.Greedy}
	if bound != nil {
		opts.SlotMaxScale = make([]int, pr.n)
		for t := range pr.n {
			opts.SlotMaxScale[t] = bound[t] / pr.unit
		}
	}
	plan, err := carbon.Schedule(fc.series(pr.n), pr.curve, pr.work, pr.dl, opts)
	var inf *carbon.InfeasibleError
	switch {
	case err != nil && !errors.As(err, &inf):
		return fmt.Errorf("job %q: carbon plan: %w", id, err)
	case err != nil && bound != nil:
		return nil
	}
	pr.plan, pr.err = plan, err
	return nil
}

// devices is what pr's plan runs in slot t (the lower scale in the
// current slot once its fraction is over), as package provision counts
// it: a late job counts all it may use, one not shifted its minimum.
func (pr *problem) devices(j *scheduler.RoundJob, fc *forecast, t int) int {
	switch {
	case !pr.ok:
		return 0
	case pr.err != nil && !pr.beyond:
		return pr.bestK
	case pr.err != nil:
		return j.Min
	case t >= len(pr.plan.Slots):
		return 0
	}
	sl := pr.plan.Slots[t]
	level := sl.Scale
	if t == 0 && float64(fc.now.Sub(fc.start))/float64(fc.step) >= sl.Fraction {
		level = sl.Lower
	}
	if k := level * pr.unit; k > 0 {
		return min(max(k, j.Min), pr.bestK)
	}
	return 0
}

// solve schedules every problem and, under Joint, re-plans the jobs of
// over-booked slots within their shares (see Policy.Joint).
func (c Policy) solve(r *scheduler.Round, jobs []scheduler.RoundJob, planned []int, probs []*problem, fc *forecast) error {
	for k, pr := range probs {
		if err := pr.schedule(jobs[planned[k]].Job.ID, fc, nil, c.Power.PUE); err != nil {
			return err
		}
	}
	if !c.Joint {
		return nil
	}
	share := fc.overbooked(r, jobs, planned, probs)
	if share == nil {
		return nil
	}
	// All jobs against the same totals (the first plans').
	bounds := make([][]int, len(probs))
	for k, pr := range probs {
		q := share[pr.best]
		if !pr.ok || pr.err != nil || q == nil {
			continue
		}
		j := &jobs[planned[k]]
		b := make([]int, pr.n)
		bound := false
		for t := range b {
			b[t] = pr.bestK
			if t < len(q) && q[t] < 1 {
				// A slot the plan leaves empty stays empty: bounding it
				// changes nothing.
				d := pr.devices(j, fc, t)
				b[t], bound = int(math.Ceil(float64(d)*q[t])), bound || d > 0
			}
		}
		if bound {
			bounds[k] = b
		}
	}
	for k, pr := range probs {
		if bounds[k] != nil {
			if err := pr.schedule(jobs[planned[k]].Job.ID, fc, bounds[k], c.Power.PUE); err != nil {
				return err
			}
		}
	}
	return nil
}

// overbooked returns, per type with an over-booked slot, each slot's
// share: installed devices over the devices the plans (and the running
// jobs that are not planned) ask for there, 1 where they fit; nil when
// every slot fits.
func (f *forecast) overbooked(r *scheduler.Round, jobs []scheduler.RoundJob, planned []int, probs []*problem) map[accel.TypeKey][]float64 {
	horizon := 0
	for _, pr := range probs {
		horizon = max(horizon, pr.n)
	}
	if horizon == 0 {
		return nil
	}
	demand := map[accel.TypeKey][]int{}
	add := func(t accel.TypeKey, s, k int) {
		v := demand[t]
		if v == nil {
			v = make([]int, horizon)
			demand[t] = v
		}
		v[s] += k
	}
	isPlanned := make([]bool, len(jobs))
	for k, i := range planned {
		isPlanned[i] = true
		pr := probs[k]
		for s := range horizon {
			if d := pr.devices(&jobs[i], f, s); d > 0 {
				add(pr.best, s, d)
			}
		}
	}
	for i := range jobs {
		if isPlanned[i] || len(jobs[i].Current) == 0 {
			continue
		}
		for s := range horizon {
			add(jobs[i].CurrentType, s, len(jobs[i].Current))
		}
	}
	var out map[accel.TypeKey][]float64
	for t, v := range demand {
		inst := f.installed(r, t)
		if inst == 0 || slices.Max(v) <= inst {
			continue
		}
		q := make([]float64, len(v))
		for s, d := range v {
			q[s] = min(float64(inst)/float64(max(d, 1)), 1)
		}
		if out == nil {
			out = map[accel.TypeKey][]float64{}
		}
		out[t] = q
	}
	return out
}

// verdict is the job's cap for now from its plan.
func (pr *problem) verdict(j *scheduler.RoundJob, fc *forecast) jobCap {
	var jc jobCap
	if !pr.ok {
		return jc
	}
	if pr.err != nil {
		var inf *carbon.InfeasibleError
		errors.As(pr.err, &inf)
		if pr.beyond {
			jc.note = fmt.Sprintf("forecast ends %s, before the deadline, and too soon to plan: not shifted", pr.dl.UTC().Format(time.RFC3339))
			return jc
		}
		jc.reason = scheduler.ReasonDeadline
		jc.note = fmt.Sprintf("deadline %s cannot be met (%.0f of %.0f device-seconds fit): full goodput",
			j.Job.Deadline.UTC().Format(time.RFC3339), inf.Fits, pr.work)
		return jc
	}
	count := pr.devices(j, fc, 0) // never above bestK: the levels stop there
	if count >= j.Max {
		return jc // the plan wants everything it may have
	}
	jc.capped, jc.count = true, count
	if count == 0 {
		jc.note = fmt.Sprintf("waits for cleaner hours (now %.0f g/kWh; plan finishes by %s)", fc.ci[0], pr.plan.Finish().UTC().Format(time.RFC3339))
	} else {
		jc.note = fmt.Sprintf("carbon plan caps it at %d×%s now (%.0f g/kWh)", count, pr.best, fc.ci[0])
	}
	return jc
}

// due is when job j's plan must finish: its deadline less
// DeadlineMargin, or by default less one forecast step (the current slot
// is partly over) or a tenth of the job's window when that is longer, so
// that jobs planned into the same last clean hours have time to catch up.
func (c Policy) due(j *scheduler.Job, step time.Duration) time.Time {
	margin := c.DeadlineMargin
	if margin == 0 {
		margin = max(step, j.Deadline.Sub(j.Submitted)/10)
	}
	return j.Deadline.Add(-margin)
}

// envelope shares Input.Envelope among the flexible jobs, earliest
// deadline first: each gets one type (the allowed one with the most room
// left; a type the envelope does not list has unbounded room) and at most
// the room left on it.
func (c Policy) envelope(r *scheduler.Round, jobs []scheduler.RoundJob, flexible []int, caps []jobCap) {
	types := r.Cluster().Types()
	room := make([]int, len(types))
	for t, tk := range types {
		room[t] = math.MaxInt
		if n, ok := r.Input().Envelope[tk]; ok {
			room[t] = n
		}
	}
	slices.SortStableFunc(flexible, func(a, b int) int {
		ja, jb := jobs[a].Job, jobs[b].Job
		return cmp.Or(ja.Deadline.Compare(jb.Deadline), cmp.Compare(ja.ID, jb.ID))
	})
	for _, i := range flexible {
		j := &jobs[i]
		jc := &caps[i]
		want := j.Max
		if jc.capped {
			want = jc.count
		}
		if want == 0 {
			continue
		}
		best := -1
		for _, tk := range j.Types {
			t, _ := r.Cluster().TypeIndex(tk)
			if best < 0 || room[t] > room[best] {
				best = t
			}
		}
		got := min(want, room[best])
		if got < j.Min {
			got = 0
		}
		if room[best] != math.MaxInt {
			room[best] -= got
		}
		jc.typ = types[best]
		if got < want {
			jc.capped, jc.count = true, got
			jc.note = joinNote(jc.note, fmt.Sprintf("envelope leaves %d×%s", got, types[best]))
		}
	}
}

// installed is the number of devices of type t in the round's cluster,
// those of nodes that are down (failed, or powered down by a
// provisioner such as package provision's) included: a plan looks ahead,
// when they are back. Counted once per round.
func (f *forecast) installed(r *scheduler.Round, t accel.TypeKey) int {
	if f.devices == nil {
		f.devices, f.perNode = map[accel.TypeKey]int{}, map[accel.TypeKey]int{}
		for _, n := range r.Input().Cluster.Nodes {
			per := map[accel.TypeKey]int{}
			for _, d := range n.Devices {
				per[d.Type]++
			}
			for k, v := range per {
				f.devices[k] += v
				f.perNode[k] = max(f.perNode[k], v)
			}
		}
	}
	return f.devices[t]
}

// packedNodes is the consolidated node count of count devices of type t:
// ceil(count / devices per node), what a consolidating placement achieves.
func (f *forecast) packedNodes(r *scheduler.Round, t accel.TypeKey, count int) int {
	if count <= 0 {
		return 0
	}
	f.installed(r, t)
	d := max(f.perNode[t], 1)
	return (count + d - 1) / d
}

package scheduler

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/goodsched/goodsched/placement"
)

// Goodput is the Pollux/Sia policy: it maximises the weighted power mean
// of the jobs' speedups over their fair-share baselines, charging Pollux's
// restart factor to jobs whose allocation changes, honouring min/max and
// pinning running non-preemptible jobs. On a heterogeneous cluster every
// job gets one (type, count) configuration, as in Sia. The zero value is
// the paper's configuration (p = −1, δ = 30 s, interference avoidance on).
//
// Objective. A job's value on c devices of type t spread over n nodes is
// Speedup(t, n, c) / baseline, where the baseline is its best Speedup at a
// fair share (1/J of the devices, within its min/max), multiplied by the
// restart factor max(age − R·δ, 0)/(age + δ) when its devices change (or,
// for a job preempted earlier, when it resumes; floored at 0.01 for a
// waiting job so that idle devices still go to it). Fitness is the weighted
// power mean (Σ w·(v+0.001)^p / Σ w)^(1/p), p = 0 the geometric mean.
//
// Search. The policy decides a (type, count) per job; node counts follow
// from a node-level model of packing placement (a gang goes on the
// tightest node that fits it, else on the nodes with most free devices;
// jobs shrink and grow in place), so a speedup is always judged on the
// node count placement will give. A marginal-gain greedy (a lazy heap of
// per-device utility gains along each job's concave speedup curve, with a
// look-ahead of one node so node boundaries do not stall it) fills the
// cluster; an exchange local search then moves devices from the jobs that
// lose least to the jobs that gain most, within and across types, until no
// exchange helps. It runs from the current allocation (warm start), from
// the current allocation shrunk to every job's minimum, and, for up to 300
// jobs, from an empty cluster. For up to 48 jobs a final polish moves
// devices between pairs of jobs, changes single jobs and returns jobs to
// what they run now, judging each move on the layout a placement round
// would give from the current allocation (jobs that shrink across nodes
// either shrink in place or leave their fullest nodes for other gangs,
// whichever scores better). Each result is realised with
// the Scheduler's Placer (and, when the Scheduler uses its default
// Placer, also on the engine's own node layout) and the best realised
// fitness wins.
//
// Interference avoidance lets a node host at most one distributed
// (multi-node) job, as in Pollux; turn it off here and in the Placer
// together.
//
// Goodput is a plain value: safe for concurrent use.
type Goodput struct {
	// Exponent is the power-mean exponent p (≤ 1); 0 = −1, the harmonic
	// mean. Smaller is fairer (−10 is close to max-min).
	Exponent float64
	// Geometric uses p = 0, the geometric mean, instead of Exponent.
	Geometric bool
	// RestartDelay is δ in the restart factor max(age − R·δ, 0)/(age + δ);
	// 0 = 30 s.
	RestartDelay time.Duration
	// AllowInterference lifts the default rule that a node hosts at most
	// one distributed (multi-node) job.
	AllowInterference bool
	// MaxPasses bounds the exchange local search per start; 0 = 4,
	// negative is an error.
	MaxPasses int
}

var _ Policy = Goodput{}

// Allocate implements Policy.
func (g Goodput) Allocate(ctx context.Context, in Input) ([]Target, error) {
	x, err := analyze(&in)
	if err != nil {
		return nil, err
	}
	tg, _, err := g.allocate(ctx, x, RoundPlacer{}, false)
	return tg, err
}

// allocate searches, then realises the candidate allocations (from the
// warm, deflated and cold starts) with pl and, when ownLayout allows, on
// the engine's own node layout, and returns the one whose placement has
// the best fitness, with that placement.
func (g Goodput) allocate(ctx context.Context, x *instance, pl Placer, ownLayout bool) ([]Target, *PlaceResult, error) {
	e, states, err := g.solve(ctx, x)
	if err != nil {
		return nil, nil, err
	}
	if pl == nil {
		return e.targets(states[0]), nil, nil
	}
	current := x.currentAssignments()
	var best []Target
	var bestRes PlaceResult
	bestFit := math.Inf(-1)
	seen := make(map[string]bool)
	for _, s := range states {
		tg := e.targets(s)
		key := fmt.Sprint(s.typ, s.cnt)
		if seen[key] {
			continue
		}
		seen[key] = true
		res, err := x.place(ctx, pl, current, x.toPlace(tg))
		if err != nil {
			return nil, nil, placeError(err)
		}
		if f := e.realizedFitness(res); f > bestFit*(1+1e-12) || best == nil {
			best, bestRes, bestFit = tg, res, f
		}
		if ownLayout {
			res := e.layoutResult(s)
			if f := e.realizedFitness(res); f > bestFit*(1+1e-12) {
				best, bestRes, bestFit = tg, res, f
			}
		}
	}
	return best, &bestRes, e.err
}

// place realises targets with pl on the instance's cluster; a
// Scheduler's RoundPlacer uses the cluster index x already holds.
func (x *instance) place(ctx context.Context, pl Placer, current []placement.Assignment, targets []Target) (PlaceResult, error) {
	if rp, ok := pl.(RoundPlacer); ok && rp.cache != nil {
		return rp.placeOn(ctx, x.clusterIndex, &x.in.Cluster, current, targets)
	}
	return pl.Place(ctx, x.in.Cluster, current, targets)
}

// Fitness returns the policy's objective, the weighted power mean of the
// jobs' values, for a plan applied to in (using each decision's type,
// count and node count; a decision that changes a running job's devices
// pays the restart factor). Use it to compare policies on one input.
func (g Goodput) Fitness(in Input, plan Plan) (float64, error) {
	x, err := analyze(&in)
	if err != nil {
		return 0, err
	}
	e, err := g.newEngine(x)
	if err != nil {
		return 0, err
	}
	vals := make([]float64, len(e.jobs))
	for k := range e.jobs {
		j := &e.jobs[k]
		d, ok := plan.Decision(j.info.job.ID)
		if !ok || d.To == 0 {
			continue
		}
		t, ok := x.typeIdx[d.Type]
		if !ok {
			return 0, fmt.Errorf("%w: plan: job %q: type %q is not in the cluster", ErrInvalid, d.Job, d.Type)
		}
		v, err := x.speedup(j.info, t, max(d.Nodes, 1), d.To)
		if err != nil {
			return 0, err
		}
		v /= j.base
		if j.penal && d.Action != Keep {
			v *= j.rf
		}
		vals[k] = v
	}
	return e.fitness(vals), nil
}

// solve runs the search and returns the engine and the best state.
func (g Goodput) solve(ctx context.Context, x *instance) (*engine, []*state, error) {
	e, err := g.newEngine(x)
	if err != nil {
		return nil, nil, err
	}
	passes := g.MaxPasses
	if passes <= 0 {
		passes = 4
	}
	// The current allocation, on the bins the jobs hold.
	cold := e.emptyState()
	warm := e.emptyState()
	for i := range e.jobs {
		j := &e.jobs[i]
		p := e.cur[i]
		if j.pinned {
			e.assign(cold, i, j.info.curType, j.info.curCount, p)
			e.assign(warm, i, j.info.curType, j.info.curCount, p)
			continue
		}
		if !e.curOK[i] {
			continue // not running, on a type it may not use, or on a failed device: re-place
		}
		e.assign(warm, i, j.t0, j.c0, p)
		c := min(max(j.c0, j.min), e.maxOn(j, j.t0))
		if j.rigid {
			c = j.min
		}
		if c < j.min || (c != j.c0 && !e.apply(warm, i, j.t0, c)) {
			e.release(warm, i)
		}
	}
	// Deflated: every running job shrunk in place to its minimum, so the
	// greedy redistributes the rest from the jobs' current nodes.
	deflated := warm.clone()
	for i := range e.jobs {
		if j := &e.jobs[i]; !j.pinned && deflated.cnt[i] > j.min {
			e.apply(deflated, i, deflated.typ[i], j.min)
		}
	}
	states := []*state{warm, deflated}
	if len(e.jobs) <= coldStartJobs {
		states = append(states, cold)
	}
	for _, s := range states {
		if err := e.fill(ctx, s); err != nil {
			return nil, nil, err
		}
		if err := e.improve(ctx, s, passes); err != nil {
			return nil, nil, err
		}
	}
	// Best engine objective first; ties keep the warm start.
	slices.SortStableFunc(states, func(a, b *state) int {
		oa, ob := e.objective(a), e.objective(b)
		if math.Abs(oa-ob) <= 1e-12*(1+math.Abs(oa)) {
			return 0
		}
		return cmp.Compare(ob, oa)
	})
	if len(e.jobs) <= polishJobs && e.contended(states[0]) {
		// One more candidate: the best state polished on replayed placements.
		states = append(states, e.polish(states[0]))
	}
	return e, states, e.err
}

// contended reports whether some type has less than one whole node (its
// largest bin) free in s. When every type still has a whole free node, no
// job's layout is squeezed by another's and the polish on replayed
// placements has nothing to resolve.
func (e *engine) contended(s *state) bool {
	for t, free := range s.free {
		if free < e.lay.maxCap[t] {
			return true
		}
	}
	return false
}

// coldStartJobs is the most jobs for which the search also starts from an
// empty cluster (beyond it the warm starts win and time matters more).
const coldStartJobs = 300

// realizedFitness is the fitness of a placement result: each job's value
// on the devices it gets (nodes counted), with the restart factor when
// its devices changed.
func (e *engine) realizedFitness(res PlaceResult) float64 {
	got := make([][]string, len(e.x.jobs)) // by instance index
	for _, a := range res.Assignments {
		if i, ok := e.x.byID[a.Job]; ok {
			got[i] = a.Devices
		}
	}
	vals := make([]float64, len(e.jobs))
	for i := range e.jobs {
		j := &e.jobs[i]
		devs := got[j.idx]
		if len(devs) == 0 {
			continue
		}
		v, err := e.x.speedup(j.info, e.x.devType[devs[0]], e.x.gangNodes(j.info, devs), len(devs))
		if err != nil && e.err == nil {
			e.err = err
		}
		v /= j.base
		if j.penal && !sameDevices(devs, j.info.curDevs) {
			v *= j.rf
		}
		vals[i] = v
	}
	return e.fitness(vals)
}

func sumSlots(p []slot) int {
	n := 0
	for _, sl := range p {
		n += sl.k
	}
	return n
}

// targets turns a state into targets with notes, in job-ID order.
func (e *engine) targets(s *state) []Target {
	out := make([]Target, 0, len(e.jobs))
	for i := range e.jobs {
		j := &e.jobs[i]
		id := j.info.job.ID
		t, c := s.typ[i], s.cnt[i]
		tg := Target{Job: id}
		if c > 0 {
			tg.Type, tg.Count = e.x.types[t], c
		}
		switch {
		case j.pinned:
			tg.Reason = ReasonPinned
			tg.Note = "non-preemptible"
		case c > 0 && t == j.t0 && c == j.c0:
			v := e.norm(j, t, len(s.place[i]), c)
			tg.Reason = ReasonUnchanged
			tg.Note = fmt.Sprintf("speedup %.2f (%.2f× its fair share)", v*j.base, v)
		case c > 0:
			tg.Reason = ReasonObjective
			before := 0.0
			if j.t0 >= 0 {
				before = e.norm(j, j.t0, j.info.curNodes, j.c0) * j.base
			}
			tg.Note = fmt.Sprintf("speedup %.2f→%.2f", before, e.norm(j, t, len(s.place[i]), c)*j.base)
			if j.penal {
				tg.Note += fmt.Sprintf(", restart factor %.2f", j.rf)
			}
		default:
			tg.Reason, tg.Note = e.whyQueued(s, i)
		}
		out = append(out, tg)
	}
	return out
}

// whyQueued explains why job i got nothing.
func (e *engine) whyQueued(s *state, i int) (Reason, string) {
	j := &e.jobs[i]
	largest := 0
	for _, t := range j.allowed {
		largest = max(largest, e.x.cap[t])
	}
	if largest < j.min {
		return ReasonNoCapacity, fmt.Sprintf("needs %d devices, its largest allowed type has %d", j.min, largest)
	}
	for _, t := range j.allowed {
		if s.free[t] >= j.min {
			if _, ok := e.probe(s, i, t, j.min); !ok {
				return ReasonInterference, fmt.Sprintf("%d free %s devices, but not on nodes free of distributed jobs", s.free[t], e.x.types[t])
			}
			return ReasonRestartCost, fmt.Sprintf("starting on %s would not pay for the restart (factor %.2f)", e.x.types[t], j.rf)
		}
	}
	names := make([]string, 0, len(j.allowed))
	for _, t := range j.allowed {
		names = append(names, fmt.Sprintf("%d %s", s.free[t], e.x.types[t]))
	}
	slices.Sort(names)
	if j.t0 >= 0 {
		return ReasonObjective, fmt.Sprintf("devices serve the fairness objective better elsewhere (free: %v)", names)
	}
	return ReasonNoCapacity, fmt.Sprintf("needs %d devices; free: %v", j.min, names)
}

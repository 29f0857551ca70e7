package scheduler

import (
	"context"
	"fmt"
	"slices"
	"time"
)

// Goodput is the Pollux/Sia policy: it maximises the weighted power mean
// of the jobs' speedups over their fair-share baselines, charging Pollux's
// restart factor to jobs whose allocation changes, honouring min/max and
// pinning running non-preemptible jobs. On a heterogeneous cluster every
// job gets one (type, count) configuration, as in Sia. The zero value is
// the paper's configuration (p = −1, δ = 30 s, interference avoidance on).
//
// Objective. A job's value on (type, count) is
// Speedup(type, ceil(count/devices per node), count) / baseline, where the
// baseline is its best Speedup at a fair share (1/J of the devices, within
// its min/max), multiplied by the restart factor max(age − R·δ, 0)/(age + δ)
// when the allocation differs from the one it runs (or, for a job
// preempted earlier, when it resumes). Fitness is the weighted power mean
// (Σ w·(v+0.001)^p / Σ w)^(1/p), p = 0 the geometric mean.
//
// Search. A marginal-gain greedy (a heap of per-device utility gains over
// each job's concave speedup curve, with a look-ahead of one node so node
// boundaries do not stall it) fills the cluster, from the current
// allocation (warm start) and from empty; an exchange local search then
// moves devices from the jobs that lose least to the jobs that gain most,
// within and across types, until no exchange helps. The better of the two
// starts wins. Node counts are not searched: they follow from a
// consolidated packing, which Packer and placement realise.
//
// Interference avoidance keeps the distributed jobs of each type on
// distinct nodes: Σ ceil(count/devices per node) over multi-node jobs is at
// most the type's node count.
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
	// MaxPasses bounds the exchange local search; 0 = 8.
	MaxPasses int
}

var _ Policy = Goodput{}

// Allocate implements Policy.
func (g Goodput) Allocate(ctx context.Context, in Input) ([]Target, error) {
	x, err := analyze(&in)
	if err != nil {
		return nil, err
	}
	return g.allocate(ctx, x)
}

func (g Goodput) allocate(ctx context.Context, x *instance) ([]Target, error) {
	e, s, err := g.solve(ctx, x)
	if err != nil {
		return nil, err
	}
	return e.targets(s), nil
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
func (g Goodput) solve(ctx context.Context, x *instance) (*engine, *state, error) {
	e, err := g.newEngine(x)
	if err != nil {
		return nil, nil, err
	}
	passes := g.MaxPasses
	if passes <= 0 {
		passes = 8
	}
	cold := e.emptyState()
	for i := range e.jobs {
		if j := &e.jobs[i]; j.pinned {
			e.set(cold, i, j.info.curType, j.info.curCount)
		}
	}
	warm := cold.clone()
	for i := range e.jobs {
		j := &e.jobs[i]
		if j.pinned || j.t0 < 0 {
			continue
		}
		c := min(max(j.c0, j.min), e.maxOn(j, j.t0))
		if j.rigid {
			c = j.min
		}
		if c > 0 && e.fits(warm, i, j.t0, c) {
			e.set(warm, i, j.t0, c)
		}
	}
	var best *state
	bestObj := 0.0
	for _, s := range []*state{warm, cold} {
		if err := e.fill(ctx, s); err != nil {
			return nil, nil, err
		}
		if err := e.improve(ctx, s, passes); err != nil {
			return nil, nil, err
		}
		if o := e.objective(s); best == nil || o > bestObj+1e-12*(1+max(o, -o)) {
			best, bestObj = s, o
		}
	}
	return e, best, e.err
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
			tg.Reason = ReasonUnchanged
			tg.Note = fmt.Sprintf("speedup %.2f (%.2f× its fair share)", e.norm(j, t, c)*j.base, e.norm(j, t, c))
		case c > 0:
			tg.Reason = ReasonObjective
			before := 0.0
			if j.t0 >= 0 {
				before = e.norm(j, j.t0, j.c0) * j.base
			}
			tg.Note = fmt.Sprintf("speedup %.2f→%.2f", before, e.norm(j, t, c)*j.base)
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
			if e.distNodes(t, j.min) > s.distFree[t] {
				return ReasonInterference, fmt.Sprintf("%d free %s devices, but no node free of distributed jobs", s.free[t], e.x.types[t])
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

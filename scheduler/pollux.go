package scheduler

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/goodsched/goodsched/goodput"
	"github.com/goodsched/goodsched/placement"
	"github.com/goodsched/goodsched/scheduler/pollux"
)

// Pollux is the goodput policy: Pollux's objective, with Sia's one
// (type, count) configuration per job on a heterogeneous cluster. It
// maximises the weighted power mean of the jobs' speedups over their
// fair-share baselines, charging Pollux's restart factor to jobs whose
// allocation changes, honouring min/max and pinning running
// non-preemptible jobs. The zero value is the paper's configuration
// (p = −1, δ = 30 s); interference avoidance follows
// Config.AllowInterference.
//
// Objective. A job's value on c devices of type t spread over n nodes is
// Speedup(t, n, c) / baseline, where the baseline is its best Speedup at a
// fair share (1/J of the devices, within its min/max), multiplied by the
// restart factor max(age − R·δ, 0)/(age + δ) when its devices change (or,
// for a job preempted earlier, when it resumes; floored at 0.01 for a
// waiting job so that idle devices still go to it). Fitness is the weighted
// power mean (Σ w·(v+0.001)^p / Σ w)^(1/p), p = 0 the geometric mean.
//
// Search (package scheduler/pollux): a marginal-gain greedy on a
// node-level model of packing placement, an exchange local search within
// and across types, from the current allocation, from it shrunk to every
// job's minimum and, for up to 300 jobs, from an empty cluster; for up to
// 48 jobs a polish on replayed placements. Each candidate is realised with
// Round.Place (and, when the Round takes offers, also on the engine's own
// node layout) and the best realised fitness wins.
//
// Queues. With Input.Queues, the entitlements bound the search
// (pollux.Problem.Caps: the warm start sheds what a queue holds beyond
// them, no move grows a queue past them) and no queue is pushed below
// min(Nominal, demand) by another's growth (pollux.Problem.Floors).
//
// Pollux is a plain value: safe for concurrent use.
type Pollux struct {
	// Exponent is the power-mean exponent p (≤ 1); 0 = −1, the harmonic
	// mean. Smaller is fairer (−10 is close to max-min).
	Exponent float64
	// Geometric uses p = 0, the geometric mean, instead of Exponent.
	Geometric bool
	// RestartDelay is δ in the restart factor max(age − R·δ, 0)/(age + δ);
	// 0 = 30 s.
	RestartDelay time.Duration
	// MaxPasses bounds the exchange local search per start; 0 = 4,
	// negative is an error. A pass after the first costs about as much
	// as the first but accepts far fewer exchanges, so fewer passes trade
	// plan quality for time on large rounds: on examples/benchmark's
	// rounds of 2,000 to 50,000 jobs, one pass took 43–73% of the time of
	// four (best of four rounds each), at 0.1–1.3% lower fitness.
	MaxPasses int
	// Parallel searches the starts on two goroutines when more than one
	// processor is available (GOMAXPROCS): the same plan in less wall
	// time on large rounds (on two cores 29-41% less from 2,000 to
	// 50,000 jobs, peak memory within 1%), slightly more on small ones
	// (3-9% more at 160 jobs on 64 GPUs). The two searches share the jobs
	// and the speedups they evaluate. The goroutine ends with the round;
	// without Parallel the decision path starts none. Speedups are called
	// from both goroutines, which goodput.Speedup allows.
	Parallel bool
}

var _ Policy = Pollux{}

// Validate checks the policy's settings (New and Allocate call it).
func (g Pollux) Validate() error {
	if p := g.Exponent; math.IsNaN(p) || math.IsInf(p, 0) || p > 1 {
		return fmt.Errorf("%w: Pollux.Exponent %v: must be finite and at most 1", ErrInvalid, g.Exponent)
	}
	if g.RestartDelay < 0 {
		return fmt.Errorf("%w: Pollux.RestartDelay %v is negative", ErrInvalid, g.RestartDelay)
	}
	if g.MaxPasses < 0 {
		return fmt.Errorf("%w: Pollux.MaxPasses %d is negative", ErrInvalid, g.MaxPasses)
	}
	return nil
}

// Allocate implements Policy: it searches, realises every candidate with
// r.Place (and offers the engine's own layout when that is better) and
// returns the targets whose placement has the best fitness.
func (g Pollux) Allocate(ctx context.Context, r *Round) ([]Target, error) {
	e, order, err := g.search(r)
	if err != nil {
		return nil, err
	}
	passes := g.MaxPasses
	if passes == 0 {
		passes = 4
	}
	sols, err := e.Solve(ctx, passes)
	if err != nil {
		return nil, err
	}
	var best []Target
	var bestSol *pollux.Solution
	var bestOwn []placement.Assignment
	bestFit := math.Inf(-1)
	for _, sol := range sols {
		tg := targets(r, order, sol)
		res, err := r.Place(ctx, tg)
		if err != nil {
			return nil, err
		}
		f, err := e.Realized(res.Assignments)
		if err != nil {
			return nil, err
		}
		if f > bestFit*(1+1e-12) || best == nil {
			best, bestSol, bestOwn, bestFit = tg, sol, nil, f
		}
		if r.TakesOffers() {
			if own := e.Layout(sol); own != nil {
				if f, err := e.Realized(own); err == nil && f > bestFit*(1+1e-12) {
					best, bestSol, bestOwn, bestFit = tg, sol, own, f
				}
			}
		}
	}
	if bestOwn != nil {
		if err := r.Offer(best, placement.PlaceResult{Assignments: bestOwn}); err != nil {
			return nil, err
		}
	}
	explain(e, bestSol, best)
	return best, nil
}

// Fitness returns the policy's objective, the weighted power mean of the
// jobs' values, for a plan applied to in (using each decision's type,
// count and node count; a decision that changes a running job's devices
// pays the restart factor). Use it to compare policies on one input.
func (g Pollux) Fitness(in Input, plan Plan) (float64, error) {
	r, err := NewRound(in)
	if err != nil {
		return 0, err
	}
	e, order, err := g.search(r)
	if err != nil {
		return 0, err
	}
	allocs := make([]pollux.Alloc, len(order))
	for k, i := range order {
		d, ok := plan.Decision(r.jobs[i].Job.ID)
		if !ok || d.To == 0 {
			continue
		}
		t, ok := r.cluster.TypeIndex(d.Type)
		if !ok {
			return 0, fmt.Errorf("%w: plan: job %q: type %q is not in the cluster", ErrInvalid, d.Job, d.Type)
		}
		allocs[k] = pollux.Alloc{Type: t, Nodes: d.Nodes, Count: d.To, Changed: d.Action != placement.Keep}
	}
	return e.Fitness(allocs)
}

// memoKey is the key of the Pollux engine's speedup memo in Round.Carry.
type memoKey struct{}

// search builds the engine's problem for round r: its jobs sorted by ID
// (order[k] is the position in r.jobs of the engine's job k).
func (g Pollux) search(r *Round) (*pollux.Search, []int, error) {
	if err := g.Validate(); err != nil {
		return nil, nil, err
	}
	p := pollux.Problem{Cluster: &r.in.Cluster, Index: r.cluster, Exponent: g.Exponent, Geometric: g.Geometric,
		RestartDelay: g.RestartDelay, AllowInterference: r.AllowInterference(), Parallel: g.Parallel}
	p.Memo, _ = r.Carry(memoKey{}, func() any { return new(pollux.Memo) }).(*pollux.Memo)
	if p.Exponent == 0 {
		p.Exponent = -1
	}
	if p.RestartDelay == 0 {
		p.RestartDelay = 30 * time.Second
	}
	order := r.byIDOrder()
	p.Jobs = make([]pollux.Job, len(order))
	for k, i := range order {
		j := &r.jobs[i]
		p.Jobs[k] = pollux.Job{ID: j.Job.ID, Weight: j.Weight, Types: j.allowed, Min: j.Min, Max: j.Max, Rigid: j.rigid,
			Pinned: j.Pinned, Current: j.Current, CurrentType: j.curType, CurrentNodes: j.CurrentNodes,
			Age: j.Age, Restarts: j.Job.Restarts,
			Speedup: func(t, nodes, count int) (float64, error) { return r.evalSpeedup(j, t, nodes, count) }}
		if c, ok := j.Job.Speedup.(*goodput.Curve); ok && c != nil {
			p.Jobs[k].Reuse = c // immutable: its speedups are the same in every round
		}
		switch sp := j.Job.Speedup.(type) {
		case nil:
			p.Jobs[k].NodeBound = 1 // linear in the count
		case goodput.NodeBounder:
			p.Jobs[k].NodeBound = max(sp.NodeBound(), 0)
		}
		if j.curCount == 0 {
			p.Jobs[k].Current, p.Jobs[k].CurrentType = nil, -1
		}
		if q := r.Entitlements(); q != nil {
			p.Jobs[k].Group = q.LeafOf(i)
		}
	}
	if sp := r.in.Speeds; sp != nil {
		p.GangSlowdown = func(k int, devs []string) float64 { return gangSlowdown(sp, r.cluster, p.Jobs[k].ID, devs) }
	}
	if q := r.Entitlements(); q != nil {
		// The queues' entitlements bound the search (Input.Queues).
		p.Caps, p.Floors = q.Caps(), q.Floors()
	}
	e, err := pollux.New(p)
	return e, order, err
}

// Engine returns the goodput engine (package scheduler/pollux) built on
// round r with g's objective, its job k being r's k-th job in ID order,
// and a function that turns one of its solutions into targets in that
// order, with the engine's reasons and notes when explain is set. A
// search of its own over Pollux's objective (the genetic reference,
// package scheduler/genetic) starts from it.
func (g Pollux) Engine(r *Round) (*pollux.Search, func(sol *pollux.Solution, explain bool) []Target, error) {
	e, order, err := g.search(r)
	if err != nil {
		return nil, nil, err
	}
	return e, func(sol *pollux.Solution, explained bool) []Target {
		tg := targets(r, order, sol)
		if explained {
			explain(e, sol, tg)
		}
		return tg
	}, nil
}

// targets turns an engine solution into targets, in job-ID order,
// without reasons and notes (explain adds them).
func targets(r *Round, order []int, sol *pollux.Solution) []Target {
	out := make([]Target, len(order))
	for k, i := range order {
		out[k].Job = r.jobs[i].Job.ID
		if t, c, _ := sol.Alloc(k); c > 0 {
			out[k].Type, out[k].Count = r.types[t], c
		}
	}
	return out
}

// explain sets the reason and note of every target of out, made by
// targets from sol (Search.Explain): Allocate places several candidates
// and explains the one it returns.
func explain(e *pollux.Search, sol *pollux.Solution, out []Target) {
	for k := range out {
		why, note := e.Explain(sol, k)
		out[k].Reason, out[k].Note = whyReasons[why], note
	}
}

// whyReasons maps the engine's explanations onto Reasons.
var whyReasons = [...]Reason{pollux.WhyPinned: ReasonPinned, pollux.WhyUnchanged: ReasonUnchanged,
	pollux.WhyObjective: ReasonObjective, pollux.WhyNoCapacity: ReasonNoCapacity,
	pollux.WhyInterference: ReasonInterference, pollux.WhyRestartCost: ReasonRestartCost}

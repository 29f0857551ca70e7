package gavel

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"time"
)

// Settings tunes a solve. The zero value (or a nil *Settings) gives the
// documented defaults. It is a plain value.
type Settings struct {
	// Tolerance is the relative gap |Objective−Bound| / |Bound| at which a
	// solve stops (0 = 1e-7). Finish-time fairness bisects to it too.
	Tolerance float64
	// MaxIterations bounds the pricing rounds of one column-generation
	// run (0 = 2000). A solve that hits it still returns its feasible
	// allocation, with the gap it reached.
	MaxIterations int
	// Partitions is POP's k: jobs are split at random into k groups, each
	// solved with 1/k of every type, and the union (with the groups' mean
	// prices) starts the solve of the whole problem (0 or 1 = off). Off is
	// the better default here: the number of pricing rounds does not grow
	// with the number of jobs, so groups only add rounds; see
	// BenchmarkMaxMinPOP.
	Partitions int
	// Seed seeds POP's random split (the same seed gives the same split).
	Seed uint64
	// MaxLevels bounds the water-filling levels of MaxMinFairness with
	// WaterFilling set (0 = no bound: each level freezes at least one job,
	// so there are at most as many levels as jobs, and as many as the
	// leximin allocation has distinct shares); the last level freezes
	// every job left.
	MaxLevels int
}

func (s *Settings) orDefault() Settings {
	var o Settings
	if s != nil {
		o = *s
	}
	if !(o.Tolerance > 0) {
		o.Tolerance = 1e-7
	}
	if o.MaxIterations <= 0 {
		o.MaxIterations = 2000
	}
	if o.MaxLevels <= 0 {
		o.MaxLevels = math.MaxInt
	}
	return o
}

// Solution is an optimal or near-optimal allocation with a proven bound.
type Solution struct {
	// X[m][j] is the fraction of time job m spends on type j.
	X [][]float64
	// Objective is the policy's objective achieved by X: the minimum
	// normalised share (max-min), the largest ρ (finish-time fairness), the
	// makespan in seconds (min makespan), or throughput per unit price
	// (cost).
	Objective float64
	// Bound is a proven bound on the optimum from duality: no allocation
	// does better (an upper bound when maximising, lower when minimising).
	Bound float64
	// Gap is |Objective − Bound| / max(|Objective|, |Bound|).
	Gap float64
	// Iterations counts pricing rounds over all column-generation runs.
	Iterations int
	// Levels is the number of water-filling levels solved (1 otherwise).
	Levels int
	// Partitions is the number of POP groups used (1 = none).
	Partitions int
}

// Objective is one of Gavel's policies: MaxMinFairness,
// FinishTimeFairness, MinMakespan or MaxThroughputPerCost. They are plain
// values, safe for concurrent use; the set is closed (the interface has an
// unexported method).
type Objective interface {
	// Name is a short identifier, such as "max-min".
	Name() string
	solve(ctx context.Context, p *Problem, s Settings) (Solution, error)
}

// Solve computes the allocation that optimises obj on p. It returns an
// error wrapping ErrInvalid, ErrZeroRow, ErrNoDevices or ErrInfeasible for
// bad input, or the context's error. Solve is safe for concurrent use: it
// keeps no state between calls.
func Solve(ctx context.Context, p Problem, obj Objective, s *Settings) (Solution, error) {
	if obj == nil {
		return Solution{}, fmt.Errorf("%w: nil Objective", ErrInvalid)
	}
	return obj.solve(ctx, &p, s.orDefault())
}

func gapOf(obj, bound float64) float64 {
	d := math.Max(math.Abs(obj), math.Abs(bound))
	if d == 0 {
		return 0
	}
	return math.Abs(obj-bound) / d
}

// finishX clips a combined allocation into the feasible region (rounding
// noise only) and returns it as rows.
func finishX(in *instance, capac []float64, x []float64) [][]float64 {
	n, k := in.n, in.k
	use := make([]float64, k)
	for m := range n {
		var s float64
		for j := range k {
			v := x[m*k+j]
			if v < 0 || in.a[m*k+j] == 0 {
				v = 0
			}
			x[m*k+j] = v
			s += v
		}
		if s > 1 {
			for j := range k {
				x[m*k+j] /= s
			}
		}
		for j := range k {
			use[j] += in.scale[m] * x[m*k+j]
		}
	}
	for j := range k {
		if use[j] > capac[j] {
			f := capac[j] / use[j]
			for m := range n {
				x[m*k+j] *= f
			}
		}
	}
	rows := make([][]float64, n)
	for m := range n {
		rows[m] = x[m*k : m*k+k : m*k+k]
	}
	return rows
}

// level returns min over jobs with d > 0 of (thr − f)/d for x.
func level(in *instance, x []float64, f, d []float64) float64 {
	lv := math.Inf(1)
	for m := range in.n {
		if d[m] <= 0 {
			continue
		}
		var t float64
		for j := range in.k {
			t += in.a[m*in.k+j] * x[m*in.k+j]
		}
		fm := 0.0
		if f != nil {
			fm = f[m]
		}
		lv = min(lv, (t-fm)/d[m])
	}
	return max(lv, 0)
}

// equalX is the equal-share allocation as a flat n*k matrix.
func equalX(in *instance) []float64 {
	x := make([]float64, in.n*in.k)
	for m := range in.n {
		for j := range in.k {
			if in.a[m*in.k+j] > 0 {
				x[m*in.k+j] = in.eqX[j]
			}
		}
	}
	return x
}

// MaxMinFairness maximises the minimum over jobs of Gavel's normalised
// share (max_min_fairness_perf, the heterogeneity-aware LAS):
//
//	Scale[m] · Σ_j T[m][j]·X[m][j] / (Weight[m] · proportional throughput_m)
//
// where the proportional throughput is the job's throughput with the
// fraction n_j/N of every type (Problem.ProportionalThroughput). The
// scale factor makes it a share of device-time: a job on 1 device gets
// Scale times the time fraction of an equally fast job on Scale devices.
// Objective is that minimum (Problem.NormalizedShares).
type MaxMinFairness struct {
	// HeterogeneityBlind solves with every usable throughput set to 1
	// (Gavel's max_min_fairness); Objective is then measured on the blind
	// problem. Use Problem.NormalizedShares to measure X on the real one.
	HeterogeneityBlind bool
	// WaterFilling, after the minimum is maximised, freezes the jobs that
	// cannot do better and raises the others in turn until every job is
	// frozen: the leximin allocation (multi-level max-min, Gavel's
	// max_min_fairness_water_filling without its entity weights).
	// Objective is X's smallest share (the first level) and Bound the
	// first level's bound; Settings.MaxLevels can cap the levels. It costs
	// far more than one level: each level runs column generation until
	// its bottleneck jobs are proven (random heterogeneous instances on 2
	// cores: 200 jobs × 4 types ≈ 1 s, 1,000 jobs ≈ 6 s).
	WaterFilling bool
	// EqualTimeShares is goodsched's earlier variant: no scale factor, and
	// each job normalised by its equal-share throughput
	// (Problem.EqualShareThroughput), so every job is due the same time
	// fraction whatever its gang size and a 4-device job gets 4 times the
	// device-time of a 1-device job. Objective is then the minimum of
	// Problem.EqualTimeShares.
	EqualTimeShares bool
}

// Name implements Objective.
func (o MaxMinFairness) Name() string {
	n := "max-min"
	if o.HeterogeneityBlind {
		n += "-blind"
	}
	if o.WaterFilling {
		n += "-water-filling"
	}
	if o.EqualTimeShares {
		n += "-equal-time"
	}
	return n
}

// demands returns each job's throughput per unit of the objective's level.
func (o MaxMinFairness) demands(in *instance) []float64 {
	d := make([]float64, in.n)
	for m := range in.n {
		if o.EqualTimeShares {
			d[m] = in.w[m] * in.eq[m]
		} else {
			d[m] = in.w[m] * in.prop[m] / in.scale[m]
		}
	}
	return d
}

func (o MaxMinFairness) solve(ctx context.Context, p *Problem, s Settings) (Solution, error) {
	q := *p
	if o.HeterogeneityBlind {
		q = p.Blind()
	}
	in, err := q.validate()
	if err != nil {
		return Solution{}, err
	}
	d := o.demands(in)
	sol, _, err := solveLevel(ctx, in, d, s)
	if err != nil || !o.WaterFilling {
		return sol, err
	}
	return waterFill(ctx, in, d, sol, s)
}

// solveLevel maximises θ with demands θ·d, using POP for large inputs.
func solveLevel(ctx context.Context, in *instance, d []float64, s Settings) (Solution, []float64, error) {
	// Scale the demands so that the equal-share allocation sits at level 1:
	// the master's tolerances are relative to objectives of order 1.
	xeq := equalX(in)
	unit := level(in, xeq, nil, d)
	if !(unit > 0) || math.IsInf(unit, 0) {
		unit = 1
	}
	d = slices.Clone(d)
	for m := range d {
		d[m] *= unit
	}
	f := make([]float64, in.n)
	e := newEngine(in.n, in.k, in.a, in.scale, in.capac, nil, f, d, true)
	init := []column{e.explicitColumn(xeq, level(in, xeq, nil, d))}
	parts := min(max(s.Partitions, 1), in.n)
	iters := 0
	var seeds [][]float64
	if parts > 1 {
		xp, lam, it, err := pop(ctx, in, d, parts, s)
		if err != nil {
			return Solution{}, nil, err
		}
		iters += it
		init = append(init, e.explicitColumn(xp, level(in, xp, nil, d)))
		seeds = append(seeds, lam)
		// Put the better starting column first: the master starts from it.
		if init[1].obj > init[0].obj {
			init[0], init[1] = init[1], init[0]
		}
	}
	res, err := e.runSeeded(ctx, init, seeds, cgOptions{tol: s.Tolerance, maxIter: s.MaxIterations,
		stopAbove: math.Inf(1), stopBelow: math.Inf(-1)})
	if err != nil {
		return Solution{}, nil, err
	}
	iters += res.iters
	x := finishX(in, in.capac, res.x)
	obj := level(in, res.x, nil, d)
	return Solution{X: x, Objective: obj * unit, Bound: res.ub * unit, Gap: gapOf(obj, res.ub),
		Iterations: iters, Levels: 1, Partitions: parts}, res.lambda, nil
}

// runSeeded prices the seed price vectors first (adding their columns and
// bounds), then runs column generation.
func (e *engine) runSeeded(ctx context.Context, init []column, seeds [][]float64, o cgOptions) (cgResult, error) {
	for _, lam := range seeds {
		c, _ := e.price(lam)
		init = append(init, c)
	}
	return e.run(ctx, init, o)
}

// pop solves k random groups of jobs, each with 1/k of every type, and
// returns the union of their allocations and the mean group price scaled to
// the whole problem.
func pop(ctx context.Context, in *instance, d []float64, parts int, s Settings) ([]float64, []float64, int, error) {
	rng := rand.New(rand.NewPCG(s.Seed, 0x9e3779b97f4a7c15))
	perm := rng.Perm(in.n)
	k := in.k
	x := make([]float64, in.n*k)
	lam := make([]float64, k)
	capac := make([]float64, k)
	for j := range k {
		capac[j] = in.capac[j] / float64(parts)
	}
	iters := 0
	for p := range parts {
		lo, hi := p*in.n/parts, (p+1)*in.n/parts
		jobs := perm[lo:hi]
		nn := len(jobs)
		a := make([]float64, nn*k)
		sc := make([]float64, nn)
		dd := make([]float64, nn)
		for i, m := range jobs {
			copy(a[i*k:i*k+k], in.a[m*k:m*k+k])
			sc[i] = in.scale[m]
			dd[i] = d[m]
		}
		e := newEngine(nn, k, a, sc, capac, nil, make([]float64, nn), dd, true)
		// Each group's equal split of its share is the whole problem's, so the
		// equal-share allocation restricted to the group fits 1/k of capacity
		// only on average; start from zero instead.
		zero := column{use: make([]float64, k)}
		res, err := e.run(ctx, []column{zero}, cgOptions{tol: s.Tolerance, maxIter: s.MaxIterations,
			stopAbove: math.Inf(1), stopBelow: math.Inf(-1)})
		if err != nil {
			return nil, nil, 0, err
		}
		iters += res.iters
		for i, m := range jobs {
			copy(x[m*k:m*k+k], res.x[i*k:i*k+k])
		}
		for j := range k {
			lam[j] += res.lambda[j] / float64(parts) / float64(parts)
		}
	}
	return x, lam, iters, nil
}

// waterFill raises, level by level, the jobs that are not bottlenecked
// (leximin): after each level θ it freezes exactly the jobs that cannot
// exceed θ while every other job keeps its floor, and raises the rest.
//
// Which jobs can rise is decided by LPs, not by reading prices: maximise
// the mean share over a candidate set C with every job held at its floor.
// If some job of C ends above its floor it can rise (leave C, repeat); if
// none does and the LP's proven bound says the mean cannot exceed θ, no job
// of C can rise (were one able to, a small step towards an allocation where
// it does would raise the mean), so C is frozen: an exact certificate per
// level. When every candidate rises, the level was not yet the maximum (a
// column-generation run stopped short): the mean of the allocations that
// raised them lifts every active job above θ, and the level is solved
// again from there, so no job is ever frozen below what it can reach.
// Every allocation kept meets all floors, so X's smallest share is the
// reported Objective.
func waterFill(ctx context.Context, in *instance, d []float64, first Solution, s Settings) (Solution, error) {
	n, k := in.n, in.k
	sol := first
	if !(first.Objective > 0) {
		return sol, nil // no job can run: nothing to raise
	}
	// Work in units of the first level, so levels are of order 1.
	ds := make([]float64, n)
	for m := range n {
		ds[m] = d[m] * first.Objective
	}
	x := make([]float64, n*k)
	for m, row := range first.X {
		copy(x[m*k:], row)
	}
	share := func(x []float64, m int) float64 {
		var t float64
		for j := range k {
			t += in.a[m*k+j] * x[m*k+j]
		}
		return t / ds[m]
	}
	const rise = 1e-7 // relative margin above the floor that counts as rising
	tol := min(s.Tolerance, 1e-9)
	opts := cgOptions{tol: tol, maxIter: s.MaxIterations, stopAbove: math.Inf(1), stopBelow: math.Inf(-1)}
	f := make([]float64, n)   // floors of frozen jobs (throughput)
	dd := slices.Clone(ds)    // demands of active jobs (0 = frozen)
	th := level(in, x, f, dd) // ≥ 1 up to rounding
	zero := make([]float64, n)
	active := n
	lvl, solveLevel := 1, false // the first level is solved
	for retries := 0; active > 0; {
		if err := ctx.Err(); err != nil {
			return Solution{}, err
		}
		if solveLevel {
			e := newEngine(n, k, in.a, in.scale, in.capac, nil, f, dd, true)
			res, iters, err := e.runProved(ctx, x, level(in, x, f, dd), opts)
			if err != nil {
				return Solution{}, err
			}
			sol.Iterations += iters
			if lv := level(in, res.x, f, dd); lv >= th && meetsFloors(in, res.x, f) {
				x, th = res.x, lv
			}
		}
		sol.Levels = lvl
		if lvl >= s.MaxLevels {
			break // freeze every job left at th
		}
		// Candidates: the active jobs x holds at the level.
		floor := make([]float64, n)
		cand := make([]bool, n)
		nc := 0
		for m := range n {
			floor[m] = f[m] + th*dd[m]
			if dd[m] > 0 && share(x, m) <= th*(1+rise) {
				cand[m] = true
				nc++
			}
		}
		raised := slices.Clone(x) // Σ of x and the allocations that raised candidates
		points := 1
		for nc > 0 {
			v := make([]float64, n*k)
			for m := range n {
				if cand[m] {
					for j := range k {
						v[m*k+j] = in.a[m*k+j] / (ds[m] * float64(nc))
					}
				}
			}
			e := newEngine(n, k, in.a, in.scale, in.capac, v, floor, zero, false)
			res, iters, err := e.runProved(ctx, x, 0, opts)
			if err != nil {
				return Solution{}, err
			}
			sol.Iterations += iters
			left := 0
			for m := range n {
				if cand[m] && share(res.x, m) > th*(1+rise) {
					cand[m] = false
					nc--
					left++
				}
			}
			if left == 0 {
				break // res.ub ≤ θ·(1+tol): no candidate can rise
			}
			if meetsFloors(in, res.x, floor) {
				x = res.x // a feasible allocation with more jobs above the level
				for i, v := range res.x {
					raised[i] += v
				}
				points++
			}
		}
		if nc == 0 {
			// Every candidate can rise: the level is not the maximum. The
			// mean of the allocations that raised them keeps every floor and
			// puts every active job above θ; solve the level again from it.
			for i := range raised {
				raised[i] /= float64(points)
			}
			if lv := level(in, raised, f, dd); lv > th && meetsFloors(in, raised, f) && retries < 8 {
				x, th, solveLevel = raised, lv, true
				retries++
				continue
			}
			// Rounding defeats the certificate: freeze the job x holds lowest.
			lo, at := math.Inf(1), -1
			for m := range n {
				if dd[m] > 0 {
					if sh := share(x, m); sh < lo {
						lo, at = sh, m
					}
				}
			}
			cand[at] = true
		}
		for m := range n {
			if cand[m] {
				f[m], dd[m] = floor[m], 0
				active--
			}
		}
		lvl, solveLevel, retries = lvl+1, true, 0
	}
	for m := range n { // freeze what MaxLevels left
		if dd[m] > 0 {
			f[m], dd[m] = f[m]+th*dd[m], 0
		}
	}
	rows := finishX(in, in.capac, x)
	sol.X = rows
	// Objective: X's smallest share (the first level, up to rounding).
	flat := make([]float64, n*k)
	for m, r := range rows {
		copy(flat[m*k:], r)
	}
	sol.Objective = level(in, flat, nil, d)
	sol.Gap = gapOf(sol.Objective, sol.Bound)
	return sol, nil
}

// runProved runs column generation from the allocation x (at level theta)
// and, while the run stops with its gap above the tolerance (the master
// could not use the columns priced), restarts it from the point reached,
// a few times at most. Every run's bound is a bound on the same LP, so the
// best is kept; it returns the iterations of all runs.
func (e *engine) runProved(ctx context.Context, x []float64, theta float64, o cgOptions) (cgResult, int, error) {
	res, err := e.run(ctx, []column{e.explicitColumn(x, theta)}, o)
	iters := res.iters
	for restart := 0; err == nil && restart < 4 && res.ub-res.lb > o.tol*max(math.Abs(res.ub), math.Abs(res.lb), 1e-300); restart++ {
		ub, lb := res.ub, res.lb
		th := 0.0
		if e.useTheta && e.v == nil {
			th = lb
		}
		res, err = e.run(ctx, []column{e.explicitColumn(res.x, th)}, o)
		iters += res.iters
		res.ub = min(res.ub, ub)
		if !(res.lb > lb) {
			break // no progress: keep what was proven
		}
	}
	return res, iters, err
}

// meetsFloors reports whether x gives every job at least floor (within
// rounding) and fits capacity.
func meetsFloors(in *instance, x, floor []float64) bool {
	k := in.k
	use := make([]float64, k)
	for m := range in.n {
		var t float64
		for j := range k {
			t += in.a[m*k+j] * x[m*k+j]
			use[j] += in.scale[m] * x[m*k+j]
		}
		if t < floor[m]*(1-1e-10) {
			return false
		}
	}
	for j, u := range use {
		if u > in.capac[j]*(1+1e-10) {
			return false
		}
	}
	return true
}

// MinMakespan minimises the time until every job finishes (Gavel's
// min_total_duration_perf), given Problem.StepsLeft. Objective is the
// makespan in seconds if the allocation were kept until the end.
type MinMakespan struct{}

// Name implements Objective.
func (MinMakespan) Name() string { return "makespan" }

func (MinMakespan) solve(ctx context.Context, p *Problem, s Settings) (Solution, error) {
	in, err := p.validate()
	if err != nil {
		return Solution{}, err
	}
	if p.StepsLeft == nil {
		return Solution{}, fmt.Errorf("%w: MinMakespan needs StepsLeft", ErrInvalid)
	}
	var top float64
	for _, v := range p.StepsLeft {
		top = max(top, v)
	}
	if top == 0 {
		return Solution{X: finishX(in, in.capac, make([]float64, in.n*in.k)), Levels: 1, Partitions: 1}, nil
	}
	d := make([]float64, in.n)
	for m, v := range p.StepsLeft {
		d[m] = v / top
	}
	sol, _, err := solveLevel(ctx, in, d, s)
	if err != nil {
		return Solution{}, err
	}
	th, ub := sol.Objective, sol.Bound
	sol.Objective = top / th
	sol.Bound = top / ub
	sol.Gap = gapOf(sol.Objective, sol.Bound)
	return sol, nil
}

// FinishTimeFairness minimises the largest finish-time fairness ρ (Themis,
// Gavel's finish_time_fairness_perf):
//
//	ρ_m = (Elapsed_m + StepsLeft_m / throughput_m(X)) /
//	      (IsolatedElapsed_m + StepsLeft_m / isolated throughput_m)
//
// where the isolated throughput is the job's throughput with 1/M of the
// cluster, n_j/(M·Scale[m]) of every type (Problem.IsolatedThroughput),
// and IsolatedElapsed is how long the work done so far would have taken
// at that rate (0 for a new job). It bisects on ρ, each step a max-min
// feasibility test with a proof either way. Needs Problem.StepsLeft and
// Problem.Elapsed; jobs with no steps left are not counted. Objective is
// the largest ρ under X; Bound a proven lower bound on the optimum.
type FinishTimeFairness struct {
	// IsolatedElapsed[m] is how long the work job m has done would have
	// taken at its isolated throughput (Gavel's cumulative isolated time,
	// which its policy accumulates round by round as steps done / isolated
	// throughput; Policy does the same); nil = all 0, as for new jobs.
	IsolatedElapsed []time.Duration
	// EqualTimeShares is goodsched's earlier variant: the reference rate
	// is the equal-share throughput (Problem.EqualShareThroughput, the
	// same time fraction for every job whatever its scale) and a nil
	// IsolatedElapsed means Problem.Elapsed (the job got its fair share so
	// far).
	EqualTimeShares bool
}

// Name implements Objective.
func (o FinishTimeFairness) Name() string {
	if o.EqualTimeShares {
		return "finish-time-equal-time"
	}
	return "finish-time"
}

func (o FinishTimeFairness) solve(ctx context.Context, p *Problem, s Settings) (Solution, error) {
	in, err := p.validate()
	if err != nil {
		return Solution{}, err
	}
	if p.StepsLeft == nil || p.Elapsed == nil {
		return Solution{}, fmt.Errorf("%w: FinishTimeFairness needs StepsLeft and Elapsed", ErrInvalid)
	}
	if o.IsolatedElapsed != nil && len(o.IsolatedElapsed) != in.n {
		return Solution{}, fmt.Errorf("%w: len(IsolatedElapsed) = %d, want %d", ErrInvalid, len(o.IsolatedElapsed), in.n)
	}
	n, k := in.n, in.k
	el := make([]float64, n)
	c := make([]float64, n)
	lo := 0.0
	counted := 0
	for m := range n {
		el[m] = p.Elapsed[m].Seconds()
		iso, ref := 0.0, in.iso[m]
		if o.EqualTimeShares {
			iso, ref = el[m], in.eq[m]
		}
		if o.IsolatedElapsed != nil {
			if o.IsolatedElapsed[m] < 0 {
				return Solution{}, fmt.Errorf("%w: IsolatedElapsed[%d] = %v", ErrInvalid, m, o.IsolatedElapsed[m])
			}
			iso = o.IsolatedElapsed[m].Seconds()
		}
		if p.StepsLeft[m] == 0 {
			continue // done: needs nothing, not counted
		}
		counted++
		c[m] = iso + p.StepsLeft[m]/ref
		var best float64
		for j := range k {
			best = max(best, in.a[m*k+j])
		}
		lo = max(lo, (el[m]+p.StepsLeft[m]/best)/c[m])
	}
	if counted == 0 {
		return Solution{X: finishX(in, in.capac, make([]float64, n*k)), Levels: 1, Partitions: 1}, nil
	}
	rho := func(x []float64) float64 {
		r := 0.0
		for m := range n {
			var t float64
			for j := range k {
				t += in.a[m*k+j] * x[m*k+j]
			}
			if p.StepsLeft[m] > 0 {
				r = max(r, (el[m]+p.StepsLeft[m]/t)/c[m])
			}
		}
		return r
	}
	best := equalX(in)
	hi := rho(best)
	f := make([]float64, n)
	d := make([]float64, n)
	iters := 0
	for range 100 {
		if (hi-lo)/hi <= s.Tolerance {
			break
		}
		mid := (lo + hi) / 2
		ok := true
		for m := range n {
			d[m] = 0
			if p.StepsLeft[m] > 0 {
				den := mid*c[m] - el[m]
				if den <= 0 {
					ok = false
					break
				}
				d[m] = p.StepsLeft[m] / den
			}
		}
		if !ok {
			lo = mid
			continue
		}
		e := newEngine(n, k, in.a, in.scale, in.capac, nil, f, d, true)
		init := []column{e.explicitColumn(best, level(in, best, nil, d))}
		res, err := e.run(ctx, init, cgOptions{tol: 1e-10, maxIter: s.MaxIterations, stopAbove: 1, stopBelow: 1})
		if err != nil {
			return Solution{}, err
		}
		iters += res.iters
		switch {
		case res.ub < 1:
			lo = mid
		case res.lb >= 1:
			best = res.x
			hi = min(mid, rho(best))
		default: // undecided within tolerance: keep what is proven
			if r := rho(res.x); r < hi {
				best, hi = res.x, r
			}
			lo = max(lo, mid*(1-1e-9))
		}
	}
	x := finishX(in, in.capac, best)
	obj := rho(best)
	return Solution{X: x, Objective: obj, Bound: lo, Gap: gapOf(obj, lo), Iterations: iters, Levels: 1, Partitions: 1}, nil
}

// MaxThroughputPerCost maximises the total throughput per unit cost,
// Σ_m Σ_j Throughput[m][j]·X[m][j] / CostPerHour[j] (Gavel's
// max_sum_throughput_normalized_by_cost_perf, on raw throughputs),
// optionally subject to SLO rows: job m must finish StepsLeft[m] within
// SLO[m] at the allocated rate. Objective is that sum.
type MaxThroughputPerCost struct {
	// CostPerHour[j] is the price of one device of type j per hour
	// (finite, > 0).
	CostPerHour []float64
	// SLO[m] is the time within which job m must finish at the allocated
	// rate (0 = none); needs Problem.StepsLeft. Unmeetable SLOs give an
	// error wrapping ErrInfeasible.
	SLO []time.Duration
	// Normalized is goodsched's earlier variant: each job's throughput is
	// divided by its equal-share throughput and the price by the job's
	// devices, Σ (T[m][j] / equal-share throughput_m)·X[m][j] /
	// (Scale[m]·CostPerHour[j]), so jobs in different units weigh alike.
	Normalized bool
}

// Name implements Objective.
func (o MaxThroughputPerCost) Name() string {
	if o.Normalized {
		return "cost-normalized"
	}
	return "cost"
}

func (o MaxThroughputPerCost) solve(ctx context.Context, p *Problem, s Settings) (Solution, error) {
	in, err := p.validate()
	if err != nil {
		return Solution{}, err
	}
	n, k := in.n, in.k
	if len(o.CostPerHour) != k {
		return Solution{}, fmt.Errorf("%w: len(CostPerHour) = %d, want %d", ErrInvalid, len(o.CostPerHour), k)
	}
	for j, c := range o.CostPerHour {
		if !(c > 0) || math.IsInf(c, 0) {
			return Solution{}, fmt.Errorf("%w: CostPerHour[%d] = %v", ErrInvalid, j, c)
		}
	}
	v := make([]float64, n*k)
	for m := range n {
		for j := range k {
			if o.Normalized {
				v[m*k+j] = in.a[m*k+j] / in.eq[m] / (in.scale[m] * o.CostPerHour[j])
			} else {
				v[m*k+j] = in.a[m*k+j] / o.CostPerHour[j]
			}
		}
	}
	slo := make([]float64, n)
	any := false
	if o.SLO != nil {
		if len(o.SLO) != n {
			return Solution{}, fmt.Errorf("%w: len(SLO) = %d, want %d", ErrInvalid, len(o.SLO), n)
		}
		for m, t := range o.SLO {
			switch {
			case t < 0:
				return Solution{}, fmt.Errorf("%w: SLO[%d] = %v", ErrInvalid, m, t)
			case t == 0:
				continue
			case p.StepsLeft == nil:
				return Solution{}, fmt.Errorf("%w: SLO rows need StepsLeft", ErrInvalid)
			}
			slo[m] = p.StepsLeft[m] / t.Seconds()
			any = any || slo[m] > 0
		}
	}
	iters := 0
	start := column{use: make([]float64, k)}
	if any {
		e1 := newEngine(n, k, in.a, in.scale, in.capac, nil, make([]float64, n), slo, true)
		zero := column{use: make([]float64, k)}
		r1, err := e1.run(ctx, []column{zero}, cgOptions{tol: 1e-10, maxIter: s.MaxIterations, stopAbove: 1, stopBelow: 1})
		if err != nil {
			return Solution{}, err
		}
		iters += r1.iters
		if r1.lb < 1 {
			return Solution{}, fmt.Errorf("%w: the SLOs need %.4g times the cluster's capacity (proven ≥ %.4g)",
				ErrInfeasible, 1/r1.lb, 1/r1.ub)
		}
		e := newEngine(n, k, in.a, in.scale, in.capac, v, slo, make([]float64, n), false)
		start = e.explicitColumn(r1.x, 0)
	}
	e := newEngine(n, k, in.a, in.scale, in.capac, v, slo, make([]float64, n), false)
	if !any {
		start = e.explicitColumn(make([]float64, n*k), 0)
	}
	res, err := e.run(ctx, []column{start}, cgOptions{tol: s.Tolerance, maxIter: s.MaxIterations,
		stopAbove: math.Inf(1), stopBelow: math.Inf(-1)})
	if err != nil {
		return Solution{}, err
	}
	iters += res.iters
	x := finishX(in, in.capac, res.x)
	var obj float64
	for i, xv := range res.x {
		obj += v[i] * xv
	}
	return Solution{X: x, Objective: obj, Bound: res.ub, Gap: gapOf(obj, res.ub), Iterations: iters, Levels: 1, Partitions: 1}, nil
}

package gavel

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/gonum/optimize/convex/lp"
)

// The LPs below are written from Gavel's policy files (scheduler/policies/
// max_min_fairness.py, finish_time_fairness.py, max_sum_throughput.py,
// proportional.py, isolated.py and policy.py's base constraints) on the raw
// problem, independently of the solver's instance: no shared helper, no
// masking (the instances keep every scale within every type's devices).

// gavelProblem draws an instance whose scales fit every type.
func gavelProblem(rng *rand.Rand, n, k int) Problem {
	p := randomProblem(rng, n, k, true)
	for m := range n {
		for _, d := range p.Devices {
			if p.Scale[m] > d {
				p.Scale[m] = 1
			}
		}
		if rng.IntN(3) == 0 {
			p.Weight[m] = 1
		}
	}
	return p
}

// lpBase builds Gavel's base constraints (policy.py get_base_constraints:
// x ≥ 0, Σ_m sf·x ≤ num_workers per type, Σ_j x ≤ 1 per job) over the n*k
// allocation variables followed by extra free-standing variables, as rows
// G·v ≤ h. extra adds columns after the allocation.
type lpRows struct {
	cols int
	G    [][]float64
	h    []float64
}

func gavelBase(p Problem, extra int) *lpRows {
	n, k := len(p.Throughput), len(p.Devices)
	r := &lpRows{cols: n*k + extra}
	for m := range n {
		row := make([]float64, r.cols)
		for j := range k {
			row[m*k+j] = 1
		}
		r.G, r.h = append(r.G, row), append(r.h, 1)
	}
	for j := range k {
		row := make([]float64, r.cols)
		for m := range n {
			row[m*k+j] = float64(p.Scale[m])
		}
		r.G, r.h = append(r.G, row), append(r.h, float64(p.Devices[j]))
	}
	return r
}

// maximise c·v s.t. G·v ≤ h, v ≥ 0 with gonum's simplex (slack basis when
// h ≥ 0, else its Phase I).
func (r *lpRows) maximise(c []float64) (float64, error) {
	v, _, err := r.solve(c)
	return v, err
}

// solve is maximise that also returns the optimal v.
func (r *lpRows) solve(c []float64) (float64, []float64, error) {
	rows := len(r.G)
	A := mat.NewDense(rows, r.cols+rows, nil)
	obj := make([]float64, r.cols+rows)
	b := make([]float64, rows)
	feasible := true
	for i, row := range r.G {
		sgn := 1.0
		if r.h[i] < 0 { // keep b ≥ 0: −row·v − s = −h
			sgn = -1
			feasible = false
		}
		for q, v := range row {
			A.Set(i, q, sgn*v)
		}
		A.Set(i, r.cols+i, sgn)
		b[i] = sgn * r.h[i]
	}
	for q, v := range c {
		obj[q] = -v
	}
	var basic []int
	if feasible {
		for i := range rows {
			basic = append(basic, r.cols+i)
		}
	}
	opt, x, err := lp.Simplex(obj, A, b, 1e-11, basic)
	if err != nil {
		return 0, nil, err
	}
	return -opt, x[:r.cols], nil
}

// gavelProportional is proportional.py: x[j] = n_j/m, divided by the
// largest row sum; returns T·x per job.
func gavelProportional(p Problem) []float64 {
	n, k := len(p.Throughput), len(p.Devices)
	x := make([]float64, k)
	var row float64
	for j, d := range p.Devices {
		x[j] = float64(d) / float64(n)
		row += x[j]
	}
	out := make([]float64, n)
	for m := range n {
		for j := range k {
			out[m] += p.Throughput[m][j] * x[j] / row
		}
	}
	return out
}

// gavelIsolated is isolated.py: x[m][j] = n_j/m/sf_m, each row divided by
// max(row sum, 1); returns T·x per job.
func gavelIsolated(p Problem) []float64 {
	n, k := len(p.Throughput), len(p.Devices)
	out := make([]float64, n)
	for m := range n {
		x := make([]float64, k)
		var row float64
		for j, d := range p.Devices {
			x[j] = float64(d) / float64(n) / float64(p.Scale[m])
			row += x[j]
		}
		for j := range k {
			out[m] += p.Throughput[m][j] * x[j] / max(row, 1)
		}
	}
	return out
}

// gavelMaxMin is max_min_fairness.py's MaxMinFairnessPolicyWithPerf:
// maximise min_m Σ_j T·(1/priority)·(1/proportional)·sf·x.
func gavelMaxMin(t *testing.T, p Problem) float64 {
	t.Helper()
	n, k := len(p.Throughput), len(p.Devices)
	prop := gavelProportional(p)
	r := gavelBase(p, 1)
	tc := n * k
	for m := range n {
		row := make([]float64, r.cols)
		row[tc] = 1
		for j := range k {
			row[m*k+j] = -p.Throughput[m][j] / p.Weight[m] / prop[m] * float64(p.Scale[m])
		}
		r.G, r.h = append(r.G, row), append(r.h, 0)
	}
	c := make([]float64, r.cols)
	c[tc] = 1
	v, err := r.maximise(c)
	if err != nil {
		t.Fatalf("max-min oracle: %v", err)
	}
	return v
}

// gavelCost is max_sum_throughput.py's
// ThroughputNormalizedByCostSumWithPerfSLOs: maximise Σ T/cost·x subject to
// Σ_j T·x ≥ steps/SLO for the jobs with an SLO.
func gavelCost(p Problem, cost []float64, slo []time.Duration) (float64, error) {
	n, k := len(p.Throughput), len(p.Devices)
	r := gavelBase(p, 0)
	for m := range n {
		if slo == nil || slo[m] == 0 {
			continue
		}
		row := make([]float64, r.cols)
		for j := range k {
			row[m*k+j] = -p.Throughput[m][j]
		}
		r.G, r.h = append(r.G, row), append(r.h, -p.StepsLeft[m]/slo[m].Seconds())
	}
	c := make([]float64, r.cols)
	for m := range n {
		for j := range k {
			c[m*k+j] = p.Throughput[m][j] / cost[j]
		}
	}
	return r.maximise(c)
}

// gavelFTF is finish_time_fairness.py's FinishTimeFairnessPolicyWithPerf:
// minimise max_m (elapsed + steps/(T·x)) / (cumulative isolated time +
// steps/isolated throughput), solved by bisection on ρ over LP feasibility
// tests (the ρ-sublevel set is Σ_j T·x ≥ steps/(ρ·c − elapsed)).
func gavelFTF(t *testing.T, p Problem, isoTime []time.Duration) float64 {
	t.Helper()
	n, k := len(p.Throughput), len(p.Devices)
	iso := gavelIsolated(p)
	c := make([]float64, n)
	for m := range n {
		c[m] = p.StepsLeft[m] / iso[m]
		if isoTime != nil {
			c[m] += isoTime[m].Seconds()
		}
	}
	feasible := func(rho float64) bool {
		r := gavelBase(p, 1)
		tc := n * k
		for m := range n {
			den := rho*c[m] - p.Elapsed[m].Seconds()
			if den <= 0 {
				return false
			}
			row := make([]float64, r.cols)
			row[tc] = p.StepsLeft[m] / den
			for j := range k {
				row[m*k+j] = -p.Throughput[m][j]
			}
			r.G, r.h = append(r.G, row), append(r.h, 0)
		}
		// Maximise the common multiple θ of the required rates; ρ is
		// feasible iff θ ≥ 1 (θ ≤ 2 keeps the LP bounded).
		cap := make([]float64, r.cols)
		cap[tc] = 1
		r.G, r.h = append(r.G, cap), append(r.h, 2)
		obj := make([]float64, r.cols)
		obj[tc] = 1
		v, err := r.maximise(obj)
		if err != nil {
			t.Fatalf("ftf oracle: %v", err)
		}
		return v >= 1
	}
	lo, hi := 0.0, 1.0
	for !feasible(hi) {
		lo, hi = hi, 2*hi
	}
	for range 60 {
		mid := (lo + hi) / 2
		if feasible(mid) {
			hi = mid
		} else {
			lo = mid
		}
	}
	return hi
}

func relDiff(a, b float64) float64 {
	return math.Abs(a-b) / max(math.Abs(a), math.Abs(b), 1e-300)
}

// TestObjectivesMatchGavelLP holds each objective named after Gavel to the
// LP written from Gavel's policy file: the optimum of Gavel's own
// objective, within 1e-7.
func TestObjectivesMatchGavelLP(t *testing.T) {
	const tol = 1e-7
	instances := 60
	if raceEnabled || testing.Short() {
		instances = 20
	}
	rng := rand.New(rand.NewPCG(16, 1))
	worst := map[string]float64{}
	defer func() {
		for _, name := range []string{"max-min", "max-min-blind", "cost", "cost-slo", "finish-time"} {
			t.Logf("%s: %d instances, largest relative difference from Gavel's LP %.2g", name, instances, worst[name])
		}
	}()
	s := &Settings{Tolerance: 1e-10}
	for trial := range instances {
		n, k := 2+rng.IntN(11), 1+rng.IntN(4)
		p := gavelProblem(rng, n, k)
		check := func(name string, got, want float64) {
			d := relDiff(got, want)
			worst[name] = max(worst[name], d)
			if d > tol {
				t.Errorf("trial %d (n=%d k=%d) %s: objective %.10g, Gavel's LP %.10g (rel %.2g)", trial, n, k, name, got, want, d)
			}
		}
		for _, blind := range []bool{false, true} {
			sol, err := Solve(context.Background(), p, MaxMinFairness{HeterogeneityBlind: blind}, s)
			if err != nil {
				t.Fatal(err)
			}
			q, name := p, "max-min"
			if blind {
				q, name = p.Blind(), "max-min-blind"
			}
			check(name, sol.Objective, gavelMaxMin(t, q))
			if err := p.CheckAllocation(sol.X, 1e-9); err != nil {
				t.Errorf("trial %d %s: %v", trial, name, err)
			}
			sh, _ := q.NormalizedShares(sol.X)
			if lo := minOf(sh); relDiff(lo, sol.Objective) > 1e-9 {
				t.Errorf("trial %d %s: X's smallest share %.10g, Objective %.10g", trial, name, lo, sol.Objective)
			}
		}

		cost := make([]float64, k)
		for j := range cost {
			cost[j] = 0.5 + 3*rng.Float64()
		}
		sol, err := Solve(context.Background(), p, MaxThroughputPerCost{CostPerHour: cost}, s)
		if err != nil {
			t.Fatal(err)
		}
		want, err := gavelCost(p, cost, nil)
		if err != nil {
			t.Fatalf("cost oracle: %v", err)
		}
		check("cost", sol.Objective, want)

		iso := gavelIsolated(p)
		slo := make([]time.Duration, n)
		for m := range n {
			if rng.IntN(3) == 0 {
				slo[m] = time.Duration(p.StepsLeft[m] / iso[m] * (0.5 + rng.Float64()) * float64(time.Second))
			}
		}
		want, oerr := gavelCost(p, cost, slo)
		sol, err = Solve(context.Background(), p, MaxThroughputPerCost{CostPerHour: cost, SLO: slo}, s)
		switch {
		case errors.Is(oerr, lp.ErrInfeasible):
			if !errors.Is(err, ErrInfeasible) {
				t.Errorf("trial %d: Gavel's LP is infeasible with the SLOs, Solve says %v", trial, err)
			}
		case oerr != nil:
			t.Fatalf("cost oracle: %v", oerr)
		case err != nil:
			t.Errorf("trial %d cost-slo: %v", trial, err)
		default:
			check("cost-slo", sol.Objective, want)
		}

		var isoTime []time.Duration
		if trial%2 == 1 {
			isoTime = make([]time.Duration, n)
			for m := range n {
				isoTime[m] = time.Duration(rng.Float64() * float64(p.Elapsed[m]))
			}
		}
		sol, err = Solve(context.Background(), p, FinishTimeFairness{IsolatedElapsed: isoTime}, &Settings{Tolerance: 1e-10})
		if err != nil {
			t.Fatal(err)
		}
		check("finish-time", sol.Objective, gavelFTF(t, p, isoTime))
	}
}

func minOf(x []float64) float64 {
	lo := math.Inf(1)
	for _, v := range x {
		lo = min(lo, v)
	}
	return lo
}

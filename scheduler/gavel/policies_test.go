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

func TestMakespanMatchesSimplex(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for trial := range 12 {
		n, k := 2+rng.IntN(40), 1+rng.IntN(4)
		p := randomProblem(rng, n, k, true)
		if trial%3 == 0 {
			p.StepsLeft[0] = 0 // a job that is done
		}
		in, err := p.validate()
		if err != nil {
			t.Fatal(err)
		}
		want := 1 / oracleLevel(t, in, p.StepsLeft)
		sol, err := Solve(context.Background(), p, MinMakespan{}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if rel := math.Abs(sol.Objective-want) / want; rel > 1e-6 {
			t.Errorf("trial %d: makespan %.9g s, simplex %.9g s", trial, sol.Objective, want)
		}
		if sol.Bound > want*(1+1e-9) {
			t.Errorf("trial %d: lower bound %.9g above optimum %.9g", trial, sol.Bound, want)
		}
		if err := p.CheckAllocation(sol.X, 1e-9); err != nil {
			t.Error(err)
		}
	}
}

// oracleCost solves the cost LP with SLO rows by gonum's two-phase simplex.
func oracleCost(t *testing.T, in *instance, v, slo []float64) (float64, error) {
	t.Helper()
	n, k := in.n, in.k
	nx := n * k
	rows := 2*n + k
	cols := nx + 2*n + k
	A := mat.NewDense(rows, cols, nil)
	b := make([]float64, rows)
	c := make([]float64, cols)
	for m := range n {
		for j := range k {
			c[m*k+j] = -v[m*k+j]
			A.Set(m, m*k+j, in.a[m*k+j])
			A.Set(n+m, m*k+j, 1)
			A.Set(2*n+j, m*k+j, in.scale[m])
		}
		A.Set(m, nx+m, -1) // surplus: Σ a x − s = slo
		b[m] = slo[m]
		A.Set(n+m, nx+n+m, 1)
		b[n+m] = 1
	}
	for j := range k {
		A.Set(2*n+j, nx+2*n+j, 1)
		b[2*n+j] = in.capac[j]
	}
	opt, _, err := lp.Simplex(c, A, b, 1e-10, nil)
	return -opt, err
}

func TestCostMatchesSimplex(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for trial := range 12 {
		n, k := 2+rng.IntN(25), 1+rng.IntN(4)
		p := randomProblem(rng, n, k, trial%2 == 0)
		cost := make([]float64, k)
		for j := range cost {
			cost[j] = 0.5 + 3*rng.Float64()
		}
		obj := MaxThroughputPerCost{CostPerHour: cost, Normalized: true}
		in, _ := p.validate()
		slo := make([]float64, n)
		if trial%2 == 1 {
			obj.SLO = make([]time.Duration, n)
			for m := range n {
				if rng.IntN(3) == 0 {
					// Ask for about the equal-share rate, sometimes more.
					secs := p.StepsLeft[m] / in.eq[m] * (0.6 + rng.Float64())
					obj.SLO[m] = time.Duration(secs * float64(time.Second))
					slo[m] = p.StepsLeft[m] / obj.SLO[m].Seconds()
				}
			}
		}
		v := make([]float64, n*k)
		for m := range n {
			for j := range k {
				v[m*k+j] = in.a[m*k+j] / in.eq[m] / (in.scale[m] * cost[j])
			}
		}
		want, oerr := oracleCost(t, in, v, slo)
		sol, err := Solve(context.Background(), p, obj, nil)
		if errors.Is(oerr, lp.ErrInfeasible) {
			if !errors.Is(err, ErrInfeasible) {
				t.Errorf("trial %d: simplex says infeasible, got %v", trial, err)
			}
			continue
		}
		if oerr != nil {
			t.Fatalf("oracle: %v", oerr)
		}
		if err != nil {
			t.Fatalf("trial %d: %v", trial, err)
		}
		if rel := math.Abs(sol.Objective-want) / want; rel > 1e-6 {
			t.Errorf("trial %d: objective %.9g, simplex %.9g", trial, sol.Objective, want)
		}
		if err := p.CheckAllocation(sol.X, 1e-9); err != nil {
			t.Error(err)
		}
		thr := p.EffectiveThroughput(sol.X)
		for m := range n {
			if thr[m] < slo[m]*(1-1e-9) {
				t.Errorf("trial %d: job %d gets %v < SLO rate %v", trial, m, thr[m], slo[m])
			}
		}
	}
}

func TestCostInfeasibleSLO(t *testing.T) {
	p := Problem{Throughput: [][]float64{{1, 2}, {1, 2}}, Devices: []int{1, 1}, StepsLeft: []float64{100, 100}}
	_, err := Solve(context.Background(), p, MaxThroughputPerCost{CostPerHour: []float64{1, 1},
		SLO: []time.Duration{10 * time.Second, 10 * time.Second}}, nil)
	if !errors.Is(err, ErrInfeasible) {
		t.Fatalf("got %v, want ErrInfeasible", err)
	}
}

// ftfOracle bisects ρ with the simplex level oracle.
func ftfOracle(t *testing.T, in *instance, p Problem) float64 {
	n := in.n
	el := make([]float64, n)
	c := make([]float64, n)
	for m := range n {
		el[m] = p.Elapsed[m].Seconds()
		c[m] = el[m] + p.StepsLeft[m]/in.eq[m] // the EqualTimeShares variant
	}
	lo, hi := 0.0, 1.0
	d := make([]float64, n)
	for range 60 {
		mid := (lo + hi) / 2
		ok := true
		for m := range n {
			den := mid*c[m] - el[m]
			if den <= 0 {
				ok = false
				break
			}
			d[m] = p.StepsLeft[m] / den
		}
		if ok && oracleLevel(t, in, d) >= 1 {
			hi = mid
		} else {
			lo = mid
		}
	}
	return hi
}

func TestFinishTimeMatchesBisectedSimplex(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 9))
	for trial := range 6 {
		n, k := 2+rng.IntN(12), 1+rng.IntN(4)
		p := randomProblem(rng, n, k, trial%2 == 0)
		in, _ := p.validate()
		want := ftfOracle(t, in, p)
		sol, err := Solve(context.Background(), p, FinishTimeFairness{EqualTimeShares: true}, &Settings{Tolerance: 1e-9})
		if err != nil {
			t.Fatal(err)
		}
		if rel := math.Abs(sol.Objective-want) / want; rel > 1e-6 {
			t.Errorf("trial %d: ρ %.9g, oracle %.9g (bound %.9g)", trial, sol.Objective, want, sol.Bound)
		}
		if sol.Bound > want*(1+1e-9) || sol.Objective > 1+1e-9 {
			t.Errorf("trial %d: bound %.9g, objective %.9g, oracle %.9g", trial, sol.Bound, sol.Objective, want)
		}
		if err := p.CheckAllocation(sol.X, 1e-9); err != nil {
			t.Error(err)
		}
	}
}

func TestWaterFilling(t *testing.T) {
	rng := rand.New(rand.NewPCG(10, 11))
	for trial := range 10 {
		n, k := 3+rng.IntN(40), 1+rng.IntN(4)
		p := randomProblem(rng, n, k, trial%2 == 0)
		// One job that can only use a single slow type caps plain max-min.
		p.Throughput[0] = make([]float64, k)
		p.Throughput[0][0] = 0.01
		p.Scale[0] = 1
		mm, err := Solve(context.Background(), p, MaxMinFairness{}, nil)
		if err != nil {
			t.Fatal(err)
		}
		wf, err := Solve(context.Background(), p, MaxMinFairness{WaterFilling: true}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := p.CheckAllocation(wf.X, 1e-9); err != nil {
			t.Fatal(err)
		}
		sh, _ := p.NormalizedShares(wf.X)
		shm, _ := p.NormalizedShares(mm.X)
		var sumW, sumM float64
		for m := range sh {
			if sh[m] < mm.Objective*(1-1e-6) {
				t.Errorf("trial %d: job %d share %v below the max-min level %v", trial, m, sh[m], mm.Objective)
			}
			sumW += sh[m]
			sumM += shm[m]
		}
		if gapOf(wf.Objective, mm.Objective) > 1e-9 || wf.Levels < 1 {
			t.Errorf("trial %d: first level %v vs max-min %v, levels %d", trial, wf.Objective, mm.Objective, wf.Levels)
		}
		t.Logf("trial %d: n=%d levels=%d Σshare water-filling %.4g, max-min %.4g", trial, n, wf.Levels, sumW, sumM)
	}
}

func TestBadInputs(t *testing.T) {
	ok := func() Problem {
		return Problem{Throughput: [][]float64{{1, 2}, {3, 0}}, Devices: []int{2, 2}}
	}
	cases := []struct {
		name string
		edit func(*Problem)
		want error
	}{
		{"zero row", func(p *Problem) { p.Throughput[1] = []float64{0, 0} }, ErrZeroRow},
		{"type with no devices", func(p *Problem) { p.Devices[1] = 0 }, ErrNoDevices},
		{"NaN", func(p *Problem) { p.Throughput[0][1] = math.NaN() }, ErrInvalid},
		{"Inf", func(p *Problem) { p.Throughput[0][1] = math.Inf(1) }, ErrInvalid},
		{"negative", func(p *Problem) { p.Throughput[0][0] = -1 }, ErrInvalid},
		{"too small", func(p *Problem) { p.Throughput[0][0] = 1e-200 }, ErrInvalid},
		{"too large", func(p *Problem) { p.Throughput[0][0] = 1e200 }, ErrInvalid},
		{"short row", func(p *Problem) { p.Throughput[0] = []float64{1} }, ErrInvalid},
		{"no jobs", func(p *Problem) { p.Throughput = nil }, ErrInvalid},
		{"no types", func(p *Problem) { p.Devices = nil }, ErrInvalid},
		{"scale too big", func(p *Problem) { p.Scale = []int{1, 4} }, ErrZeroRow},
		{"zero scale", func(p *Problem) { p.Scale = []int{1, 0} }, ErrInvalid},
		{"zero weight", func(p *Problem) { p.Weight = []float64{1, 0} }, ErrInvalid},
		{"NaN weight", func(p *Problem) { p.Weight = []float64{1, math.NaN()} }, ErrInvalid},
		{"weights length", func(p *Problem) { p.Weight = []float64{1} }, ErrInvalid},
		{"NaN steps", func(p *Problem) { p.StepsLeft = []float64{1, math.NaN()} }, ErrInvalid},
	}
	objs := []Objective{MaxMinFairness{}, MaxMinFairness{HeterogeneityBlind: true}, MaxMinFairness{WaterFilling: true},
		MinMakespan{}, FinishTimeFairness{}, MaxThroughputPerCost{CostPerHour: []float64{1, 1}}}
	for _, c := range cases {
		for _, o := range objs {
			p := ok()
			p.StepsLeft = []float64{10, 10}
			p.Elapsed = []time.Duration{time.Second, time.Second}
			c.edit(&p)
			_, err := Solve(context.Background(), p, o, nil)
			if !errors.Is(err, c.want) {
				t.Errorf("%s / %s: got %v, want %v", c.name, o.Name(), err, c.want)
			}
		}
	}
	p := ok()
	if _, err := Solve(context.Background(), p, MinMakespan{}, nil); !errors.Is(err, ErrInvalid) {
		t.Errorf("makespan without StepsLeft: %v", err)
	}
	if _, err := Solve(context.Background(), p, nil, nil); !errors.Is(err, ErrInvalid) {
		t.Errorf("nil objective: %v", err)
	}
	if _, err := Solve(context.Background(), p, MaxThroughputPerCost{CostPerHour: []float64{1, math.NaN()}}, nil); !errors.Is(err, ErrInvalid) {
		t.Errorf("NaN cost: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Solve(ctx, p, MaxMinFairness{}, nil); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
}

func TestDeterministicAndPOP(t *testing.T) {
	p := benchProblem(3000, 4)
	s := &Settings{Partitions: 4, Seed: 42}
	a, err := Solve(context.Background(), p, MaxMinFairness{}, s)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := Solve(context.Background(), p, MaxMinFairness{}, s)
	if a.Objective != b.Objective || a.Iterations != b.Iterations {
		t.Fatalf("not deterministic: %v vs %v", a, b)
	}
	c, _ := Solve(context.Background(), p, MaxMinFairness{}, &Settings{Partitions: 1})
	if a.Partitions != 4 || gapOf(a.Objective, c.Objective) > 1e-6 || a.Gap > 1e-6 {
		t.Fatalf("POP %v (gap %v) vs direct %v", a.Objective, a.Gap, c.Objective)
	}
}

func TestIterationLimitStillFeasible(t *testing.T) {
	p := benchProblem(500, 4)
	full, err := Solve(context.Background(), p, MaxMinFairness{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range []int{1, 3, 10} {
		sol, err := Solve(context.Background(), p, MaxMinFairness{}, &Settings{MaxIterations: it})
		if err != nil {
			t.Fatal(err)
		}
		if err := p.CheckAllocation(sol.X, 1e-9); err != nil {
			t.Fatal(err)
		}
		// The reported gap is proven: the true optimum lies between.
		if sol.Objective > full.Objective*(1+1e-9) || sol.Bound < full.Objective*(1-1e-9) {
			t.Errorf("%d rounds: objective %v, bound %v, optimum %v", it, sol.Objective, sol.Bound, full.Objective)
		}
		t.Logf("%d rounds: gap %.3g", it, sol.Gap)
	}
}

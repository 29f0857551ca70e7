package gavel

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/gonum/optimize/convex/lp"
)

// randomProblem draws a heterogeneous instance: n jobs, k types, job
// specific speedups, some jobs unable to use some types, mixed scales.
func randomProblem(rng *rand.Rand, n, k int, multi bool) Problem {
	p := Problem{Throughput: make([][]float64, n), Devices: make([]int, k),
		Scale: make([]int, n), Weight: make([]float64, n), StepsLeft: make([]float64, n),
		Elapsed: make([]time.Duration, n)}
	for j := range k {
		p.Devices[j] = 1 + rng.IntN(max(2, n/3))
	}
	for m := range n {
		row := make([]float64, k)
		base := 0.5 + 10*rng.Float64()
		for j := range k {
			if rng.IntN(5) > 0 || j == m%k {
				row[j] = base * (0.2 + 3*rng.Float64())
			}
		}
		p.Throughput[m] = row
		p.Scale[m] = 1
		if multi && rng.IntN(4) == 0 {
			p.Scale[m] = 1 << rng.IntN(3)
		}
		if p.Scale[m] > p.Devices[m%k] {
			p.Scale[m] = 1
		}
		p.Weight[m] = 0.5 + rng.Float64()
		p.StepsLeft[m] = 100 + 1e4*rng.Float64()
		p.Elapsed[m] = time.Duration(rng.IntN(3600)) * time.Second
	}
	return p
}

// oracleLevel solves max θ s.t. Σ a x ≥ θ·d, Σ x ≤ 1, Σ s x ≤ cap with
// gonum's dense simplex from the slack basis.
func oracleLevel(t *testing.T, in *instance, d []float64) float64 {
	t.Helper()
	n, k := in.n, in.k
	nx := n * k
	cols := nx + 1 + 2*n + k
	rows := 2*n + k
	A := mat.NewDense(rows, cols, nil)
	b := make([]float64, rows)
	c := make([]float64, cols)
	c[nx] = -1
	for m := range n {
		A.Set(m, nx, d[m])
		for j := range k {
			A.Set(m, m*k+j, -in.a[m*k+j])
			A.Set(n+m, m*k+j, 1)
			A.Set(2*n+j, m*k+j, in.scale[m])
		}
		A.Set(m, nx+1+m, 1)
		A.Set(n+m, nx+1+n+m, 1)
		b[n+m] = 1
	}
	for j := range k {
		A.Set(2*n+j, nx+1+2*n+j, 1)
		b[2*n+j] = in.capac[j]
	}
	basic := make([]int, rows)
	for i := range rows {
		basic[i] = nx + 1 + i
	}
	opt, _, err := lp.Simplex(c, A, b, 1e-10, basic)
	if err != nil {
		t.Fatalf("oracle: %v", err)
	}
	return -opt
}

func TestMaxMinMatchesSimplex(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	worst := 0.0
	defer func() { t.Logf("largest relative difference from the simplex: %.2g", worst) }()
	for trial := range 24 {
		n := 2 + rng.IntN(60)
		if trial == 0 {
			n = 100 // the size the simplex oracle is trusted up to
		}
		if raceEnabled || testing.Short() {
			n = min(n, 25)
		}
		k := 1 + rng.IntN(5)
		p := randomProblem(rng, n, k, trial%2 == 0)
		for _, blind := range []bool{false, true} {
			q := p
			if blind {
				q = p.Blind()
			}
			in, err := q.validate()
			if err != nil {
				t.Fatal(err)
			}
			obj := MaxMinFairness{HeterogeneityBlind: blind, EqualTimeShares: trial%3 == 1}
			want := oracleLevel(t, in, obj.demands(in))
			sol, err := Solve(context.Background(), p, obj, nil)
			if err != nil {
				t.Fatal(err)
			}
			rel := math.Abs(sol.Objective-want) / want
			worst = max(worst, rel)
			if rel > 1e-6 {
				t.Errorf("trial %d (n=%d k=%d blind=%v): objective %.9g, simplex %.9g (rel %.2g), bound %.9g, iters %d",
					trial, n, k, blind, sol.Objective, want, rel, sol.Bound, sol.Iterations)
			}
			if sol.Bound < want*(1-1e-9) {
				t.Errorf("trial %d: bound %.9g below optimum %.9g", trial, sol.Bound, want)
			}
			if err := q.CheckAllocation(sol.X, 1e-9); err != nil {
				t.Errorf("trial %d: %v", trial, err)
			}
		}
	}
}

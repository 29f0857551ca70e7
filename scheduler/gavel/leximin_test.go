package gavel

import (
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/gonum/optimize/convex/lp"
)

// lpMax maximises c·x + ct·t over allocations x (n*k) and t ≥ 0 subject to
// thr_m ≥ lo[m] + t·d[m], Σ_j x ≤ 1, capacity, with gonum's two-phase
// simplex. It returns the optimum.
func lpMax(t *testing.T, in *instance, c []float64, ct float64, lo, d []float64) float64 {
	t.Helper()
	n, k := in.n, in.k
	nx := n * k
	cols := nx + 1 + 2*n + k + 1
	rows := 2*n + k + 1
	A := mat.NewDense(rows, cols, nil)
	A.Set(rows-1, nx, 1) // t ≤ 1000 keeps t's column non-zero
	A.Set(rows-1, cols-1, 1)
	b := make([]float64, rows)
	b[rows-1] = 1000
	obj := make([]float64, cols)
	for i, v := range c {
		obj[i] = -v
	}
	obj[nx] = -ct
	for m := range n {
		for j := range k {
			A.Set(m, m*k+j, in.a[m*k+j])
			A.Set(n+m, m*k+j, 1)
			A.Set(2*n+j, m*k+j, in.scale[m])
		}
		A.Set(m, nx, -d[m])
		A.Set(m, nx+1+m, -1) // surplus
		b[m] = lo[m]
		A.Set(n+m, nx+1+n+m, 1)
		b[n+m] = 1
	}
	for j := range k {
		A.Set(2*n+j, nx+1+2*n+j, 1)
		b[2*n+j] = in.capac[j]
	}
	opt, _, err := lp.Simplex(obj, A, b, 1e-10, nil)
	if err != nil {
		t.Fatalf("oracle: %v", err)
	}
	return -opt
}

// leximinOracle computes the leximin (water-filling) shares by the
// textbook method: maximise the common level, then freeze every job whose
// share cannot rise above it while the others keep theirs.
func leximinOracle(t *testing.T, in *instance, d []float64) []float64 {
	n, k := in.n, in.k
	lo := make([]float64, n)
	dd := slices.Clone(d)
	share := make([]float64, n)
	for active := n; active > 0; {
		th := lpMax(t, in, make([]float64, n*k), 1, lo, dd)
		var freeze []int
		for m := range n {
			if dd[m] == 0 {
				continue
			}
			c := make([]float64, n*k)
			for j := range k {
				c[m*k+j] = in.a[m*k+j] / d[m]
			}
			lo2 := slices.Clone(lo)
			d2 := slices.Clone(dd)
			for i := range n {
				if d2[i] > 0 {
					lo2[i] = th * d2[i]
					d2[i] = 0
				}
			}
			if best := lpMax(t, in, c, 0, lo2, d2); best <= th*(1+1e-7) {
				freeze = append(freeze, m)
			}
		}
		if len(freeze) == 0 {
			t.Fatal("oracle froze nothing")
		}
		for _, m := range freeze {
			lo[m], dd[m], share[m] = th*d[m], 0, th
			active--
		}
	}
	return share
}

func TestWaterFillingIsLeximin(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	for trial := range 16 {
		n, k := 2+rng.IntN(7), 1+rng.IntN(3)
		p := randomProblem(rng, n, k, false)
		p.Throughput[0] = make([]float64, k)
		p.Throughput[0][0] = 0.05 // a job stuck on one type, often the bottleneck
		in, err := p.validate()
		if err != nil {
			t.Fatal(err)
		}
		d := MaxMinFairness{}.demands(in)
		want := leximinOracle(t, in, d)
		sol, err := Solve(context.Background(), p, MaxMinFairness{WaterFilling: true}, &Settings{MaxLevels: 20})
		if err != nil {
			t.Fatal(err)
		}
		got, _ := p.NormalizedShares(sol.X)
		slices.Sort(got)
		slices.Sort(want)
		t.Logf("trial %d: n=%d k=%d levels=%d", trial, n, k, sol.Levels)
		// The leximin optimum's sorted share vector is unique.
		for i := range want {
			if math.Abs(got[i]-want[i]) > 1e-6*want[i] {
				t.Errorf("trial %d (n=%d k=%d, %d levels): sorted shares %.6g, leximin %.6g", trial, n, k, sol.Levels, got, want)
				break
			}
		}
	}
}

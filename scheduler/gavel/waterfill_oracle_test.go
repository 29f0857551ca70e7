package gavel

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/gonum/optimize/convex/lp"
)

// leximinClasses is a sequential-LP leximin oracle for Gavel's normalised
// shares (Problem.NormalizedShares), solved with gonum's simplex on the
// problem aggregated by job class: jobs with the same throughput row, scale
// and weight have the same share in the (unique) leximin share vector, so
// one variable per class and type, y[c][j] = Σ over the class's jobs of
// X[m][j], carries the whole problem. Level by level it maximises the
// common share θ of the classes not yet frozen, then freezes every class
// whose share cannot exceed θ while the others keep θ (one LP per class).
// It returns the leximin share of each job.
func leximinClasses(t *testing.T, p Problem) []float64 {
	t.Helper()
	prop := gavelProportional(p)
	norm := make([]float64, len(prop))
	for m := range norm {
		norm[m] = p.Weight[m] * prop[m] / float64(p.Scale[m])
	}
	return leximinClassesOf(t, p, norm, 1e-10)
}

// leximinClassesOf is leximinClasses for the share T·X/norm[m]; each level
// is frozen at (1−shave)·θ, so that later levels stay feasible despite
// rounding in the simplex.
func leximinClassesOf(t *testing.T, p Problem, norm []float64, shave float64) []float64 {
	t.Helper()
	n, k := len(p.Throughput), len(p.Devices)
	// Group identical jobs.
	var rep []int      // class → first job
	var size []float64 // class → jobs
	class := make([]int, n)
	for m := range n {
		c := slices.IndexFunc(rep, func(r int) bool {
			return slices.Equal(p.Throughput[r], p.Throughput[m]) && p.Scale[r] == p.Scale[m] && norm[r] == norm[m]
		})
		if c < 0 {
			c = len(rep)
			rep, size = append(rep, m), append(size, 0)
		}
		class[m] = c
		size[c]++
	}
	nc := len(rep)
	// share_c = Σ_j coef[c][j]·y[c][j].
	coef := make([][]float64, nc)
	for c, m := range rep {
		coef[c] = make([]float64, k)
		for j := range k {
			coef[c][j] = p.Throughput[m][j] / norm[m] / size[c]
		}
	}
	// Rows over nc*k + 1 columns, the last θ.
	cols := nc*k + 1
	thc := nc * k
	base := func() *lpRows {
		r := &lpRows{cols: cols}
		for c := range nc {
			row := make([]float64, cols)
			for j := range k {
				row[c*k+j] = 1
			}
			r.G, r.h = append(r.G, row), append(r.h, size[c])
		}
		for j := range k {
			row := make([]float64, cols)
			for c, m := range rep {
				row[c*k+j] = float64(p.Scale[m])
			}
			r.G, r.h = append(r.G, row), append(r.h, float64(p.Devices[j]))
		}
		return r
	}
	// atLeast adds share_c ≥ lo (+ θ when withTheta).
	atLeast := func(r *lpRows, c int, lo float64, withTheta bool) {
		row := make([]float64, cols)
		for j := range k {
			row[c*k+j] = -coef[c][j]
		}
		if withTheta {
			row[thc] = 1
		}
		r.G, r.h = append(r.G, row), append(r.h, -lo)
	}
	var lastBasis []int // the tableau's final basis, in lpRows.solve's columns
	run := func(r *lpRows, obj []float64, what string) (float64, []float64) {
		best, v, basis, err := tableauMax(obj, r.G, r.h)
		lastBasis = basis
		if err != nil {
			lastBasis = nil
			// Degenerate LPs can cycle numerically; gonum's simplex
			// (slower, with its own Phase I) takes over.
			var err2 error
			best, v, err2 = r.solve(obj)
			if err2 != nil {
				t.Fatalf("leximin oracle %s: tableau: %v; gonum: %v", what, err, err2)
			}
		}
		return best, v
	}
	frozen := make([]bool, nc)
	level := make([]float64, nc)
	for left := nc; left > 0; {
		r := base()
		for c := range nc {
			atLeast(r, c, level[c], !frozen[c])
		}
		th0 := make([]float64, cols) // θ ≤ 1e6 keeps the level bounded
		th0[thc] = 1
		r.G, r.h = append(r.G, th0), append(r.h, 1e6)
		obj := make([]float64, cols)
		obj[thc] = 1
		th, v := run(r, obj, "level")
		// share of each class in an LP solution, to skip classes already
		// seen above θ (they can rise while the others keep θ).
		shareOf := func(v []float64, c int) float64 {
			var s float64
			for j := range k {
				s += coef[c][j] * v[c*k+j]
			}
			return s
		}
		rises := make([]bool, nc)
		mark := func(v []float64) {
			for o := range nc {
				if !frozen[o] && shareOf(v, o) > th*(1+1e-6) {
					rises[o] = true
				}
			}
		}
		mark(v)
		var freeze []int
		least, leastC := math.Inf(1), -1
		for c := range nc {
			if frozen[c] || rises[c] {
				continue
			}
			r := base()
			for o := range nc { // c keeps θ too, so that the solution marks others fairly
				lo := level[o]
				if !frozen[o] {
					lo = th
				}
				atLeast(r, o, lo, false)
			}
			th0 := make([]float64, cols) // θ ≤ 0: unused here, keeps its column non-zero
			th0[thc] = 1
			r.G, r.h = append(r.G, th0), append(r.h, 0)
			obj := make([]float64, cols)
			copy(obj[c*k:c*k+k], coef[c])
			best, v := run(r, obj, "class")
			if best <= th*(1+1e-7) && lastBasis != nil {
				// Before freezing, a second opinion: the tableau can stop
				// short on these degenerate LPs. gonum's simplex, started
				// from the tableau's final basis (the same columns), either
				// confirms it or pivots on to a point where the class rises.
				b2, v2, err := r.solveFrom(obj, lastBasis)
				if err != nil { // the basis is a hair infeasible: gonum's own Phase I
					b2, v2, err = r.solve(obj)
				}
				if err == nil && b2 > best && r.fits(v2) {
					best, v = b2, v2
				}
			}
			if best < least {
				least, leastC = best, c
			}
			if best <= th*(1+1e-7) {
				freeze = append(freeze, c)
			} else {
				mark(v)
			}
		}
		if len(freeze) == 0 {
			if leastC < 0 {
				t.Fatal("leximin oracle froze nothing")
			}
			t.Logf("leximin oracle: no class within 1e-7 of θ %.9g; freezing the least (%.9g)", th, least)
			freeze = []int{leastC}
		}
		for _, c := range freeze {
			frozen[c], level[c] = true, th*(1-shave) // a hair below, so later levels stay feasible
			left--
		}
	}
	out := make([]float64, n)
	for m := range n {
		out[m] = level[class[m]]
	}
	return out
}

// solveFrom is solve from the basic columns basis (structural columns,
// then one slack per row, as solve lays them out): gonum's simplex skips
// its Phase I.
func (r *lpRows) solveFrom(c []float64, basis []int) (best float64, v []float64, err error) {
	defer func() {
		// gonum panics when the basis is a hair infeasible (rounding).
		if p := recover(); p != nil {
			best, v, err = 0, nil, fmt.Errorf("gonum from the tableau's basis: %v", p)
		}
	}()
	rows := len(r.G)
	A := mat.NewDense(rows, r.cols+rows, nil)
	obj := make([]float64, r.cols+rows)
	b := make([]float64, rows)
	for i, row := range r.G {
		sgn := 1.0
		if r.h[i] < 0 {
			sgn = -1
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
	opt, x, err := lp.Simplex(obj, A, b, 1e-11, basis)
	if err != nil {
		return 0, nil, err
	}
	return -opt, x[:r.cols], nil
}

// fits reports whether G·v ≤ h within rounding.
func (r *lpRows) fits(v []float64) bool {
	for i, row := range r.G {
		var s float64
		for q, g := range row {
			s += g * v[q]
		}
		if s > r.h[i]+1e-9*max(1, math.Abs(r.h[i])) {
			return false
		}
	}
	return true
}

// classProblem draws n jobs in the given number of classes of identical
// jobs (so the class oracle stays small), k types, scales 1–8.
func classProblem(rng *rand.Rand, n, classes, k int) Problem {
	base := gavelProblem(rng, classes, k)
	p := Problem{Devices: base.Devices}
	for j := range p.Devices {
		p.Devices[j] = 2 + rng.IntN(n/2)
	}
	for m := range n {
		c := m % classes
		if m < classes {
			c = m
		} else {
			c = rng.IntN(classes)
		}
		p.Throughput = append(p.Throughput, base.Throughput[c])
		s := base.Scale[c]
		if c%5 == 0 {
			s = 8
		}
		p.Scale = append(p.Scale, s)
		p.Weight = append(p.Weight, base.Weight[c])
	}
	return p
}

// TestWaterFillingMatchesLeximinOracle holds water-filling to the
// sequential-LP leximin oracle on a few hundred small random instances
// with up to 6 types and on a handful of instances with ≥ 200 jobs. The
// sorted share vector must match, and the returned X's smallest share
// must not be below the reported Objective.
func TestWaterFillingMatchesLeximinOracle(t *testing.T) {
	small, big := 300, 4
	if raceEnabled || testing.Short() {
		small, big = 120, 2
	}
	rng := rand.New(rand.NewPCG(16, 2))
	worst, worstBig := 0.0, 0.0
	defer func() {
		t.Logf("%d small instances (≤ 32 jobs × ≤ 6 types), largest relative difference from the leximin oracle %.2g", small, worst)
		t.Logf("%d instances of ≥ 200 jobs, largest relative difference %.2g", big, worstBig)
	}()
	for trial := range small + big {
		var p Problem
		if trial < small {
			n, k := 2+rng.IntN(31), 1+rng.IntN(6)
			if trial%3 == 0 {
				k = 5 + rng.IntN(2)
			}
			p = gavelProblem(rng, n, k)
			if trial%2 == 0 {
				p.Throughput[0] = make([]float64, k)
				p.Throughput[0][0] = 0.05 // stuck on one slow type
			}
		} else {
			p = classProblem(rng, 200+rng.IntN(60), 10+rng.IntN(10), 4+rng.IntN(3))
		}
		n, k := len(p.Throughput), len(p.Devices)
		want := leximinClasses(t, p)
		sol, err := Solve(context.Background(), p, MaxMinFairness{WaterFilling: true}, nil)
		if err != nil {
			t.Errorf("trial %d (n=%d k=%d): %v", trial, n, k, err)
			continue
		}
		if err := p.CheckAllocation(sol.X, 1e-9); err != nil {
			t.Errorf("trial %d (n=%d k=%d): %v", trial, n, k, err)
		}
		got, _ := p.NormalizedShares(sol.X)
		if lo := minOf(got); lo < sol.Objective*(1-1e-9) {
			t.Errorf("trial %d (n=%d k=%d): X's smallest share %.9g is below the Objective %.9g", trial, n, k, lo, sol.Objective)
		}
		if trial%10 == 0 { // a capped run stays feasible and keeps its promise too
			capped, err := Solve(context.Background(), p, MaxMinFairness{WaterFilling: true}, &Settings{MaxLevels: 2})
			if err != nil {
				t.Fatalf("trial %d MaxLevels 2: %v", trial, err)
			}
			sh, _ := p.NormalizedShares(capped.X)
			if err := p.CheckAllocation(capped.X, 1e-9); err != nil || minOf(sh) < capped.Objective*(1-1e-9) ||
				gapOf(capped.Objective, sol.Objective) > 1e-7 {
				t.Errorf("trial %d MaxLevels 2: %v, smallest share %.9g, Objective %.9g (uncapped %.9g)",
					trial, err, minOf(sh), capped.Objective, sol.Objective)
			}
		}
		slices.Sort(got)
		slices.Sort(want)
		d := 0.0
		for i := range want {
			d = max(d, math.Abs(got[i]-want[i])/want[i])
		}
		if trial < small {
			worst = max(worst, d)
		} else {
			worstBig = max(worstBig, d)
		}
		if d > 1e-5 {
			t.Errorf("trial %d (n=%d k=%d, %d levels): sorted shares differ from leximin by %.2g (first %.6g vs %.6g)",
				trial, n, k, sol.Levels, d, got[0], want[0])
		}
	}
}

// tableauMax maximises c·v s.t. G·v ≤ h, v ≥ 0 with a dense two-phase
// tableau simplex: slacks for rows with h ≥ 0, surplus and artificial
// columns for the others; Dantzig's rule, Bland's rule after degenerate
// pivots (so it cannot cycle). It is the leximin oracle's LP solver
// (gonum's simplex cycles on some of these degenerate LPs, and its Phase I
// is slow; the max-min, cost and finish-time oracles use gonum).
func tableauMax(c []float64, G [][]float64, h []float64) (float64, []float64, []int, error) {
	m, n := len(G), len(c)
	var arts []int // rows with an artificial
	for i := range m {
		if h[i] < 0 {
			arts = append(arts, i)
		}
	}
	na := len(arts)
	w := n + m + na + 1 // variables, slacks, artificials, rhs
	tab := make([]float64, (m+1)*w)
	basis := make([]int, m)
	for i, row := range G {
		sgn := 1.0
		if h[i] < 0 {
			sgn = -1
		}
		for q, v := range row {
			tab[i*w+q] = sgn * v
		}
		tab[i*w+n+i] = sgn
		tab[i*w+w-1] = sgn * h[i]
		basis[i] = n + i
	}
	for a, i := range arts {
		tab[i*w+n+m+a] = 1
		basis[i] = n + m + a
	}
	z := tab[m*w:]
	pivot := func(leave, enter int) {
		prow := tab[leave*w : leave*w+w]
		f := 1 / prow[enter]
		for q := range prow {
			prow[q] *= f
		}
		for i := range m + 1 {
			if i == leave {
				continue
			}
			row := tab[i*w : i*w+w]
			if g := row[enter]; g != 0 {
				for q := range row {
					row[q] -= g * prow[q]
				}
				row[enter] = 0
			}
		}
		basis[leave] = enter
	}
	simplex := func(ncols int, eps float64) error {
		degenerate := 0
		for iter := 0; ; iter++ {
			if iter > 200000 {
				return errors.New("tableau: pivot limit")
			}
			enter, best := -1, -eps
			for j := range ncols {
				if z[j] < best {
					enter, best = j, z[j]
					if degenerate > 20 {
						break // Bland: the first improving column
					}
				}
			}
			if enter < 0 {
				return nil
			}
			leave, ratio := -1, math.Inf(1)
			for i := range m {
				if a := tab[i*w+enter]; a > 1e-12 {
					r := tab[i*w+w-1] / a
					if r < ratio-1e-14 || r <= ratio+1e-14 && basis[i] < basis[leave] {
						leave, ratio = i, r
					}
				}
			}
			if leave < 0 {
				return errors.New("tableau: unbounded")
			}
			if ratio <= 1e-14 {
				degenerate++
			} else {
				degenerate = 0
			}
			pivot(leave, enter)
		}
	}
	if na > 0 { // Phase I: maximise −Σ artificials
		for _, i := range arts {
			for q := range n + m {
				z[q] -= tab[i*w+q]
			}
			z[w-1] -= tab[i*w+w-1]
		}
		if err := simplex(n+m+na, 1e-11); err != nil {
			return 0, nil, nil, err
		}
		if z[w-1] < -1e-9 {
			return 0, nil, nil, errors.New("tableau: infeasible")
		}
		for i, b := range basis { // drive zero artificials out of the basis
			if b < n+m {
				continue
			}
			for q := range n + m {
				if math.Abs(tab[i*w+q]) > 1e-9 {
					pivot(i, q)
					break
				}
			}
		}
	}
	clear(z)
	for j, v := range c {
		z[j] = -v
	}
	for i, b := range basis {
		if g := z[b]; g != 0 {
			for q := range w {
				z[q] -= g * tab[i*w+q]
			}
		}
	}
	scale := 1e-300
	for _, v := range c {
		scale = max(scale, math.Abs(v))
	}
	if err := simplex(n+m, 1e-11*scale); err != nil {
		return 0, nil, nil, err
	}
	x := make([]float64, n)
	for i, b := range basis {
		if b < n {
			x[b] = max(tab[i*w+w-1], 0)
		}
	}
	var opt float64
	for j, v := range c {
		opt += v * x[j]
	}
	for _, b := range basis {
		if b >= n+m {
			return opt, x, nil, nil // an artificial stayed basic (at zero)
		}
	}
	return opt, x, slices.Clone(basis), nil
}

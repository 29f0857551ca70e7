package gavel

import (
	"errors"
	"math"
)

// column is one point of the aggregated Dantzig–Wolfe master: an allocation
// that meets every job's demand row on its own, with its objective value and
// its device use per type. Response columns are stored by the prices and
// level that produced them and rebuilt on demand; explicit ones carry X.
type column struct {
	obj    float64
	use    []float64 // k
	theta  float64
	lambda []float64 // prices of a response column
	x      []float64 // n*k for an explicit column
}

// master is the restricted master LP
//
//	maximise Σ_i μ_i·obj_i  s.t.  Σ_i μ_i·use_i ≤ cap,  Σ_i μ_i = 1,  μ ≥ 0,
//
// solved by a dense revised simplex over its k+1 rows. Its duals are the
// device prices of the next pricing step. Not safe for concurrent use.
type master struct {
	k     int
	capac []float64
	cols  []column
	basis []int // k+1 entries: j < k is the slack of row j, k+i is cols[i]
	inB   []bool
	binv  []float64
	bmat  []float64
	xb    []float64
	y     []float64
	vec   []float64
	dir   []float64
	scale float64
}

var errMaster = errors.New("gavel: master LP failed")

func newMaster(capac []float64, first column) *master {
	k := len(capac)
	r := k + 1
	ms := &master{k: k, capac: capac, basis: make([]int, r), binv: make([]float64, r*r),
		bmat: make([]float64, r*r), xb: make([]float64, r), y: make([]float64, r),
		vec: make([]float64, r), dir: make([]float64, r), scale: 1e-300}
	for j := range k {
		ms.basis[j] = j
	}
	ms.basis[k] = k
	ms.add(first)
	return ms
}

func (ms *master) add(c column) {
	ms.cols = append(ms.cols, c)
	ms.inB = append(ms.inB, false)
	if len(ms.inB) < ms.k+len(ms.cols) {
		ms.inB = append(ms.inB, make([]bool, ms.k+len(ms.cols)-len(ms.inB))...)
	}
	ms.scale = max(ms.scale, math.Abs(c.obj))
}

// colVec writes column q's constraint vector into out and returns its cost.
func (ms *master) colVec(q int, out []float64) float64 {
	clear(out)
	if q < ms.k {
		out[q] = 1
		return 0
	}
	c := &ms.cols[q-ms.k]
	copy(out, c.use)
	out[ms.k] = 1
	return c.obj
}

func (ms *master) cost(q int) float64 {
	if q < ms.k {
		return 0
	}
	return ms.cols[q-ms.k].obj
}

// factor inverts the basis matrix (Gauss–Jordan with partial pivoting) and
// computes the basic solution and the duals.
func (ms *master) factor() error {
	r := ms.k + 1
	for p, q := range ms.basis {
		ms.colVec(q, ms.vec)
		for i := range r {
			ms.bmat[i*r+p] = ms.vec[i]
		}
	}
	inv := ms.binv
	clear(inv)
	for i := range r {
		inv[i*r+i] = 1
	}
	a := ms.bmat
	for c := range r {
		piv, best := -1, 0.0
		for i := c; i < r; i++ {
			if v := math.Abs(a[i*r+c]); v > best {
				piv, best = i, v
			}
		}
		if piv < 0 || best < 1e-13 {
			return errMaster
		}
		if piv != c {
			for j := range r {
				a[c*r+j], a[piv*r+j] = a[piv*r+j], a[c*r+j]
				inv[c*r+j], inv[piv*r+j] = inv[piv*r+j], inv[c*r+j]
			}
		}
		f := 1 / a[c*r+c]
		for j := range r {
			a[c*r+j] *= f
			inv[c*r+j] *= f
		}
		for i := range r {
			if i == c {
				continue
			}
			if g := a[i*r+c]; g != 0 {
				for j := range r {
					a[i*r+j] -= g * a[c*r+j]
					inv[i*r+j] -= g * inv[c*r+j]
				}
			}
		}
	}
	for i := range r {
		var s float64
		for j := range ms.k {
			s += inv[i*r+j] * ms.capac[j]
		}
		s += inv[i*r+ms.k]
		ms.xb[i] = s
	}
	for i := range r {
		var s float64
		for p, q := range ms.basis {
			s += ms.cost(q) * inv[p*r+i]
		}
		ms.y[i] = s
	}
	return nil
}

// solve runs primal simplex pivots from the current (feasible) basis to
// optimality within a relative 1e-10: Dantzig pricing, Bland's rule after
// degenerate pivots, and a pivot limit against numerical cycling. A pivot
// that would make the basis singular or infeasible (rounding, with many
// nearly parallel columns) is undone and its entering column set aside for
// this solve, so the basis stays feasible: its value is always a valid
// lower bound and its duals valid prices.
func (ms *master) solve() error {
	r := ms.k + 1
	for q := range ms.inB {
		ms.inB[q] = false
	}
	for _, q := range ms.basis {
		ms.inB[q] = true
	}
	banned := make([]bool, ms.k+len(ms.cols))
	eps := 1e-10 * ms.scale
	degenerate := 0
	if err := ms.factor(); err != nil || !ms.feasible() {
		// The warm basis no longer fits (rounding); restart from the first
		// column and the slacks, which always fit.
		for j := range ms.k {
			ms.basis[j] = j
		}
		ms.basis[ms.k] = ms.k
		for q := range ms.inB {
			ms.inB[q] = false
		}
		for _, q := range ms.basis {
			ms.inB[q] = true
		}
		if err := ms.factor(); err != nil {
			return err
		}
	}
	ms.clip()
	for range 50 * (r + len(ms.cols)) {
		bland := degenerate > 8
		enter, best := -1, eps
		for q := range ms.k + len(ms.cols) {
			if ms.inB[q] || banned[q] {
				continue
			}
			rc := ms.colVec(q, ms.vec)
			for i, v := range ms.vec {
				rc -= ms.y[i] * v
			}
			if rc > best {
				enter, best = q, rc
				if bland {
					break
				}
			}
		}
		if enter < 0 {
			return nil
		}
		ms.colVec(enter, ms.vec)
		var dmax float64
		for i := range r {
			var s float64
			for j := range r {
				s += ms.binv[i*r+j] * ms.vec[j]
			}
			ms.dir[i] = s
			dmax = max(dmax, math.Abs(s))
		}
		// Harris' two-pass ratio test: the smallest ratio with the basic
		// values relaxed by a rounding tolerance, then among the rows within
		// it the largest pivot (tiny pivots make the next basis
		// ill-conditioned); ties by basis index (Bland).
		piv := 1e-9 * max(dmax, 1)
		bound := math.Inf(1)
		for i := range r {
			if ms.dir[i] > piv {
				bound = min(bound, (ms.xb[i]+1e-12)/ms.dir[i])
			}
		}
		leave, ratio := -1, math.Inf(1)
		for i := range r {
			if d := ms.dir[i]; d > piv && ms.xb[i]/d <= bound {
				if leave < 0 || d > ms.dir[leave]*(1+1e-12) || (d >= ms.dir[leave]*(1-1e-12) && ms.basis[i] < ms.basis[leave]) {
					leave, ratio = i, max(ms.xb[i]/d, 0)
				}
			}
		}
		if leave < 0 {
			banned[enter] = true // unbounded is impossible with Σμ = 1: rounding
			continue
		}
		old := ms.basis[leave]
		ms.inB[old] = false
		ms.basis[leave] = enter
		ms.inB[enter] = true
		if err := ms.factor(); err != nil || !ms.feasible() {
			ms.basis[leave] = old
			ms.inB[enter] = false
			ms.inB[old] = true
			banned[enter] = true
			if err := ms.factor(); err != nil {
				return err
			}
			ms.clip()
			continue
		}
		ms.clip()
		if ratio < 1e-14 {
			degenerate++
		} else {
			degenerate = 0
		}
	}
	// Pivot limit (numerical cycling): the basis is still feasible, so its
	// value is a valid lower bound and its duals valid prices.
	return nil
}

// feasible reports whether the basic solution is non-negative within
// rounding, measured on the scale of the capacities (the columns that
// start a level may overuse a type by rounding noise).
func (ms *master) feasible() bool {
	top := 1.0
	for _, c := range ms.capac {
		top = max(top, c)
	}
	for _, v := range ms.xb {
		if v < -1e-6*top {
			return false
		}
	}
	return true
}

// clip sets the rounding-level negative basic values to 0.
func (ms *master) clip() {
	for i, v := range ms.xb {
		ms.xb[i] = max(v, 0)
	}
}

// value returns the master objective at the current basis.
func (ms *master) value() float64 {
	var v float64
	for p, q := range ms.basis {
		v += ms.cost(q) * ms.xb[p]
	}
	return v
}

// negativePrice reports whether a capacity dual is below zero beyond
// rounding: the slack of that row would enter, so the basis is not optimal.
func (ms *master) negativePrice() bool {
	for j := range ms.k {
		if ms.y[j] < -1e-9*max(ms.scale, 1) {
			return true
		}
	}
	return false
}

// prices returns the capacity duals (clipped at 0) and the convexity dual.
func (ms *master) prices(lambda []float64) (sigma float64) {
	for j := range ms.k {
		lambda[j] = max(ms.y[j], 0)
	}
	return ms.y[ms.k]
}

// weights returns, for each stored column, its weight μ in the current
// basis, rescaled to sum to 1 (rounding can leave Σμ a hair off, and the
// demand rows hold for convex combinations only).
func (ms *master) weights() []float64 {
	mu := make([]float64, len(ms.cols))
	var sum float64
	for p, q := range ms.basis {
		if q >= ms.k {
			mu[q-ms.k] = max(ms.xb[p], 0)
			sum += mu[q-ms.k]
		}
	}
	if sum > 0 {
		for i := range mu {
			mu[i] /= sum
		}
	}
	return mu
}

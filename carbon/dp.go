package carbon

import (
	"fmt"
	"math"
)

// maxDPCells bounds the DP tables so a huge instance fails cleanly
// instead of exhausting memory.
const maxDPCells = 10_000_000

// maxTopQuanta bounds the quanta in one full-scale slot (they index
// int32 fields of the DP's choices): a job shorter than Resolution/2^30 of
// such a slot gets fewer quanta than Resolution.
const maxTopQuanta = 1 << 30

// defaultResolution is the Resolution that 0 selects.
const defaultResolution = 2000

// quanta returns the work quantum and the number of quanta the job needs:
// Resolution quanta for the whole job, whatever its length against one
// slot at full scale. cells is the DP's table cells per quantum; with the
// default Resolution the quanta are reduced so the table stays within
// maxDPCells (an explicit Resolution is honoured, and the DP refuses a
// table too large).
func (p *problem) quanta(cells int64) (delta float64, need int) {
	res := p.opts.Resolution
	if res == 0 {
		res = defaultResolution
		if fit := maxDPCells/max(cells, 1) - 2; fit < int64(res) {
			res = int(max(fit, 1))
		}
	}
	top := p.work[len(p.work)-1]
	delta = max(p.need/float64(res), top/maxTopQuanta)
	// Make the top scale a whole number of quanta, so that a job that fits
	// at full scale still fits after rounding.
	delta = top / math.Ceil(top/delta)
	need = int(math.Ceil(p.need/delta - 1e-9))
	return delta, max(need, 1)
}

// dp solves the plan by dynamic programming over slots and quantised work.
// Work per scale is rounded down to whole quanta, so the plan is never
// short; trim then removes the excess.
func (p *problem) dp() ([]alloc, error) {
	if p.opts.ChangeCostG > 0 {
		plans, err := p.dpChanges()
		if err != nil {
			return nil, err
		}
		var best []alloc
		bestCost := math.Inf(1)
		for _, a := range plans {
			p.trimChanges(a)
			if c := p.totalCost(a); c < bestCost {
				best, bestCost = a, c
			}
		}
		// DP's quanta round each level's work down: a whole-scale plan that
		// fits by less than that rounding is invisible to it. The exact
		// search finds it when it is cheaper.
		if a := p.bestWhole(bestCost); a != nil {
			p.trimChanges(a)
			if c := p.totalCost(a); c < bestCost {
				best = a
			}
		}
		return best, nil
	}
	a, err := p.dpFractional()
	if err != nil {
		return nil, err
	}
	p.trim(a)
	return a, nil
}

// totalCost is the forecast carbon plus the change cost of allocations a
// (the transitions as changes counts them).
func (p *problem) totalCost(a []alloc) float64 {
	var carbon float64
	units := 0
	prev := p.opts.InitialScale
	for t, x := range a {
		carbon += p.slotKWh(x) * p.ci[t]
		units += changeCost(prev, p.levels[x.j])
		prev = p.levels[x.j]
		if x.j > 0 && x.f < 1 {
			units += changeCost(prev, p.levels[x.lower()])
			prev = p.levels[x.lower()]
		}
	}
	return carbon + float64(units)*p.opts.ChangeCostG
}

// dpFinish is dpChanges' best plan that ends part way through slot t at
// level j for fraction f, from state (level i, quanta q) of slot t-1.
type dpFinish struct {
	cost       float64
	t, i, q, j int
	f          float64
}

type dpChoice struct {
	prevQ int32
	j     int32 // level index taken in this slot
	frac  int32 // quanta of a fractional step on piece j, 0 for a whole level
	fromA bool  // for layer B: came from layer A (the fractional slot)
}

// dpFractional allows, besides whole scales, one slot that runs part way
// between two neighbouring scales (the exact optimum has at most one).
func (p *problem) dpFractional() ([]alloc, error) {
	n, L := len(p.ci), len(p.levels)
	delta, Q := p.quanta(int64(n) * 2)
	if int64(n)*int64(Q+1)*2 > maxDPCells {
		return nil, fmt.Errorf("%w: DP table of %d slots × %d quanta is too large; lower ScheduleOptions.Resolution", ErrInvalid, n, Q+1)
	}
	qk := make([]int, L)
	for j := range L {
		qk[j] = int(math.Floor(p.work[j]/delta + 1e-9))
	}
	inf := math.Inf(1)
	A, B := make([]float64, Q+1), make([]float64, Q+1)
	nA, nB := make([]float64, Q+1), make([]float64, Q+1)
	for q := range A {
		A[q], B[q] = inf, inf
	}
	A[0] = 0
	chA := make([][]dpChoice, n)
	chB := make([][]dpChoice, n)
	for t := range n {
		chA[t] = make([]dpChoice, Q+1)
		chB[t] = make([]dpChoice, Q+1)
		for q := range nA {
			nA[q], nB[q] = inf, inf
		}
		p.wholeStep(t, A, nA, chA[t], qk)
		p.wholeStep(t, B, nB, chB[t], qk)
		p.fractionalStep(t, A, nB, chB[t], delta, Q)
		A, nA = nA, A
		B, nB = nB, B
	}
	inB := B[Q] < A[Q]
	if math.IsInf(min(A[Q], B[Q]), 1) {
		return nil, &InfeasibleError{Need: p.need, Fits: float64(n) * p.work[L-1], Slots: n}
	}
	a := make([]alloc, n)
	q := Q
	for t := n - 1; t >= 0; t-- {
		var c dpChoice
		if inB {
			c = chB[t][q]
		} else {
			c = chA[t][q]
		}
		j := int(c.j)
		if c.frac > 0 {
			w := float64(c.frac) * delta
			f := (w - p.work[j-1]) / (p.work[j] - p.work[j-1])
			a[t] = alloc{j: j, f: min(max(f, 0), 1)}
		} else {
			a[t] = alloc{j: j, f: 1}
		}
		if c.fromA {
			inB = false
		}
		q = int(c.prevQ)
	}
	return a, nil
}

// wholeStep extends every reachable state of from by slot t at a whole
// scale into to (quanta capped at the last), recording the best choice per
// state in ch.
func (p *problem) wholeStep(t int, from, to []float64, ch []dpChoice, qk []int) {
	Q, ci := len(from)-1, p.ci[t]
	for q, c0 := range from {
		if math.IsInf(c0, 1) {
			continue
		}
		for j, k := range qk {
			nq := min(q+k, Q)
			if c := c0 + ci*p.kwh[j]; c < to[nq] {
				to[nq] = c
				ch[nq] = dpChoice{prevQ: int32(q), j: int32(j)}
			}
		}
	}
}

// dpChanges solves with a change cost: the state is (scale, quanta), whole
// scales only, plus the plans that finish part way through a slot (its
// scale for the fraction the remaining quanta need, then suspended, which
// is free, and nothing after): the trim could find those only from a
// whole-scale optimum that had paid for the full slot.
func (p *problem) dpChanges() ([][]alloc, error) {
	n, L := len(p.ci), len(p.levels)
	delta, Q := p.quanta(int64(n) * int64(L))
	if int64(n)*int64(L)*int64(Q+1) > maxDPCells {
		return nil, fmt.Errorf("%w: DP table of %d slots × %d scales × %d quanta is too large; lower ScheduleOptions.Resolution", ErrInvalid, n, L, Q+1)
	}
	qk := make([]int, L)
	for j := range L {
		qk[j] = int(math.Floor(p.work[j]/delta + 1e-9))
	}
	inf := math.Inf(1)
	cc := p.opts.ChangeCostG
	fin := dpFinish{cost: inf, t: -1}
	cur := make([][]float64, L)
	next := make([][]float64, L)
	for j := range L {
		cur[j], next[j] = make([]float64, Q+1), make([]float64, Q+1)
	}
	// prev[t][j][q] is the level index in slot t-1 (-1 at t = 0) and
	// prevQ[t][j][q] its quanta.
	prev := make([][][]int32, n)
	prevQ := make([][][]int32, n)
	for t := range n {
		prev[t] = make([][]int32, L)
		prevQ[t] = make([][]int32, L)
		for j := range L {
			prev[t][j] = make([]int32, Q+1)
			prevQ[t][j] = make([]int32, Q+1)
			for q := range next[j] {
				next[j][q] = inf
			}
		}
		ci := p.ci[t]
		// finish records a plan that ends in slot t at level j from state
		// (i, q) of slot t-1 (i = -1: the start).
		finish := func(c0 float64, i, q, j, from int) {
			if j == 0 || q+qk[j] < Q || q >= Q {
				return
			}
			f := min(float64(Q-q)*delta/p.work[j], 1)
			if c := c0 + f*ci*p.kwh[j] + cc*float64(changeCost(from, p.levels[j])); c < fin.cost {
				fin = dpFinish{cost: c, t: t, i: i, q: q, j: j, f: f}
			}
		}
		for j := range L {
			step := ci * p.kwh[j]
			if t == 0 {
				nq := min(qk[j], Q)
				next[j][nq] = step + cc*float64(changeCost(p.opts.InitialScale, p.levels[j]))
				prev[t][j][nq] = -1
				finish(0, -1, 0, j, p.opts.InitialScale)
				continue
			}
			for i := range L {
				move := step + cc*float64(changeCost(p.levels[i], p.levels[j]))
				row := cur[i]
				for q := 0; q <= Q; q++ {
					if row[q] == inf {
						continue
					}
					nq := min(q+qk[j], Q)
					if c := row[q] + move; c < next[j][nq] {
						next[j][nq] = c
						prev[t][j][nq] = int32(i)
						prevQ[t][j][nq] = int32(q)
					}
					if nq == Q {
						finish(row[q], i, q, j, p.levels[i])
					}
				}
			}
		}
		cur, next = next, cur
	}
	bj, best := -1, inf
	for j := range L {
		if cur[j][Q] < best {
			bj, best = j, cur[j][Q]
		}
	}
	if bj < 0 && fin.t < 0 {
		return nil, &InfeasibleError{Need: p.need, Fits: float64(n) * p.work[L-1], Slots: n}
	}
	// Both plans go to the trim: cutting the whole-scale optimum can beat
	// the finishing plan (an early slot cut and the job resumed later).
	path := func(a []alloc, last, j, q int) []alloc {
		for t := last; t >= 0; t-- {
			a[t] = alloc{j: j, f: 1}
			pj, pq := int(prev[t][j][q]), int(prevQ[t][j][q])
			j, q = pj, pq
		}
		return a
	}
	var plans [][]alloc
	if bj >= 0 {
		plans = append(plans, path(make([]alloc, n), n-1, bj, Q))
	}
	if fin.t >= 0 && fin.cost < best {
		// Finish in slot fin.t; the slots after it stay suspended.
		a := make([]alloc, n)
		a[fin.t] = alloc{j: fin.j, f: fin.f, stop: fin.f < 1}
		plans = append(plans, path(a, fin.t-1, fin.i, fin.q))
	}
	return plans, nil
}

// fractionalStep relaxes layer B of slot t with one fractional step from
// layer A: f quanta on piece j-1 -> j cost α + β·f, so for each target r
// the best source is the minimum of A[q] - β·q over the window
// q ∈ [r-fHi, r-fLo], kept in a monotone deque: O(Q) per piece. The
// capped target Q takes the smallest f that reaches it.
func (p *problem) fractionalStep(t int, A, nB []float64, ch []dpChoice, delta float64, Q int) {
	ci := p.ci[t]
	inf := math.Inf(1)
	dq := make([]int, 0, Q+1)
	for j := 1; j < len(p.levels); j++ {
		lo, hi := p.work[j-1]/delta, p.work[j]/delta
		fLo, fHi := int(math.Floor(lo))+1, int(math.Ceil(hi))-1
		if fLo > fHi || p.work[j] <= p.work[j-1] {
			continue
		}
		slope := (p.kwh[j] - p.kwh[j-1]) / (p.work[j] - p.work[j-1])
		alpha := ci * (p.kwh[j-1] - p.work[j-1]*slope)
		beta := ci * slope * delta
		g := func(q int) float64 { return A[q] - beta*float64(q) }
		dq = dq[:0]
		head := 0 // dq[head:] is the window's deque
		next := 0 // next q to enter the window
		for r := fLo; r < Q; r++ {
			for ; next <= r-fLo; next++ {
				if A[next] == inf {
					continue
				}
				for len(dq) > head && g(dq[len(dq)-1]) >= g(next) {
					dq = dq[:len(dq)-1]
				}
				dq = append(dq, next)
			}
			for len(dq) > head && dq[head] < r-fHi {
				head++
			}
			if len(dq) == head {
				continue
			}
			q := dq[head]
			if c := g(q) + alpha + beta*float64(r); c < nB[r] {
				nB[r] = c
				ch[r] = dpChoice{prevQ: int32(q), j: int32(j), frac: int32(r - q), fromA: true}
			}
		}
		for q := max(0, Q-fHi); q <= Q; q++ {
			if A[q] == inf {
				continue
			}
			f := max(Q-q, fLo)
			if c := A[q] + alpha + beta*float64(f); c < nB[Q] {
				nB[Q] = c
				ch[Q] = dpChoice{prevQ: int32(q), j: int32(j), frac: int32(f), fromA: true}
			}
		}
	}
}

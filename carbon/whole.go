package carbon

import (
	"math"
	"slices"
)

// maxWholeNodes bounds the exact whole-scale search (nodes visited), so a
// long plan with many near-ties costs milliseconds, not minutes; a search
// cut short keeps the best plan found, which is never worse than DP's.
const maxWholeNodes = 200_000

// wholeQuanta is the resolution of bestWhole's bound: the job's work in
// this many quanta.
const wholeQuanta = 500

// bestWhole is the exact search over whole-scale plans (every slot at one
// level of the curve for the whole slot) for the least carbon plus change
// cost that does at least the work needed, below incumbent. DP rounds
// each level's work down to whole quanta, so it never sees a whole-scale
// plan that fits only by less than the rounding it lost; this search
// tracks the exact work, and prunes with an optimistic cost-to-go: the
// same DP backwards with each level's work rounded up (so it needs at most
// as many quanta as any plan that truly fits). It returns nil when no
// whole-scale plan beats incumbent, or when the search was cut short
// without finding one.
func (p *problem) bestWhole(incumbent float64) []alloc {
	n, L := len(p.ci), len(p.levels)
	// The bound's quanta: coarser than DP's (the search is exact whatever
	// the bound's resolution; a coarser one only prunes less).
	Q := wholeQuanta
	delta := p.need / float64(Q)
	cc := p.opts.ChangeCostG
	qc := make([]int, L) // each level's work in quanta, rounded up
	for j := range L {
		qc[j] = int(math.Ceil(p.work[j]/delta - 1e-9))
	}
	// V[t][i][r]: the least cost of slots t.. after level i (L: the start,
	// InitialScale) that do r more quanta, each level counted as qc.
	inf := math.Inf(1)
	V := make([][][]float64, n+1)
	for t := range V {
		V[t] = make([][]float64, L+1)
	}
	V[n][0] = make([]float64, Q+1)
	for r := 1; r <= Q; r++ {
		V[n][0][r] = inf
	}
	for i := 1; i <= L; i++ {
		V[n][i] = V[n][0] // the same row: nothing after the last slot
	}
	prevScale := func(i int) int {
		if i == L {
			return p.opts.InitialScale
		}
		return p.levels[i]
	}
	// The change cost from scale a to a running scale b is cc·|b−a|, and
	// suspending is free, so the minimum over the next level j for every
	// previous level is two sweeps over the (ascending) scales: O(L) per
	// quantum, not O(L²).
	W := make([][]float64, L) // W[j][r]: slot t at level j, then V[t+1][j]
	fwd := make([]float64, L) // sweep scratch
	for t := n - 1; t >= 0; t-- {
		for j := range L {
			if W[j] == nil {
				W[j] = make([]float64, Q+1)
			}
			step := p.ci[t] * p.kwh[j]
			nextRow := V[t+1][j]
			for r := range W[j] {
				W[j][r] = step + nextRow[max(r-qc[j], 0)]
			}
		}
		rows := L
		if t == 0 {
			rows = L + 1 // and the start
		}
		for i := range rows {
			V[t][i] = make([]float64, Q+1)
		}
		for r := 0; r <= Q; r++ {
			// forward: fwd[j] = min over j' ≤ j, j' ≥ 1, of W[j'] + cc·(s_j − s_j')
			for j := 1; j < L; j++ {
				fwd[j] = W[j][r]
				if j > 1 {
					fwd[j] = min(fwd[j], fwd[j-1]+cc*float64(p.levels[j]-p.levels[j-1]))
				}
			}
			bwd := inf // min over j' ≥ j of W[j'] + cc·(s_j' − s_j)
			for j := L - 1; j >= 1; j-- {
				if j < L-1 {
					bwd += cc * float64(p.levels[j+1]-p.levels[j])
				}
				bwd = min(bwd, W[j][r])
				V[t][j][r] = min(W[0][r], fwd[j], bwd)
			}
			// from suspended (scale 0): every running scale pays its size
			best0 := W[0][r]
			for j := 1; j < L; j++ {
				best0 = min(best0, W[j][r]+cc*float64(p.levels[j]))
			}
			V[t][0][r] = best0
			if t == 0 {
				v := inf
				for j := range L {
					v = min(v, W[j][r]+cc*float64(changeCost(p.opts.InitialScale, p.levels[j])))
				}
				V[0][L][r] = v
			}
		}
	}
	quanta := func(need float64) int {
		if need <= 0 {
			return 0
		}
		return min(int(math.Floor(need/delta*(1-1e-12))), Q)
	}
	best := incumbent * (1 - 1e-12)
	if V[0][L][quanta(p.need)] >= best {
		return nil // even the optimistic bound does not beat DP's plan
	}
	var found []int
	path := make([]int, n)
	nodes := 0
	order := make([][]int, n) // per slot: the levels, cheapest first
	for t := range n {
		order[t] = make([]int, L)
		for j := range L {
			order[t][j] = L - 1 - j // fastest first: plans that fit come early
		}
	}
	var dfs func(t, i int, cost, need float64)
	dfs = func(t, i int, cost, need float64) {
		nodes++
		if t == n {
			if need <= p.need*1e-12 && cost < best {
				best = cost
				found = slices.Clone(path)
			}
			return
		}
		for _, j := range order[t] {
			if nodes > maxWholeNodes {
				return
			}
			c := cost + p.ci[t]*p.kwh[j] + cc*float64(changeCost(prevScale(i), p.levels[j]))
			rest := need - p.work[j]
			if c+V[t+1][j][quanta(rest)] >= best {
				continue
			}
			path[t] = j
			dfs(t+1, j, c, rest)
		}
	}
	dfs(0, L, 0, p.need)
	if found == nil {
		return nil
	}
	a := make([]alloc, n)
	for t, j := range found {
		a[t] = alloc{j: j, f: 1}
	}
	return a
}

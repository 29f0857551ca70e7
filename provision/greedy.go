package provision

import (
	"math"

	"github.com/goodsched/goodsched/carbon"
)

// greedy is carbon.Schedule's Greedy method (CarbonScaler's marginal
// allocation over the curve's concave hull, the one fractional slot mapped
// back onto neighbouring scales) on buffers reused across the jobs of one
// decision: the same plan, step for step and tie for tie, without
// building a carbon.Plan. TestGreedyMatchesSchedule holds it to
// carbon.Schedule.
type greedy struct {
	levels, hull []int
	work, kwh    []float64
	j            []int
	f            []float64
	key          []float64
	heap         []int
	lim          []int
}

// plan plans work units of curve c from minScale (0 = 1) in the first n
// slots of ci (g/kWh) of sec seconds each, slot t at most at scale
// slotMax[t] when slotMax is set (carbon.ScheduleOptions.SlotMaxScale);
// it returns false when the work does not fit. After it, scale(t) and lower(t) and fraction(t) give
// slot t's plan as carbon.Slot's Scale, Lower and Fraction.
func (g *greedy) plan(ci []float64, n int, sec float64, c carbon.Curve, minScale int, work, pue float64, slotMax []int) bool {
	minS := max(minScale, 1)
	maxS := c.MaxScale()
	g.levels = append(g.levels[:0], 0)
	for k := minS; k <= maxS; k++ {
		g.levels = append(g.levels, k)
	}
	g.work, g.kwh = g.work[:0], g.kwh[:0]
	for _, k := range g.levels {
		g.work = append(g.work, c.WorkPerSecond[k]*sec)
		g.kwh = append(g.kwh, c.Watts[k]*sec/3.6e6*pue)
	}
	fits := 0.0
	for t := range n {
		j := len(g.levels) - 1
		if t < len(slotMax) {
			for j > 0 && g.levels[j] > slotMax[t] {
				j--
			}
		}
		fits += g.work[j]
	}
	if fits < work*(1-1e-12) {
		return false
	}
	// The concave hull, as carbon's (with the levels on its segments
	// under slot bounds).
	g.hull = append(g.hull[:0], 0)
	for j := 1; j < len(g.levels); j++ {
		if g.work[j] <= g.work[g.hull[len(g.hull)-1]] {
			continue
		}
		for len(g.hull) >= 2 {
			a, b := g.hull[len(g.hull)-2], g.hull[len(g.hull)-1]
			lhs := (g.kwh[b] - g.kwh[a]) * (g.work[j] - g.work[a])
			rhs := (g.kwh[j] - g.kwh[a]) * (g.work[b] - g.work[a])
			if lhs < rhs*(1-1e-12) || (slotMax != nil && lhs <= rhs*(1+1e-12)) {
				break
			}
			g.hull = g.hull[:len(g.hull)-1]
		}
		g.hull = append(g.hull, j)
	}
	g.j, g.f, g.key = resize(g.j, n), resizeF(g.f, n), resizeF(g.key, n)
	clear(g.j)
	clear(g.f)
	L := len(g.hull)
	score := func(t int) float64 {
		j := g.j[t] + 1
		dw := g.work[g.hull[j]] - g.work[g.hull[j-1]]
		dk := (g.kwh[g.hull[j]] - g.kwh[g.hull[j-1]]) * ci[t]
		switch {
		case dw <= 0:
			return 0
		case dk <= 0:
			return math.Inf(1)
		}
		return dw / dk
	}
	g.lim = resize(g.lim, n)
	for t := range n {
		g.lim[t] = L - 1
		if t < len(slotMax) {
			for g.lim[t] > 0 && g.levels[g.hull[g.lim[t]]] > slotMax[t] {
				g.lim[t]--
			}
		}
	}
	g.heap = g.heap[:0]
	for t := range n {
		if g.lim[t] == 0 {
			continue
		}
		g.key[t] = score(t)
		g.heap = append(g.heap, t)
	}
	for i := len(g.heap)/2 - 1; i >= 0; i-- {
		g.down(i)
	}
	remaining := work
	eps := work * 1e-12
	for remaining > eps {
		if len(g.heap) == 0 {
			return false
		}
		t := g.heap[0]
		last := len(g.heap) - 1
		g.heap[0] = g.heap[last]
		g.heap = g.heap[:last]
		if last > 0 {
			g.down(0)
		}
		j := g.j[t] + 1
		dw := g.work[g.hull[j]] - g.work[g.hull[j-1]]
		if dw >= remaining && dw > 0 {
			g.j[t], g.f[t] = j, remaining/dw
			break
		}
		g.j[t], g.f[t] = j, 1
		remaining -= dw
		if j+1 <= g.lim[t] {
			g.key[t] = score(t)
			g.heap = append(g.heap, t)
			g.up(len(g.heap) - 1)
		}
	}
	// Map the fractional slot back onto neighbouring levels, as
	// carbon's hullGreedy does.
	for t := range n {
		x, f := g.j[t], g.f[t]
		if x == 0 {
			continue
		}
		hi, lo := g.hull[x], g.hull[x-1]
		if f >= 1 {
			g.j[t], g.f[t] = hi, 1
			continue
		}
		w := g.work[lo] + f*(g.work[hi]-g.work[lo])
		j := lo + 1
		for j < hi && g.work[j] < w {
			j++
		}
		ff := 1.0
		if d := g.work[j] - g.work[j-1]; d > 0 {
			ff = (w - g.work[j-1]) / d
		}
		g.j[t], g.f[t] = j, min(max(ff, 0), 1)
		if g.f[t] == 0 {
			g.j[t], g.f[t] = j-1, 1
		}
	}
	return true
}

// scale, lower and fraction are slot t's carbon.Slot Scale, Lower and
// Fraction (Fraction 1 when suspended).
func (g *greedy) scale(t int) int { return g.levels[g.j[t]] }

func (g *greedy) lower(t int) int {
	switch {
	case g.j[t] == 0:
		return 0
	case g.f[t] >= 1:
		return g.levels[g.j[t]]
	}
	return g.levels[g.j[t]-1]
}

func (g *greedy) fraction(t int) float64 {
	if g.j[t] == 0 {
		return 1
	}
	return g.f[t]
}

func (g *greedy) less(a, b int) bool {
	if g.key[a] != g.key[b] {
		return g.key[a] > g.key[b]
	}
	return a < b
}

func (g *greedy) up(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !g.less(g.heap[i], g.heap[p]) {
			return
		}
		g.heap[i], g.heap[p] = g.heap[p], g.heap[i]
		i = p
	}
}

func (g *greedy) down(i int) {
	n := len(g.heap)
	for {
		l, best := 2*i+1, i
		if l < n && g.less(g.heap[l], g.heap[best]) {
			best = l
		}
		if r := l + 1; r < n && g.less(g.heap[r], g.heap[best]) {
			best = r
		}
		if best == i {
			return
		}
		g.heap[i], g.heap[best] = g.heap[best], g.heap[i]
		i = best
	}
}

func resize(v []int, n int) []int {
	if cap(v) < n {
		return make([]int, n)
	}
	return v[:n]
}

func resizeF(v []float64, n int) []float64 {
	if cap(v) < n {
		return make([]float64, n)
	}
	return v[:n]
}

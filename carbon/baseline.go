package carbon

import (
	"errors"
	"fmt"
	"math"
	"time"

	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/gonum/optimize/convex/lp"
)

// fixed builds a problem that only allows scale (and suspension).
func fixed(forecast Series, c Curve, scale int, work float64, deadline time.Time, opts ScheduleOptions) (*problem, error) {
	if scale < 1 || scale > c.MaxScale() {
		return nil, fmt.Errorf("%w: scale %d outside 1..%d", ErrInvalid, scale, c.MaxScale())
	}
	if err := opts.scheduleOnly(); err != nil {
		return nil, err
	}
	opts.MinScale, opts.MaxScale = scale, scale
	return newProblem(forecast, c, work, deadline, opts)
}

// fill runs the job at full scale in the given slots, in order, with the
// last one fractional.
func (p *problem) fill(order []int) []alloc {
	a := make([]alloc, len(p.ci))
	remaining := p.need
	for _, t := range order {
		if remaining <= p.need*1e-12 {
			break
		}
		if w := p.work[1]; w >= remaining {
			a[t] = alloc{j: 1, f: remaining / w}
			remaining = 0
		} else {
			a[t] = alloc{j: 1, f: 1}
			remaining -= w
		}
	}
	return a
}

// ScheduleNow is the carbon-agnostic baseline: run at scale from the first
// slot until the work is done.
func ScheduleNow(forecast Series, c Curve, scale int, work float64, deadline time.Time, opts ScheduleOptions) (Plan, error) {
	p, err := fixed(forecast, c, scale, work, deadline, opts)
	if err != nil {
		return Plan{}, err
	}
	order := make([]int, len(p.ci))
	for i := range order {
		order[i] = i
	}
	return p.plan(p.fill(order)), nil
}

// ScheduleLowest is suspend-resume at a fixed scale (Let's Wait Awhile's
// interruptible jobs): run in the lowest-intensity slots, the last of them
// fractional; ties go to the earlier slot.
func ScheduleLowest(forecast Series, c Curve, scale int, work float64, deadline time.Time, opts ScheduleOptions) (Plan, error) {
	p, err := fixed(forecast, c, scale, work, deadline, opts)
	if err != nil {
		return Plan{}, err
	}
	return p.plan(p.fill(sortedSlots(p.ci))), nil
}

// ScheduleWindow is the best contiguous window at a fixed scale, for jobs that
// cannot be interrupted: the start slot whose run has the least carbon;
// ties go to the earlier start.
func ScheduleWindow(forecast Series, c Curve, scale int, work float64, deadline time.Time, opts ScheduleOptions) (Plan, error) {
	p, err := fixed(forecast, c, scale, work, deadline, opts)
	if err != nil {
		return Plan{}, err
	}
	n := len(p.ci)
	w := p.work[1]
	full := int(math.Floor(p.need/w + 1e-12))
	frac := p.need/w - float64(full)
	if frac < 1e-12 {
		frac = 0
	}
	span := full
	if frac > 0 {
		span++
	}
	best, bestCost := 0, math.Inf(1)
	var sum float64 // sum of ci over the full part of the window at s
	for t := range full {
		sum += p.ci[t]
	}
	for s := 0; s+span <= n; s++ {
		if s > 0 {
			sum += p.ci[s+full-1] - p.ci[s-1]
		}
		cost := sum
		if frac > 0 {
			cost += frac * p.ci[s+full]
		}
		if cost < bestCost*(1-1e-12) {
			best, bestCost = s, cost
		}
	}
	order := make([]int, 0, span)
	for t := best; t < best+span; t++ {
		order = append(order, t)
	}
	return p.plan(p.fill(order)), nil
}

// ScheduleStatic is the best static scale: ScheduleLowest at every scale from
// opts.MinScale to opts.MaxScale, keeping the one with the least carbon
// (ties to the lower scale). It returns that plan and its scale. Scales
// that cannot meet the deadline are skipped; if none can, the error is the
// one of the largest scale.
func ScheduleStatic(forecast Series, c Curve, work float64, deadline time.Time, opts ScheduleOptions) (Plan, int, error) {
	if err := c.Validate(); err != nil {
		return Plan{}, 0, err
	}
	lo, hi := max(opts.MinScale, 1), opts.MaxScale
	if hi == 0 {
		hi = c.MaxScale()
	}
	if lo > hi || hi > c.MaxScale() {
		return Plan{}, 0, fmt.Errorf("%w: ScheduleOptions.MinScale %d, MaxScale %d for a curve of %d levels", ErrInvalid, opts.MinScale, opts.MaxScale, c.MaxScale())
	}
	var best Plan
	bestScale := 0
	var lastErr error
	for k := lo; k <= hi; k++ {
		s, err := ScheduleLowest(forecast, c, k, work, deadline, opts)
		if err != nil {
			if !errors.Is(err, ErrInfeasible) {
				return Plan{}, 0, err
			}
			lastErr = err
			continue
		}
		if bestScale == 0 || s.CarbonG < best.CarbonG*(1-1e-12) {
			best, bestScale = s, k
		}
	}
	if bestScale == 0 {
		return Plan{}, 0, lastErr
	}
	return best, bestScale, nil
}

// LowerBound returns the least forecast carbon, in grams, of any plan in
// which a slot's time may be split among any scales in [MinScale,
// MaxScale] (and suspension), solved as a linear program with gonum's
// simplex. It ignores change costs. For a concave curve it equals the
// exact optimum of Schedule's problem; otherwise it bounds it from below. It
// is meant for verification on instances of up to a few hundred slots.
func LowerBound(forecast Series, c Curve, work float64, deadline time.Time, opts ScheduleOptions) (g float64, err error) {
	if err := opts.scheduleOnly(); err != nil {
		return 0, err
	}
	p, err := newProblem(forecast, c, work, deadline, opts)
	if err != nil {
		return 0, err
	}
	n, L := len(p.ci), len(p.levels)-1
	if n*(L+1) > 20000 {
		return 0, fmt.Errorf("%w: %d slots × %d scales is too large for the LP", ErrInvalid, n, L)
	}
	// Variables: x[t][j] (fraction of slot t at level j+1), slack s[t],
	// surplus u. Rows: per slot Σ x + s = 1; Σ work·x - u = need.
	// Work is scaled so the coefficients are of order one.
	nv := n*L + n + 1
	A := mat.NewDense(n+1, nv, nil)
	cost := make([]float64, nv)
	b := make([]float64, n+1)
	ws := p.work[len(p.work)-1]
	for t := range n {
		for j := range L {
			v := t*L + j
			A.Set(t, v, 1)
			A.Set(n, v, p.work[j+1]/ws)
			cost[v] = p.ci[t] * p.kwh[j+1]
		}
		A.Set(t, n*L+t, 1)
		b[t] = 1
	}
	A.Set(n, nv-1, -1)
	b[n] = p.need / ws
	defer func() {
		if r := recover(); r != nil {
			g, err = 0, fmt.Errorf("%w: LP solver failed: %v", ErrInvalid, r)
		}
	}()
	opt, _, err := lp.Simplex(cost, A, b, 1e-10, nil)
	if err != nil {
		return 0, fmt.Errorf("%w: LP: %v", ErrInvalid, err)
	}
	return opt, nil
}

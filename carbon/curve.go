package carbon

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
)

// Curve describes an elastic job: at scale level k (k devices, nodes or
// replicas; level 0 is suspended) it does WorkPerSecond[k] units of work
// per second and draws Watts[k] for the whole allocation. A Curve is a
// value; nothing in this package modifies one.
type Curve struct {
	// WorkPerSecond is the throughput at each level; [0] must be 0 and the
	// rest non-decreasing.
	WorkPerSecond []float64
	// Watts is the power at each level; [0] must be 0 (a suspended job
	// draws nothing attributable to it) and the rest positive and
	// non-decreasing.
	Watts []float64
}

// MaxScale returns the highest level.
func (c Curve) MaxScale() int { return len(c.WorkPerSecond) - 1 }

// Validate checks the curve: at least levels 0 and 1, equal lengths,
// finite values, zero work and power at level 0, positive power above it,
// work and power non-decreasing.
func (c Curve) Validate() error {
	if len(c.WorkPerSecond) < 2 {
		return fmt.Errorf("%w: Curve needs levels 0 and 1, has %d", ErrInvalid, len(c.WorkPerSecond))
	}
	if len(c.Watts) != len(c.WorkPerSecond) {
		return fmt.Errorf("%w: Curve.Watts has %d levels, WorkPerSecond %d", ErrInvalid, len(c.Watts), len(c.WorkPerSecond))
	}
	if c.WorkPerSecond[0] != 0 || c.Watts[0] != 0 {
		return fmt.Errorf("%w: Curve level 0 must have zero work and power, has %v and %v", ErrInvalid, c.WorkPerSecond[0], c.Watts[0])
	}
	for k := 1; k < len(c.Watts); k++ {
		w, p := c.WorkPerSecond[k], c.Watts[k]
		if math.IsNaN(w) || math.IsInf(w, 0) || math.IsNaN(p) || math.IsInf(p, 0) {
			return fmt.Errorf("%w: Curve level %d is not finite", ErrInvalid, k)
		}
		if p <= 0 {
			return fmt.Errorf("%w: Curve.Watts[%d] = %v must be positive", ErrInvalid, k, p)
		}
		if w < c.WorkPerSecond[k-1] {
			return fmt.Errorf("%w: Curve.WorkPerSecond[%d] = %v below level %d", ErrInvalid, k, w, k-1)
		}
		if p < c.Watts[k-1] {
			return fmt.Errorf("%w: Curve.Watts[%d] = %v below level %d", ErrInvalid, k, p, k-1)
		}
	}
	if c.WorkPerSecond[len(c.WorkPerSecond)-1] <= 0 {
		return fmt.Errorf("%w: Curve does no work at any level", ErrInvalid)
	}
	return nil
}

// Concave reports whether the marginal work per marginal watt never rises
// over the levels 0, min, min+1, ..., max, where the first step is the
// whole block from suspended to min. This is the condition under which the
// marginal (greedy) planner is exact; minScale below 1 means 1.
func (c Curve) Concave(minScale, maxScale int) bool {
	minScale = max(minScale, 1)
	prev := math.Inf(1)
	lo := 0
	for k := minScale; k <= maxScale && k < len(c.Watts); k++ {
		dw := c.WorkPerSecond[k] - c.WorkPerSecond[lo]
		dp := c.Watts[k] - c.Watts[lo]
		var r float64
		switch {
		case dp > 0:
			r = dw / dp
		case dw > 0:
			r = math.Inf(1)
		}
		if r > prev*(1+1e-12) {
			return false
		}
		prev, lo = r, k
	}
	return true
}

// ReadProfile reads a CarbonScaler scaling profile: a CSV with header
// "nodes,throughput,power" and one row per node count, 0, 1, 2, ... in
// order (a missing row 0 is taken as zero). Power is for the whole
// allocation in W; throughput in work units per second.
func ReadProfile(r io.Reader) (Curve, error) {
	t, err := readCSV(r)
	if err != nil {
		return Curve{}, err
	}
	nc, tc, pc := t.col("nodes"), t.col("throughput"), t.col("power")
	if nc < 0 || tc < 0 || pc < 0 {
		return Curve{}, fmt.Errorf("%w: need columns nodes,throughput,power; header is %q", ErrFormat, t.raw)
	}
	if len(t.rows) > 100_000 {
		return Curve{}, fmt.Errorf("%w: %d profile rows", ErrInvalid, len(t.rows))
	}
	var c Curve
	for i, rec := range t.rows {
		line := t.first + i
		n, err := strconv.Atoi(strings.TrimSpace(rec[nc]))
		if err != nil {
			return Curve{}, fmt.Errorf("%w: line %d: nodes %q", ErrValue, line, rec[nc])
		}
		if i == 0 && n == 1 {
			c.WorkPerSecond, c.Watts = []float64{0}, []float64{0}
		}
		if n != len(c.WorkPerSecond) {
			return Curve{}, fmt.Errorf("%w: line %d: nodes %d, want %d (rows must count up from 0)", ErrOrder, line, n, len(c.WorkPerSecond))
		}
		w, ok1, err := parseValue(rec[tc])
		if err != nil || !ok1 {
			return Curve{}, fmt.Errorf("%w: line %d: throughput %q", ErrValue, line, rec[tc])
		}
		p, ok2, err := parseValue(rec[pc])
		if err != nil || !ok2 {
			return Curve{}, fmt.Errorf("%w: line %d: power %q", ErrValue, line, rec[pc])
		}
		c.WorkPerSecond = append(c.WorkPerSecond, w)
		c.Watts = append(c.Watts, p)
	}
	if err := c.Validate(); err != nil {
		return Curve{}, err
	}
	return c, nil
}

// CurveFromSpeedup builds a Curve from a speedup curve, such as a goodput
// model's: speedup[k-1] is the speedup at scale k relative to one device,
// workPerSecond is the throughput of one device, and power at scale k is
// baseWatts + k·wattsPerDevice. The curve stops at the first scale whose
// speedup falls below the previous one (more devices doing less work).
func CurveFromSpeedup(speedup []float64, workPerSecond, wattsPerDevice, baseWatts float64) (Curve, error) {
	if len(speedup) == 0 {
		return Curve{}, fmt.Errorf("%w: empty speedup curve", ErrInvalid)
	}
	if !(workPerSecond > 0) || math.IsInf(workPerSecond, 0) {
		return Curve{}, fmt.Errorf("%w: workPerSecond %v", ErrInvalid, workPerSecond)
	}
	if !(wattsPerDevice > 0) || math.IsInf(wattsPerDevice, 0) || !(baseWatts >= 0) || math.IsInf(baseWatts, 0) {
		return Curve{}, fmt.Errorf("%w: wattsPerDevice %v, baseWatts %v", ErrInvalid, wattsPerDevice, baseWatts)
	}
	c := Curve{WorkPerSecond: []float64{0}, Watts: []float64{0}}
	for k, s := range speedup {
		if !(s >= 0) || math.IsInf(s, 0) {
			return Curve{}, fmt.Errorf("%w: speedup[%d] = %v", ErrInvalid, k, s)
		}
		w := s * workPerSecond
		if w < c.WorkPerSecond[k] {
			break // past the peak: more devices would do less work
		}
		c.WorkPerSecond = append(c.WorkPerSecond, w)
		c.Watts = append(c.Watts, baseWatts+float64(k+1)*wattsPerDevice)
	}
	if err := c.Validate(); err != nil {
		return Curve{}, err
	}
	return c, nil
}

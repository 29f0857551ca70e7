package carbon

import (
	"fmt"
	"math"
	"time"
)

// Point is one timestamped value as read from a source, before it is put on
// a regular grid.
type Point struct {
	// Time is the start of the interval the value describes.
	Time time.Time
	// Value is the intensity.
	Value float64
	// Estimated is true when the source flagged the value as estimated.
	Estimated bool
}

// Fill says what to do with a grid step that has no value.
type Fill int

// Fills. The zero value, FillError, refuses gaps: a reader never fills
// silently. Filled values are marked Estimated in the resulting Series.
const (
	// FillError makes a missing step, or a point off the grid, an error
	// (ErrGap or ErrIrregular).
	FillError Fill = iota
	// FillHold repeats the last value at or before the missing step.
	FillHold
	// FillLinear interpolates linearly between the neighbouring values.
	FillLinear
)

// String returns "error", "hold" or "linear".
func (f Fill) String() string {
	switch f {
	case FillHold:
		return "hold"
	case FillLinear:
		return "linear"
	}
	return "error"
}

// GridOptions say how FromPoints puts points on a regular grid.
type GridOptions struct {
	// Step is the grid step. Zero means the smallest positive difference
	// between consecutive points.
	Step time.Duration
	// Fill handles grid steps without a point and points off the grid.
	// The zero value, FillError, rejects both.
	Fill Fill
	// MaxGap, when positive, is the longest run of missing time that a
	// fill may bridge; a longer gap is an error wrapping ErrGap even with
	// a fill. Zero means no limit.
	MaxGap time.Duration
}

// maxGridSteps bounds the grid FromPoints builds when it fills gaps.
const maxGridSteps = 5_000_000

// FromPoints turns strictly increasing points into a regular Series that
// starts at the first point and ends with the interval of the last point.
// Only Start, Step, Values and Estimated are set; the caller fills in the
// metadata. Points must be finite and non-negative.
func FromPoints(pts []Point, opts GridOptions) (Series, error) {
	if len(pts) == 0 {
		return Series{}, fmt.Errorf("%w: no points", ErrEmpty)
	}
	if opts.Fill < FillError || opts.Fill > FillLinear {
		return Series{}, fmt.Errorf("%w: GridOptions.Fill %d", ErrInvalid, opts.Fill)
	}
	if opts.Step < 0 || opts.MaxGap < 0 {
		return Series{}, fmt.Errorf("%w: GridOptions.Step %v or MaxGap %v negative", ErrInvalid, opts.Step, opts.MaxGap)
	}
	step := opts.Step
	for i, p := range pts {
		if math.IsNaN(p.Value) || math.IsInf(p.Value, 0) || p.Value < 0 {
			return Series{}, fmt.Errorf("%w: point %d (%v) value %v", ErrValue, i, p.Time, p.Value)
		}
		if i == 0 {
			continue
		}
		d := p.Time.Sub(pts[i-1].Time)
		if d <= 0 {
			return Series{}, fmt.Errorf("%w: point %d at %v is not after point %d at %v", ErrOrder, i, p.Time, i-1, pts[i-1].Time)
		}
		if opts.Step == 0 && (step == 0 || d < step) {
			step = d
		}
	}
	if step == 0 {
		return Series{}, fmt.Errorf("%w: a single point needs GridOptions.Step", ErrInvalid)
	}
	start := pts[0].Time
	last := pts[len(pts)-1].Time
	span := last.Sub(start)
	if !start.Add(span).Equal(last) || span > time.Duration(math.MaxInt64)-step {
		// time.Sub saturates: the points span more than time.Duration
		// can hold (about 292 years).
		return Series{}, fmt.Errorf("%w: points from %v to %v span more than %v", ErrRange, start, last, time.Duration(math.MaxInt64))
	}
	n := int(span/step) + 1
	if opts.Fill == FillError {
		// Report the first gap or off-grid point without building the grid.
		for i, p := range pts {
			d := p.Time.Sub(start)
			if d%step != 0 {
				return Series{}, fmt.Errorf("%w: point %d at %v is off the %v grid that starts at %v", ErrIrregular, i, p.Time, step, start)
			}
			if k := int(d / step); k != i {
				t := start.Add(time.Duration(i) * step)
				return Series{}, fmt.Errorf("%w: no value for %v (step %d of %v)", ErrGap, t, i, step)
			}
		}
	}
	if n > maxGridSteps {
		return Series{}, fmt.Errorf("%w: %d grid steps of %v is too many (limit %d)", ErrInvalid, n, step, maxGridSteps)
	}
	v := make([]float64, n)
	est := make([]bool, n)
	have := make([]bool, n)
	anyEst := false
	for i, p := range pts {
		d := p.Time.Sub(start)
		if d%step != 0 {
			if opts.Fill == FillError {
				return Series{}, fmt.Errorf("%w: point %d at %v is off the %v grid that starts at %v", ErrIrregular, i, p.Time, step, start)
			}
			continue
		}
		k := int(d / step)
		v[k], est[k], have[k] = p.Value, p.Estimated, true
		anyEst = anyEst || p.Estimated
	}
	if !have[n-1] {
		// The last point is off the grid; the grid ends at the last
		// on-grid step before it.
		for n > 0 && !have[n-1] {
			n--
		}
		v, est, have = v[:n], est[:n], have[:n]
	}
	// Walk the grid; j indexes the last point at or before the grid time.
	j := 0
	for k := range n {
		if have[k] {
			continue
		}
		t := start.Add(time.Duration(k) * step)
		if opts.Fill == FillError {
			return Series{}, fmt.Errorf("%w: no value for %v (step %d of %v)", ErrGap, t, k, step)
		}
		for j+1 < len(pts) && !pts[j+1].Time.After(t) {
			j++
		}
		prev, next := pts[j], pts[min(j+1, len(pts)-1)]
		if opts.MaxGap > 0 && next.Time.Sub(prev.Time) > opts.MaxGap+step {
			return Series{}, fmt.Errorf("%w: gap from %v to %v exceeds MaxGap %v", ErrGap, prev.Time, next.Time, opts.MaxGap)
		}
		switch opts.Fill {
		case FillHold:
			v[k] = prev.Value
		case FillLinear:
			span := next.Time.Sub(prev.Time)
			if span <= 0 {
				v[k] = prev.Value
			} else {
				f := float64(t.Sub(prev.Time)) / float64(span)
				v[k] = prev.Value + f*(next.Value-prev.Value)
			}
		}
		est[k] = true
		anyEst = true
	}
	if !anyEst {
		est = nil
	}
	return Series{Start: start, Step: step, Values: v, Estimated: est}, nil
}

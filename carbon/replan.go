package carbon

import (
	"context"
	"fmt"
	"math"
	"time"
)

// Replanner re-plans an elastic job from its remaining work at every slot,
// as CarbonScaler's AutoScaler does when progress or forecasts change. It
// holds only configuration, so it is safe for concurrent use when its
// Forecaster is.
type Replanner struct {
	// Forecaster supplies intensity from now to the deadline.
	Forecaster Forecaster
	// Zone is passed to the Forecaster.
	Zone string
	// Curve is the job's scale curve.
	Curve Curve
	// Deadline is when the work must be done.
	Deadline time.Time
	// Options are passed to Schedule; InitialScale is replaced by the
	// currentScale argument of Next.
	Options ScheduleOptions
}

// Next plans the remaining work from now (call it at slot boundaries) and
// returns the first slot of the new plan, which the host applies until the
// next call, and the whole plan.
func (r *Replanner) Next(ctx context.Context, now time.Time, remaining float64, currentScale int) (Slot, Plan, error) {
	if r.Forecaster == nil {
		return Slot{}, Plan{}, fmt.Errorf("%w: Replanner.Forecaster is nil", ErrInvalid)
	}
	if !r.Deadline.After(now) {
		return Slot{}, Plan{}, &InfeasibleError{Need: remaining}
	}
	f, err := r.Forecaster.Forecast(ctx, r.Zone, now, r.Deadline.Sub(now))
	if err != nil {
		return Slot{}, Plan{}, err
	}
	opts := r.Options
	opts.InitialScale = currentScale
	s, err := Schedule(f, r.Curve, remaining, r.Deadline, opts)
	if err != nil {
		return Slot{}, Plan{}, err
	}
	return s.Slots[0], s, nil
}

// Simulate runs a Replanner slot by slot against the true intensity: at
// each slot of truth from its start it re-plans the remaining work with
// r.Forecaster, executes the first slot, and accounts its carbon with the
// true intensity. The returned Plan holds the executed slots with
// true intensities and carbon; Method is the last plan's.
func Simulate(ctx context.Context, truth Series, r *Replanner, work float64) (Plan, error) {
	if err := truth.Validate(); err != nil {
		return Plan{}, err
	}
	g, err := truth.gramsPerKWh()
	if err != nil {
		return Plan{}, err
	}
	pue := r.Options.PUE
	if pue == 0 {
		pue = 1
	}
	out := Plan{Start: truth.Start, Step: truth.Step}
	remaining := work
	scale := r.Options.InitialScale
	for t := 0; remaining > work*1e-9; t++ {
		if err := ctx.Err(); err != nil {
			return Plan{}, err
		}
		now := truth.TimeAt(t)
		if t >= len(g) || !now.Before(r.Deadline) {
			return Plan{}, &InfeasibleError{Need: work, Fits: work - remaining, Slots: t}
		}
		sl, plan, err := r.Next(ctx, now, remaining, scale)
		if err != nil {
			return Plan{}, fmt.Errorf("slot %d (%v): %w", t, now, err)
		}
		if plan.Step != truth.Step {
			return Plan{}, fmt.Errorf("%w: forecast step %v differs from the true series' %v", ErrIrregular, plan.Step, truth.Step)
		}
		out.Method, out.Concave = plan.Method, plan.Concave
		sl.IntensityGPerKWh = g[t]
		sl.CarbonG = sl.EnergyJoules * pue / JoulesPerKWh * g[t]
		out.Slots = append(out.Slots, sl)
		out.Work += sl.Work
		out.EnergyJoules += sl.EnergyJoules
		out.CarbonG += sl.CarbonG
		remaining = math.Max(0, remaining-sl.Work)
		scale = sl.Scale
		if sl.Fraction < 1 {
			scale = sl.Lower
		}
	}
	out.Changes, out.ChangeCostG = changes(out.Slots, r.Options.InitialScale, r.Options.ChangeCostG)
	return out, nil
}

package carbon

import (
	"fmt"
	"math"
	"time"
)

// JoulesPerKWh converts kWh to joules.
const JoulesPerKWh = 3.6e6

// EnergyInterval is energy drawn uniformly over [Start, End).
type EnergyInterval struct {
	Start, End time.Time
	// Joules is the IT energy in the interval.
	Joules float64
}

// PowerSample is a power reading that holds from Time until the next
// sample.
type PowerSample struct {
	Time  time.Time
	Watts float64
}

// EnergyFromPower integrates power samples, each held until the next one
// and the last until end, into energy intervals.
func EnergyFromPower(samples []PowerSample, end time.Time) ([]EnergyInterval, error) {
	if len(samples) == 0 {
		return nil, fmt.Errorf("%w: no power samples", ErrEmpty)
	}
	out := make([]EnergyInterval, 0, len(samples))
	for i, s := range samples {
		if math.IsNaN(s.Watts) || math.IsInf(s.Watts, 0) || s.Watts < 0 {
			return nil, fmt.Errorf("%w: samples[%d].Watts %v", ErrValue, i, s.Watts)
		}
		next := end
		if i+1 < len(samples) {
			next = samples[i+1].Time
		}
		if !next.After(s.Time) {
			return nil, fmt.Errorf("%w: samples[%d] at %v is not before %v", ErrOrder, i, s.Time, next)
		}
		out = append(out, EnergyInterval{Start: s.Time, End: next, Joules: s.Watts * next.Sub(s.Time).Seconds()})
	}
	return out, nil
}

// CounterReading is a reading of a cumulative energy counter, such as
// NVML's total energy consumption (accel.Device.EnergyJoules).
type CounterReading struct {
	Time   time.Time
	Joules float64
}

// CounterOptions say how EnergyFromCounters treats a counter that goes
// down.
type CounterOptions struct {
	// WrapJoules is the counter's modulus. When positive, a decrease is a
	// wrap-around: the interval's energy is Joules + WrapJoules - prev.
	// When zero, a decrease is a reset (driver reload, reboot): the
	// counter restarted from zero, so the interval's energy is the new
	// reading, a lower bound.
	WrapJoules float64
	// MaxWatts, when positive, rejects an interval whose mean power
	// exceeds it (a glitch, or a wrap taken for a reset), with ErrValue.
	MaxWatts float64
}

// CounterStats reports what EnergyFromCounters saw.
type CounterStats struct {
	// Wraps and Resets count the decreases handled each way.
	Wraps, Resets int
}

// EnergyFromCounters turns monotone counter readings into energy per
// interval between consecutive readings, handling wraps and resets as
// opts say. Readings must be in strictly increasing time order.
func EnergyFromCounters(r []CounterReading, opts CounterOptions) ([]EnergyInterval, CounterStats, error) {
	var st CounterStats
	if len(r) < 2 {
		return nil, st, fmt.Errorf("%w: need at least two counter readings, have %d", ErrEmpty, len(r))
	}
	if math.IsNaN(opts.WrapJoules) || math.IsInf(opts.WrapJoules, 0) || opts.WrapJoules < 0 || math.IsNaN(opts.MaxWatts) || opts.MaxWatts < 0 {
		return nil, st, fmt.Errorf("%w: CounterOptions %+v", ErrInvalid, opts)
	}
	out := make([]EnergyInterval, 0, len(r)-1)
	for i, x := range r {
		if math.IsNaN(x.Joules) || math.IsInf(x.Joules, 0) || x.Joules < 0 {
			return nil, st, fmt.Errorf("%w: readings[%d].Joules %v", ErrValue, i, x.Joules)
		}
		if opts.WrapJoules > 0 && x.Joules >= opts.WrapJoules {
			return nil, st, fmt.Errorf("%w: readings[%d].Joules %v not below WrapJoules %v", ErrValue, i, x.Joules, opts.WrapJoules)
		}
		if i == 0 {
			continue
		}
		prev := r[i-1]
		if !x.Time.After(prev.Time) {
			return nil, st, fmt.Errorf("%w: readings[%d] at %v is not after %v", ErrOrder, i, x.Time, prev.Time)
		}
		d := x.Joules - prev.Joules
		if d < 0 {
			if opts.WrapJoules > 0 {
				d += opts.WrapJoules
				st.Wraps++
			} else {
				d = x.Joules
				st.Resets++
			}
		}
		dt := x.Time.Sub(prev.Time).Seconds()
		if opts.MaxWatts > 0 && d/dt > opts.MaxWatts {
			return nil, st, fmt.Errorf("%w: readings[%d]: %.6g J in %.6g s is above MaxWatts %v", ErrValue, i, d, dt, opts.MaxWatts)
		}
		out = append(out, EnergyInterval{Start: prev.Time, End: x.Time, Joules: d})
	}
	return out, st, nil
}

// AccountOptions tune Emissions. The zero value means PUE 1, no embodied
// carbon and no work count.
type AccountOptions struct {
	// PUE multiplies IT energy into facility energy; zero means 1.
	PUE float64
	// EmbodiedG is the embodied carbon attributed to the run (the M of the
	// Software Carbon Intensity), added to the total.
	EmbodiedG float64
	// Work is the useful work done, for GPerWork; zero leaves it 0.
	Work float64
}

// Report is the energy and carbon of a run.
type Report struct {
	// EnergyJoules is the IT energy.
	EnergyJoules float64
	// FacilityKWh is EnergyJoules × PUE in kWh.
	FacilityKWh float64
	// OperationalG = Σ P·Δt·CI / 3.6e6 × PUE.
	OperationalG float64
	// EmbodiedG is copied from the options.
	EmbodiedG float64
	// TotalG = OperationalG + EmbodiedG.
	TotalG float64
	// MeanIntensityGPerKWh is the energy-weighted mean intensity.
	MeanIntensityGPerKWh float64
	// Work is copied from the options.
	Work float64
	// GPerWork = TotalG / Work: the carbon intensity per unit of work.
	GPerWork float64
}

// Emissions accounts energy intervals against an intensity series: each
// interval's energy is spread uniformly over it and multiplied by the
// intensity of every series step it overlaps, so g = Σ P·Δt·CI / 3.6e6 ×
// PUE exactly for piecewise-constant power. The series must cover every
// interval and be convertible to g/kWh.
func Emissions(intervals []EnergyInterval, ci Series, opts AccountOptions) (Report, error) {
	var r Report
	if err := ci.Validate(); err != nil {
		return r, fmt.Errorf("intensity: %w", err)
	}
	g, err := ci.gramsPerKWh()
	if err != nil {
		return r, err
	}
	pue := opts.PUE
	if pue == 0 {
		pue = 1
	}
	if math.IsNaN(pue) || math.IsInf(pue, 0) || pue < 1 {
		return r, fmt.Errorf("%w: AccountOptions.PUE %v must be at least 1", ErrInvalid, opts.PUE)
	}
	for _, v := range []float64{opts.EmbodiedG, opts.Work} {
		if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
			return r, fmt.Errorf("%w: AccountOptions %+v", ErrInvalid, opts)
		}
	}
	var weighted float64
	for i, iv := range intervals {
		if math.IsNaN(iv.Joules) || math.IsInf(iv.Joules, 0) || iv.Joules < 0 {
			return r, fmt.Errorf("%w: intervals[%d].Joules %v", ErrValue, i, iv.Joules)
		}
		if !iv.End.After(iv.Start) {
			return r, fmt.Errorf("%w: intervals[%d] ends at %v, not after its start %v", ErrOrder, i, iv.End, iv.Start)
		}
		if iv.Start.Before(ci.Start) || iv.End.After(ci.End()) {
			return r, fmt.Errorf("%w: intervals[%d] [%v, %v) outside intensity [%v, %v)", ErrRange, i, iv.Start, iv.End, ci.Start, ci.End())
		}
		r.EnergyJoules += iv.Joules
		if iv.Joules == 0 {
			continue
		}
		watts := iv.Joules / iv.End.Sub(iv.Start).Seconds()
		k := int(iv.Start.Sub(ci.Start) / ci.Step)
		for t := iv.Start; t.Before(iv.End); k++ {
			next := ci.TimeAt(k + 1)
			if next.After(iv.End) {
				next = iv.End
			}
			j := watts * next.Sub(t).Seconds()
			weighted += j * g[k]
			t = next
		}
	}
	r.FacilityKWh = r.EnergyJoules * pue / JoulesPerKWh
	r.OperationalG = weighted * pue / JoulesPerKWh
	if r.EnergyJoules > 0 {
		r.MeanIntensityGPerKWh = weighted / r.EnergyJoules
	}
	r.EmbodiedG = opts.EmbodiedG
	r.TotalG = r.OperationalG + r.EmbodiedG
	r.Work = opts.Work
	if opts.Work > 0 {
		r.GPerWork = r.TotalG / opts.Work
	}
	return r, nil
}

// Intervals returns the plan's energy per slot, for Emissions against the
// true intensity (the plan's own CarbonG uses the forecast).
func (s Plan) Intervals() []EnergyInterval {
	out := make([]EnergyInterval, 0, len(s.Slots))
	for _, sl := range s.Slots {
		if sl.EnergyJoules > 0 {
			out = append(out, EnergyInterval{Start: sl.Start, End: sl.Start.Add(s.Step), Joules: sl.EnergyJoules})
		}
	}
	return out
}

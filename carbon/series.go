package carbon

import (
	"fmt"
	"math"
	"time"
)

// Signal says what a carbon-intensity value measures.
type Signal int

// Signals. Marginal signals suit shifting decisions; average signals suit
// reporting. Never mix the two in one comparison.
const (
	SignalUnknown Signal = iota // not stated by the source
	Average                     // average intensity of the consumed mix (Electricity Maps)
	Marginal                    // marginal operating emission rate (WattTime MOER)
)

// String returns "unknown", "average" or "marginal".
func (s Signal) String() string {
	switch s {
	case Average:
		return "average"
	case Marginal:
		return "marginal"
	}
	return "unknown"
}

// Basis says which emission factors a value uses.
type Basis int

// Bases of emission factors.
const (
	BasisUnknown Basis = iota // not stated by the source
	Direct                    // combustion only (Electricity Maps "direct")
	LifeCycle                 // life-cycle factors (Electricity Maps "LCA", IPCC)
)

// String returns "unknown", "direct" or "life-cycle".
func (b Basis) String() string {
	switch b {
	case Direct:
		return "direct"
	case LifeCycle:
		return "life-cycle"
	}
	return "unknown"
}

// Unit names the unit of a carbon-intensity value.
type Unit string

// Units understood by Convert. An empty Unit is unknown.
const (
	// GPerKWh is grams of CO2-equivalent per kilowatt-hour.
	GPerKWh Unit = "gCO2eq/kWh"
	// LbsPerMWh is pounds of CO2 per megawatt-hour (WattTime).
	LbsPerMWh Unit = "lbsCO2/MWh"
	// KgPerMWh is kilograms per megawatt-hour, numerically equal to g/kWh.
	KgPerMWh Unit = "kgCO2/MWh"
)

// GPerKWhPerLbsPerMWh converts lbs/MWh to g/kWh: 453.59237 g per lb over
// 1000 kWh per MWh.
const GPerKWhPerLbsPerMWh = 0.45359237

// Series is a regular carbon-intensity time series: Values[i] holds for the
// interval [Start + i·Step, Start + (i+1)·Step).
//
// A Series is a value; methods never modify the receiver and return new
// slices, so a Series that nobody writes to is safe for concurrent use.
type Series struct {
	// Start is the beginning of the first interval.
	Start time.Time
	// Step is the length of every interval; it must be positive.
	Step time.Duration
	// Values are intensities in Unit, one per interval; finite and >= 0.
	Values []float64
	// Estimated, when not nil, has one flag per value: true where the
	// source marked the value as estimated or a reader filled a gap.
	Estimated []bool
	// Unit of Values.
	Unit Unit
	// Signal says whether Values are average or marginal intensities.
	Signal Signal
	// Basis says whether Values use direct or life-cycle factors.
	Basis Basis
	// Zone is the grid zone, for example "US-CAL-CISO".
	Zone string
	// Source names where the data came from, for example "electricitymaps".
	Source string
}

// MaxValues is the most values a Series may hold (2^24, about 32 years
// of minutes). Validate rejects a longer series, and Resample refuses to
// upsample past it, so that a short step cannot exhaust memory.
const MaxValues = 1 << 24

// Validate checks that the series is usable: a positive step, at least one
// value and at most MaxValues, an end time that time.Time can represent,
// every value finite and non-negative, flags matching values, and a Unit
// that is empty (unknown) or one Convert understands.
func (s Series) Validate() error {
	if s.Step <= 0 {
		return fmt.Errorf("%w: Series.Step %v must be positive", ErrInvalid, s.Step)
	}
	if len(s.Values) == 0 {
		return fmt.Errorf("%w: Series.Values is empty", ErrEmpty)
	}
	if len(s.Values) > MaxValues {
		return fmt.Errorf("%w: Series has %d values, more than MaxValues %d", ErrInvalid, len(s.Values), MaxValues)
	}
	if s.Step > time.Duration(math.MaxInt64)/time.Duration(len(s.Values)) || !s.End().After(s.Start) {
		return fmt.Errorf("%w: Series of %d steps of %v from %v ends past the representable time", ErrRange, len(s.Values), s.Step, s.Start)
	}
	if err := checkUnit(s.Unit); err != nil {
		return fmt.Errorf("Series.Unit: %w", err)
	}
	if s.Estimated != nil && len(s.Estimated) != len(s.Values) {
		return fmt.Errorf("%w: Series.Estimated has %d flags for %d values", ErrInvalid, len(s.Estimated), len(s.Values))
	}
	for i, v := range s.Values {
		if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
			return fmt.Errorf("%w: Series.Values[%d] = %v", ErrValue, i, v)
		}
	}
	return nil
}

// Len returns the number of intervals.
func (s Series) Len() int { return len(s.Values) }

// End returns the end of the last interval.
func (s Series) End() time.Time { return s.TimeAt(len(s.Values)) }

// TimeAt returns the start of interval i.
func (s Series) TimeAt(i int) time.Time { return s.Start.Add(time.Duration(i) * s.Step) }

// Index returns the interval that contains t, and false when t is outside
// the series.
func (s Series) Index(t time.Time) (int, bool) {
	if s.Step <= 0 || t.Before(s.Start) {
		return 0, false
	}
	i := int(t.Sub(s.Start) / s.Step)
	if i >= len(s.Values) {
		return 0, false
	}
	return i, true
}

// At returns the value in force at t, or an error wrapping ErrRange.
func (s Series) At(t time.Time) (float64, error) {
	i, ok := s.Index(t)
	if !ok {
		return 0, fmt.Errorf("%w: %v is outside [%v, %v)", ErrRange, t, s.Start, s.End())
	}
	return s.Values[i], nil
}

// Mean returns the mean of Values, or 0 for an empty series.
func (s Series) Mean() float64 {
	if len(s.Values) == 0 {
		return 0
	}
	var sum float64
	for _, v := range s.Values {
		sum += v
	}
	return sum / float64(len(s.Values))
}

// withValues returns a copy of s's metadata with new values and flags.
func (s Series) withValues(start time.Time, step time.Duration, v []float64, est []bool) Series {
	out := s
	out.Start, out.Step, out.Values, out.Estimated = start, step, v, est
	return out
}

// Slice returns the intervals that overlap [from, to). It fails with
// ErrRange when from is not before to or the range is not covered: the
// first interval must contain from and the last must reach to.
func (s Series) Slice(from, to time.Time) (Series, error) {
	if !from.Before(to) {
		return Series{}, fmt.Errorf("%w: Slice from %v is not before to %v", ErrInvalid, from, to)
	}
	i, ok := s.Index(from)
	if !ok {
		return Series{}, fmt.Errorf("%w: Slice from %v outside [%v, %v)", ErrRange, from, s.Start, s.End())
	}
	if to.After(s.End()) {
		return Series{}, fmt.Errorf("%w: Slice to %v after series end %v", ErrRange, to, s.End())
	}
	j := int((to.Sub(s.Start) + s.Step - 1) / s.Step)
	v := append([]float64(nil), s.Values[i:j]...)
	var est []bool
	if s.Estimated != nil {
		est = append([]bool(nil), s.Estimated[i:j]...)
	}
	return s.withValues(s.TimeAt(i), s.Step, v, est), nil
}

// Convert returns the series in unit u. lbs/MWh converts to g/kWh by
// ×0.45359237; kg/MWh equals g/kWh. Anything else, including an unknown
// (empty) unit, fails with ErrUnit unless it already equals u.
func (s Series) Convert(u Unit) (Series, error) {
	if s.Unit == u {
		return s.withValues(s.Start, s.Step, append([]float64(nil), s.Values...), cloneBools(s.Estimated)), nil
	}
	from, ok := toGPerKWh(s.Unit)
	if !ok {
		return Series{}, fmt.Errorf("%w: cannot convert from %q", ErrUnit, s.Unit)
	}
	to, ok := toGPerKWh(u)
	if !ok {
		return Series{}, fmt.Errorf("%w: cannot convert to %q", ErrUnit, u)
	}
	v := make([]float64, len(s.Values))
	for i, x := range s.Values {
		v[i] = x * from / to
	}
	out := s.withValues(s.Start, s.Step, v, cloneBools(s.Estimated))
	out.Unit = u
	return out, nil
}

// checkUnit accepts the unknown (empty) unit and the units Convert knows;
// anything else (a typo, "furlongs") fails with ErrUnit.
func checkUnit(u Unit) error {
	if _, ok := toGPerKWh(u); !ok && u != "" {
		return fmt.Errorf("%w: %q (want %q, %q, %q or empty)", ErrUnit, u, GPerKWh, LbsPerMWh, KgPerMWh)
	}
	return nil
}

// toGPerKWh returns the factor from unit u to g/kWh.
func toGPerKWh(u Unit) (float64, bool) {
	switch u {
	case GPerKWh, KgPerMWh:
		return 1, true
	case LbsPerMWh:
		return GPerKWhPerLbsPerMWh, true
	}
	return 0, false
}

// gramsPerKWh returns the values in g/kWh, or ErrUnit.
func (s Series) gramsPerKWh() ([]float64, error) {
	f, ok := toGPerKWh(s.Unit)
	if !ok {
		return nil, fmt.Errorf("%w: series unit %q is not convertible to g/kWh; set Series.Unit", ErrUnit, s.Unit)
	}
	v := make([]float64, len(s.Values))
	for i, x := range s.Values {
		v[i] = x * f
	}
	return v, nil
}

func cloneBools(b []bool) []bool {
	if b == nil {
		return nil
	}
	return append([]bool(nil), b...)
}

// Resample returns the series on a new step. When step is a multiple of
// s.Step, each new value is the mean of the old values it covers, and the
// series length must be a multiple of the ratio (trim first with Slice):
// a partial last interval is an error wrapping ErrIrregular, never a silent
// truncation. When s.Step is a multiple of step, each value is repeated.
// Other ratios fail with ErrIrregular. A resampled value is Estimated when
// any value it covers is.
func (s Series) Resample(step time.Duration) (Series, error) {
	if err := s.Validate(); err != nil {
		return Series{}, err
	}
	if step <= 0 {
		return Series{}, fmt.Errorf("%w: Resample step %v must be positive", ErrInvalid, step)
	}
	switch {
	case step == s.Step:
		return s.withValues(s.Start, s.Step, append([]float64(nil), s.Values...), cloneBools(s.Estimated)), nil
	case step%s.Step == 0:
		k := int(step / s.Step)
		if len(s.Values)%k != 0 {
			return Series{}, fmt.Errorf("%w: %d values of %v do not fill whole %v steps (%d left over)", ErrIrregular, len(s.Values), s.Step, step, len(s.Values)%k)
		}
		n := len(s.Values) / k
		v := make([]float64, n)
		var est []bool
		if s.Estimated != nil {
			est = make([]bool, n)
		}
		for i := range n {
			var sum float64
			for j := i * k; j < (i+1)*k; j++ {
				sum += s.Values[j]
				if est != nil && s.Estimated[j] {
					est[i] = true
				}
			}
			v[i] = sum / float64(k)
		}
		return s.withValues(s.Start, step, v, est), nil
	case s.Step%step == 0:
		k := int(s.Step / step)
		if k > MaxValues/len(s.Values) {
			return Series{}, fmt.Errorf("%w: Resample %d values of %v to %v would make more than MaxValues %d values", ErrInvalid, len(s.Values), s.Step, step, MaxValues)
		}
		n := len(s.Values) * k
		v := make([]float64, n)
		var est []bool
		if s.Estimated != nil {
			est = make([]bool, n)
		}
		for i := range n {
			v[i] = s.Values[i/k]
			if est != nil {
				est[i] = s.Estimated[i/k]
			}
		}
		return s.withValues(s.Start, step, v, est), nil
	}
	return Series{}, fmt.Errorf("%w: cannot resample %v to %v (neither divides the other)", ErrIrregular, s.Step, step)
}

package carbon

import (
	"errors"
	"fmt"
)

// Sentinel errors. Every error returned by this package wraps one of them,
// so callers can test with errors.Is; the wrapping text names the bad
// field, line or index.
var (
	// ErrInvalid reports a bad argument or option (a field of a struct, a
	// negative duration, a curve that is not monotone, ...).
	ErrInvalid = errors.New("carbon: invalid input")
	// ErrFormat reports a file whose structure is wrong: missing or
	// unexpected columns, a malformed JSON document, a bad timestamp.
	ErrFormat = errors.New("carbon: bad format")
	// ErrValue reports a number that cannot be parsed or is out of range
	// (negative, NaN, infinite).
	ErrValue = errors.New("carbon: bad value")
	// ErrOrder reports timestamps that go backwards or repeat.
	ErrOrder = errors.New("carbon: timestamps not increasing")
	// ErrGap reports a missing time step while the chosen Fill is
	// FillError.
	ErrGap = errors.New("carbon: gap in series")
	// ErrIrregular reports a time step that is not a multiple of the grid
	// step, or a resampling step that does not divide evenly.
	ErrIrregular = errors.New("carbon: irregular time step")
	// ErrEmpty reports an input with no data rows.
	ErrEmpty = errors.New("carbon: no data")
	// ErrUnit reports a unit that cannot be converted.
	ErrUnit = errors.New("carbon: unknown unit")
	// ErrRange reports a time outside the span of a series or forecast.
	ErrRange = errors.New("carbon: time out of range")
	// ErrInfeasible reports a job that cannot finish by its deadline. The
	// returned error is an *InfeasibleError that says how much work fits.
	ErrInfeasible = errors.New("carbon: deadline cannot be met")
	// ErrUnavailable reports a forecaster that has no data for a zone.
	ErrUnavailable = errors.New("carbon: forecast unavailable")
)

// InfeasibleError says that a job's work does not fit before its deadline
// even at the maximum scale in every slot. It wraps ErrInfeasible.
type InfeasibleError struct {
	// Need is the work requested, in the curve's work units.
	Need float64
	// Fits is the most work that can be done before the deadline.
	Fits float64
	// Slots is the number of whole slots available before the deadline.
	Slots int
}

// Error implements error.
func (e *InfeasibleError) Error() string {
	return fmt.Sprintf("carbon: deadline cannot be met: need %.6g work, at most %.6g fits in %d slots (%.1f%%)",
		e.Need, e.Fits, e.Slots, 100*e.Fits/max(e.Need, 1e-300))
}

// Unwrap returns ErrInfeasible.
func (e *InfeasibleError) Unwrap() error { return ErrInfeasible }

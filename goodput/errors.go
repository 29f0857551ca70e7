package goodput

import "errors"

// Sentinel errors. Functions wrap them with %w and name the offending
// field or index, so callers test with errors.Is.
var (
	// ErrInvalidObservation reports a measurement that cannot be fitted:
	// a NaN, infinite, zero or negative time, or an impossible shape.
	ErrInvalidObservation = errors.New("goodput: invalid observation")
	// ErrInvalidParams reports throughput parameters that are NaN,
	// infinite, negative, or (for Gamma) outside [1, 10].
	ErrInvalidParams = errors.New("goodput: invalid parameters")
	// ErrInvalidLimits reports batch-size limits that are inconsistent.
	ErrInvalidLimits = errors.New("goodput: invalid limits")
	// ErrInvalidGrad reports gradient statistics that are NaN, infinite
	// or negative.
	ErrInvalidGrad = errors.New("goodput: invalid gradient statistics")
	// ErrNoObservations is returned by Fit when given nothing to fit.
	ErrNoObservations = errors.New("goodput: no observations")
	// ErrInvalidOptions reports a bad FitOptions, CurveOptions or
	// EstimatorConfig field.
	ErrInvalidOptions = errors.New("goodput: invalid options")
	// ErrParse reports a malformed profile file.
	ErrParse = errors.New("goodput: parse error")
)

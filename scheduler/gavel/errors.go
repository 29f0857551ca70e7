package gavel

import "errors"

// Errors returned by this package. They are wrapped with the offending field
// or index, so test with errors.Is.
var (
	// ErrInvalid reports a malformed problem: mismatched lengths, NaN or
	// infinite throughput, negative values, bad weights or scales.
	ErrInvalid = errors.New("gavel: invalid input")
	// ErrZeroRow reports a job that cannot run anywhere: all its
	// throughputs are zero (or on types too small for its scale).
	ErrZeroRow = errors.New("gavel: job has no usable type")
	// ErrNoDevices reports an accelerator type with no devices.
	ErrNoDevices = errors.New("gavel: type has no devices")
	// ErrInfeasible reports constraints that no allocation meets, such as
	// SLOs that exceed the cluster.
	ErrInfeasible = errors.New("gavel: infeasible")
)

package variability

import "errors"

var (
	// ErrInvalid reports bad measurements or settings: a factor that is
	// not finite or not > 0, a file without a required column, an
	// unreadable layout. The error names the file, row or field.
	ErrInvalid = errors.New("variability: invalid input")
	// ErrUnknownDevice reports a device the cluster does not have.
	ErrUnknownDevice = errors.New("variability: unknown device")
	// ErrBadReport reports a step-time report that cannot be used: no
	// devices, a device listed twice, a step or base time ≤ 0.
	ErrBadReport = errors.New("variability: bad report")
)

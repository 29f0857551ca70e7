package placement

import (
	"errors"
	"fmt"
)

// Errors returned by this package, wrapped with the offending field or
// value: test with errors.Is.
var (
	// ErrInvalid reports a malformed request, target, assignment or cluster.
	ErrInvalid = errors.New("placement: invalid")
	// ErrUnknownType reports a device type the cluster does not have.
	ErrUnknownType = errors.New("placement: unknown device type")
	// ErrUnknownDevice reports a device ID the cluster does not have.
	ErrUnknownDevice = errors.New("placement: unknown device")
	// ErrImpossible reports constraints that no placement could meet even
	// on the empty, healthy cluster (for example a single-node gang larger
	// than every node).
	ErrImpossible = errors.New("placement: impossible constraints")
	// ErrConflict reports a device held twice, or released by a job that
	// does not hold it.
	ErrConflict = errors.New("placement: device conflict")
	// ErrUnhealthy reports an attempt to assign an unhealthy device.
	ErrUnhealthy = errors.New("placement: unhealthy device")
	// ErrNoFit is returned by Chooser.Place when a valid request does not
	// fit now. The error is a *NoFitError that carries the Reason.
	ErrNoFit = errors.New("placement: does not fit")
)

// NoFitError says why a valid request does not fit now. It matches ErrNoFit
// under errors.Is; use errors.As to read the Reason.
type NoFitError struct {
	// Job is the request's job.
	Job string
	// Reason is why it does not fit (for a request allowing several types,
	// the code of its best type, with every type's reason in the text).
	Reason Reason
}

// Error implements error.
func (e *NoFitError) Error() string {
	return fmt.Sprintf("placement: job %q does not fit: %s: %s", e.Job, e.Reason.Code, e.Reason.Text)
}

// Is reports whether target is ErrNoFit.
func (e *NoFitError) Is(target error) bool { return target == ErrNoFit }

package scheduler

import "errors"

// Errors returned by this package. They are wrapped with the job, field or
// index at fault, so test with errors.Is.
var (
	// ErrInvalid reports malformed input: a duplicate or empty job ID,
	// MinReplicas > MaxReplicas, a negative count or weight, a Speedup
	// that is a nil pointer, an Input.Current entry (of any job,
	// finished ones included) with an unknown or doubly held device or
	// devices of two types, a bad Config (a typed nil policy, a negative
	// or oversized knob), a nil *Scheduler, a Deadline before Submitted,
	// an unusable Input.Carbon or a negative Input.Envelope entry, a bad
	// setting of a built-in policy (carbonaware.Policy's included).
	ErrInvalid = errors.New("scheduler: invalid input")
	// ErrUnknownType reports a job that asks for a device type the
	// cluster does not have, or whose Speedup keys a cluster type by
	// another spelling (an alias such as "a100" for "a100-40gb").
	ErrUnknownType = errors.New("scheduler: unknown device type")
	// ErrBadSpeedup reports a Speedup that returned NaN, ±Inf or a
	// negative value.
	ErrBadSpeedup = errors.New("scheduler: bad speedup")
	// ErrPolicy reports a policy that returned an unusable target (an
	// unknown job, a job twice, a count above the cluster's capacity).
	ErrPolicy = errors.New("scheduler: bad policy output")
	// ErrPlacement reports a Placer that failed or returned devices that
	// do not exist or are used twice. A Placer that returns the context's
	// error is not wrapped as ErrPlacement: errors.Is(err,
	// context.DeadlineExceeded) (or context.Canceled) holds instead.
	ErrPlacement = errors.New("scheduler: bad placement")
)

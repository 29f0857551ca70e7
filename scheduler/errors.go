package scheduler

import "errors"

// Errors returned by this package. They are wrapped with the job, field or
// index at fault, so test with errors.Is.
var (
	// ErrInvalid reports malformed input: a duplicate or empty job ID,
	// MinReplicas > MaxReplicas, a negative count or weight, an unknown
	// device in Input.Current, a bad Config.
	ErrInvalid = errors.New("scheduler: invalid input")
	// ErrUnknownType reports a job that asks for a device type the
	// cluster does not have.
	ErrUnknownType = errors.New("scheduler: unknown device type")
	// ErrBadSpeedup reports a Speedup that returned NaN, ±Inf or a
	// negative value.
	ErrBadSpeedup = errors.New("scheduler: bad speedup")
	// ErrPolicy reports a policy that returned an unusable target (an
	// unknown job, a job twice, a count above the cluster's capacity).
	ErrPolicy = errors.New("scheduler: bad policy output")
	// ErrPlacement reports a Placer that failed or returned devices that
	// do not exist or are used twice.
	ErrPlacement = errors.New("scheduler: bad placement")
)

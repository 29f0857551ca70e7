package dispatch

import (
	"errors"
	"fmt"
	"math"
	"time"
)

// Sentinel errors. Every error returned by this package wraps exactly one of
// them, so callers can test with errors.Is; the wrapping text names the task,
// worker or configuration field at fault.
var (
	// ErrConfig reports an invalid Config field.
	ErrConfig = errors.New("dispatch: invalid config")
	// ErrUnknownTask reports a TaskID this Dispatcher never issued.
	ErrUnknownTask = errors.New("dispatch: unknown task")
	// ErrCompleted reports a task that has already been completed (its
	// result was reported once; a second Complete is a host bug).
	ErrCompleted = errors.New("dispatch: task already completed")
	// ErrNotServing reports a Complete from a worker that is not serving the
	// task (it was handed to another worker, or not handed out yet).
	ErrNotServing = errors.New("dispatch: worker is not serving the task")
	// ErrUnknownWorker reports a WorkerID this Dispatcher never issued.
	ErrUnknownWorker = errors.New("dispatch: unknown worker")
	// ErrWorkerGone reports a worker that has left or failed.
	ErrWorkerGone = errors.New("dispatch: worker has left or failed")
	// ErrBusy reports a Next from a worker still serving a task that was
	// not cancelled: there is no preemption, so it must Complete it first.
	ErrBusy = errors.New("dispatch: worker is still serving a task")
	// ErrTooManyWorkers reports a Join past the limit of 2^24 worker IDs.
	ErrTooManyWorkers = errors.New("dispatch: too many workers")
	// ErrNoWorkers reports a Submit while no worker is live.
	ErrNoWorkers = errors.New("dispatch: no live workers")
	// ErrTimeOrder reports a Complete whose time is before the task's
	// Submit: its latency would be negative.
	ErrTimeOrder = errors.New("dispatch: completion before submission")
	// ErrRisk reports an invalid Risk field (a probability outside [0, 1],
	// a negative scan cost or work).
	ErrRisk = errors.New("dispatch: invalid risk")
	// ErrRejected reports a Complete (or a verdict) for a task that a scan
	// found bad and rejected: it never ran, so there is nothing to report.
	// (A task rejected before the latest rejection that reused its
	// internal slot is reported as ErrCompleted: it is over either way.)
	ErrRejected = errors.New("dispatch: task was rejected by its scan")
	// ErrScanOrder reports a Complete of a task whose scan has no verdict
	// yet (it must not run before the scan clears it), or a verdict for a
	// task that awaits no scan.
	ErrScanOrder = errors.New("dispatch: scan verdict out of order")
)

// Policy says whether and how a task is duplicated. The zero value is
// PolicyDAS.
type Policy uint8

const (
	// PolicyDAS duplicates every task: the primary goes to its worker's
	// high-priority class, the duplicate to a different worker's
	// low-priority class, which is served only when no primary waits there.
	// Whichever copy finishes first wins; the sibling is purged (dropped
	// from its queue, or cancelled in service).
	PolicyDAS Policy = iota
	// PolicyNone never duplicates.
	PolicyNone
	// PolicyNaive duplicates every task at the same (high) priority as the
	// primary, with the same purge on completion: cloning without
	// prioritisation, the baseline DAS is meant to fix.
	PolicyNaive
	// PolicyHedged duplicates a task only once it has been outstanding for
	// the hedge delay (Config.HedgeDelay, or by default the running
	// Config.HedgeQuantile of observed latency), at normal priority, as in
	// Dean and Barroso's hedged requests. The host drives it with Hedge and
	// NextHedge.
	PolicyHedged
	// PolicyBudgeted duplicates a task only onto a worker (other than the
	// primary's) that is idle with an empty queue at submission; otherwise
	// the task runs alone. The duplicate goes to the low-priority class.
	PolicyBudgeted
	numPolicies
)

var policyNames = [...]string{"das", "none", "naive", "hedged", "budgeted"}

// String returns the policy's short name ("das", "none", "naive", "hedged",
// "budgeted").
func (p Policy) String() string {
	if p < numPolicies {
		return policyNames[p]
	}
	return fmt.Sprintf("Policy(%d)", uint8(p))
}

// Policies returns every policy in declaration order.
func Policies() []Policy {
	return []Policy{PolicyDAS, PolicyNone, PolicyNaive, PolicyHedged, PolicyBudgeted}
}

// ParsePolicy returns the policy whose String is name.
func ParsePolicy(name string) (Policy, error) {
	for i, n := range policyNames {
		if n == name {
			return Policy(i), nil
		}
	}
	return 0, fmt.Errorf("%w: Policy %q (want das, none, naive, hedged or budgeted)", ErrConfig, name)
}

// Choice says how Submit picks the worker for a primary (and, excluding the
// primary's worker, for a duplicate). The zero value is ChoiceLeastLoaded.
type Choice uint8

const (
	// ChoiceLeastLoaded picks the worker with the fewest high-priority
	// copies queued or in service, then the fewest low-priority copies
	// queued, then the lowest WorkerID. It keeps an indexed heap: O(log n).
	ChoiceLeastLoaded Choice = iota
	// ChoicePowerOfTwo samples two distinct live workers with the seeded
	// random source (Config.Seed) and keeps the less loaded (same order as
	// ChoiceLeastLoaded). O(1).
	ChoicePowerOfTwo
	// ChoiceRoundRobin cycles over the live workers; a duplicate goes to the
	// live worker after the primary's, without advancing the cycle, so the
	// placement of primaries does not depend on the duplication policy. O(1).
	ChoiceRoundRobin
	numChoices
)

var choiceNames = [...]string{"least-loaded", "power-of-two", "round-robin"}

// String returns the choice's short name.
func (c Choice) String() string {
	if c < numChoices {
		return choiceNames[c]
	}
	return fmt.Sprintf("Choice(%d)", uint8(c))
}

// ParseChoice returns the choice whose String is name.
func ParseChoice(name string) (Choice, error) {
	for i, n := range choiceNames {
		if n == name {
			return Choice(i), nil
		}
	}
	return 0, fmt.Errorf("%w: Choice %q (want least-loaded, power-of-two or round-robin)", ErrConfig, name)
}

// Config configures a Dispatcher. The zero value is valid: no workers yet
// (add them with Join), DAS, least-loaded placement.
type Config struct {
	// Workers is the number of workers live from the start, with IDs
	// 0..Workers-1. 0 = none; add workers with Join.
	Workers int
	// Policy is the duplication policy. Zero = PolicyDAS.
	Policy Policy
	// Choice is the placement rule. Zero = ChoiceLeastLoaded.
	Choice Choice
	// Seed seeds the random source of ChoicePowerOfTwo (PCG). Zero is a
	// valid seed; the same seed and calls give the same placements.
	Seed uint64
	// HedgeDelay is PolicyHedged's fixed delay before a duplicate is sent.
	// Zero = adaptive: the HedgeQuantile of the latencies (Submit to
	// winning Complete) of the last HedgeWindow tasks; no hedge is sent
	// until HedgeWindow/16 (at least 1) latencies have been observed.
	HedgeDelay time.Duration
	// HedgeQuantile is the adaptive hedge delay's quantile in (0, 1).
	// Zero = 0.95.
	HedgeQuantile float64
	// HedgeWindow is how many recent latencies the adaptive delay uses.
	// Zero = 1024.
	HedgeWindow int
	// PurgeOnStart also purges a copy's queued sibling as soon as the copy
	// starts service (Dean and Barroso's tied requests): less wasted work,
	// but no second chance once the started copy straggles. Default false:
	// purge only on completion, as in DAS.
	PurgeOnStart bool
	// Scan says which tasks are scanned before they run (see ScanPolicy
	// and SubmitRisk). Zero = ScanNone: nothing is scanned, and the
	// Dispatcher behaves exactly as without scanning.
	Scan ScanPolicy
	// BadRecovery is what a bad task that runs unscanned costs its worker
	// after its run: the time the worker is lost recovering. Zero means
	// the damage is only that the run's result is discarded. ScanRobust
	// weighs it against the scan cost (ScanPolicy.Decide); the host
	// applies it (the Dispatcher cannot tell a bad task that ran): the
	// worker reports the task with Complete once it has recovered, so
	// that no new copy reaches it meanwhile. (Fail would re-queue the bad
	// task elsewhere.)
	BadRecovery time.Duration
}

// maxWorkers bounds worker IDs so they fit the int32 indices used inside.
const maxWorkers = 1 << 24

func (c Config) validate() (Config, error) {
	if c.Workers < 0 || c.Workers > maxWorkers {
		return c, fmt.Errorf("%w: Workers = %d (want 0..%d)", ErrConfig, c.Workers, maxWorkers)
	}
	if c.Policy >= numPolicies {
		return c, fmt.Errorf("%w: Policy = %d", ErrConfig, uint8(c.Policy))
	}
	if c.Choice >= numChoices {
		return c, fmt.Errorf("%w: Choice = %d", ErrConfig, uint8(c.Choice))
	}
	if c.Scan >= numScanPolicies {
		return c, fmt.Errorf("%w: Scan = %d", ErrConfig, uint8(c.Scan))
	}
	if c.BadRecovery < 0 {
		return c, fmt.Errorf("%w: BadRecovery = %v (want >= 0)", ErrConfig, c.BadRecovery)
	}
	if c.HedgeDelay < 0 {
		return c, fmt.Errorf("%w: HedgeDelay = %v (want >= 0)", ErrConfig, c.HedgeDelay)
	}
	if math.IsNaN(c.HedgeQuantile) || c.HedgeQuantile < 0 || c.HedgeQuantile >= 1 {
		return c, fmt.Errorf("%w: HedgeQuantile = %v (want 0 for the default, or in (0, 1))", ErrConfig, c.HedgeQuantile)
	}
	if c.HedgeWindow < 0 || c.HedgeWindow > 1<<20 {
		return c, fmt.Errorf("%w: HedgeWindow = %d (want 0..%d)", ErrConfig, c.HedgeWindow, 1<<20)
	}
	if c.HedgeQuantile == 0 {
		c.HedgeQuantile = 0.95
	}
	if c.HedgeWindow == 0 {
		c.HedgeWindow = 1024
	}
	return c, nil
}

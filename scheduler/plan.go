package scheduler

import (
	"fmt"

	"github.com/goodsched/goodsched/accel"
	"github.com/goodsched/goodsched/goodput"
	"github.com/goodsched/goodsched/placement"
)

// String returns the lower-case name of the action ("keep", "start", …).
func (a Action) String() string {
	switch a {
	case Keep:
		return "keep"
	case Start:
		return "start"
	case Grow:
		return "grow"
	case Shrink:
		return "shrink"
	case Move:
		return "move"
	case Preempt:
		return "preempt"
	case Queue:
		return "queue"
	}
	return fmt.Sprintf("action(%d)", int(a))
}

// String returns the name of the kind ("rigid", "elastic", "adaptive").
func (k Kind) String() string {
	switch k {
	case Rigid:
		return "rigid"
	case Elastic:
		return "elastic"
	case Adaptive:
		return "adaptive"
	}
	return fmt.Sprintf("kind(%d)", int(k))
}

// Reason is a typed code saying why a decision was taken. Decision.Message
// carries the same in words, with figures.
type Reason int

// Reason codes. Policies set them on their Targets; the Scheduler sets the
// placement-related ones itself.
const (
	// ReasonUnchanged: the job keeps what it had.
	ReasonUnchanged Reason = iota
	// ReasonObjective: the policy's objective (goodput, fairness) is better
	// with the new allocation, restart cost included.
	ReasonObjective
	// ReasonPinned: a running non-preemptible job keeps its devices.
	ReasonPinned
	// ReasonNoCapacity: not enough free devices of an allowed type for the
	// job's minimum (or requested) count this round.
	ReasonNoCapacity
	// ReasonOrder: a baseline's queue order (FIFO position, Tiresias
	// queue, Optimus gain) put other jobs first.
	ReasonOrder
	// ReasonUnplaceable: the policy gave the job devices but placement
	// could not realise the gang on concrete devices (fragmentation,
	// topology limits).
	ReasonUnplaceable
	// ReasonRestartCost: a change would not pay for its checkpoint-restart.
	ReasonRestartCost
	// ReasonInterference: interference avoidance (at most one distributed
	// job per node) left no room for the job.
	ReasonInterference
)

// String returns the reason's name ("unchanged", "objective", …).
func (r Reason) String() string {
	switch r {
	case ReasonUnchanged:
		return "unchanged"
	case ReasonObjective:
		return "objective"
	case ReasonPinned:
		return "pinned"
	case ReasonNoCapacity:
		return "no-capacity"
	case ReasonOrder:
		return "order"
	case ReasonUnplaceable:
		return "unplaceable"
	case ReasonRestartCost:
		return "restart-cost"
	case ReasonInterference:
		return "interference"
	}
	return fmt.Sprintf("reason(%d)", int(r))
}

// Decision is what the host must do for one job this round.
type Decision struct {
	// Job is the job's ID.
	Job string `json:"job"`
	// Action is what to do: Keep, Start, Grow, Shrink, Move, Preempt or
	// Queue.
	Action Action `json:"action"`
	// FromType and From are the device type and count the job held when
	// the round started (From 0 = not running).
	FromType accel.TypeKey `json:"from_type,omitempty"`
	From     int           `json:"from"`
	// Type and To are the device type and count after the round (To 0 =
	// not running).
	Type accel.TypeKey `json:"type,omitempty"`
	To   int           `json:"to"`
	// Nodes is the number of nodes the new assignment spans.
	Nodes int `json:"nodes"`
	// Assignment lists the job's devices after the round (empty when the
	// job does not run).
	Assignment placement.Assignment `json:"assignment"`
	// Batch is the batch plan for the new allocation when the job's
	// Speedup implements goodput.BatchPlanner; zero otherwise.
	Batch goodput.BatchPlan `json:"batch"`
	// SpeedupBefore and SpeedupAfter are the job's Speedup values for its
	// old and new allocation (0 when not running).
	SpeedupBefore float64 `json:"speedup_before"`
	SpeedupAfter  float64 `json:"speedup_after"`
	// Reason is the typed cause; Message says it in words, for example
	// "grew 4→8: speedup 2.9→4.6, restart factor 0.97".
	Reason  Reason `json:"reason"`
	Message string `json:"message"`
}

// Plan is the result of one round: one Decision per input job, sorted by
// job ID. The host applies it and passes the resulting assignments as the
// next round's Input.Current.
type Plan struct {
	// Decisions has one entry per input job, sorted by job ID.
	Decisions []Decision `json:"decisions"`
}

// Decision returns the decision for job id.
func (p Plan) Decision(id string) (Decision, bool) {
	for _, d := range p.Decisions {
		if d.Job == id {
			return d, true
		}
	}
	return Decision{}, false
}

// Assignments returns the assignments of the jobs that run after the
// round, in job-ID order: the next round's Input.Current.
func (p Plan) Assignments() []placement.Assignment {
	var out []placement.Assignment
	for _, d := range p.Decisions {
		if d.To > 0 {
			out = append(out, d.Assignment)
		}
	}
	return out
}

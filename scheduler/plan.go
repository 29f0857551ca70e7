package scheduler

import (
	"fmt"
	"slices"
	"strings"

	"github.com/goodsched/goodsched/accel"
	"github.com/goodsched/goodsched/goodput"
	"github.com/goodsched/goodsched/placement"
	"github.com/goodsched/goodsched/scheduler/quota"
	"github.com/goodsched/goodsched/scheduler/tiers"
)

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
// placement-related ones itself, from the Placer's typed reason
// (placement.ReasonCapacity becomes ReasonNoCapacity, the other codes the
// Reason of the same name).
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
	// ReasonUnplaceable: the policy gave the job devices but the Placer
	// could not realise the gang, and gave no reason of its own.
	ReasonUnplaceable
	// ReasonRestartCost: a change would not pay for its checkpoint-restart.
	ReasonRestartCost
	// ReasonInterference: interference avoidance (at most one distributed
	// job per node) left no room for the job.
	ReasonInterference
	// ReasonFragmented: enough free devices, but not on few enough nodes
	// (placement.ReasonFragmented).
	ReasonFragmented
	// ReasonTopology: no node has the gang's devices in one NVLink island
	// or NUMA node (placement.ReasonTopology).
	ReasonTopology
	// ReasonFiltered: the Placer's filters rejected the nodes that could
	// have taken the gang (placement.ReasonFiltered).
	ReasonFiltered
	// ReasonUnhealthy: the job held an unhealthy device and could not be
	// placed again (placement.ReasonUnhealthy).
	ReasonUnhealthy
	// ReasonQuota: the job's queue is at its entitlement for the type
	// (Input.Queues): its guarantee plus what it may borrow this round.
	ReasonQuota
	// ReasonReclaimed: the job was shrunk or preempted because its queue
	// had borrowed devices that their owners' queues reclaimed.
	ReasonReclaimed
	// ReasonCarbon: a delay-tolerant job runs narrower than it could, or
	// not at all, so that its work lands in cleaner hours before its
	// deadline (carbonaware.Policy), or the round's Envelope left it no room.
	ReasonCarbon
	// ReasonDeadline: the job's deadline can no longer be met (or the
	// forecast does not reach it), so it runs at full goodput.
	ReasonDeadline
	// ReasonTier: the job's service tier (Job.Tier) kept it from being
	// shrunk below its guarantee.
	ReasonTier
)

var reasonNames = [...]string{"unchanged", "objective", "pinned", "no-capacity", "order", "unplaceable",
	"restart-cost", "interference", "fragmented", "topology", "filtered", "unhealthy", "quota", "reclaimed", "carbon", "deadline", "tier"}

// String returns the reason's name ("unchanged", "objective", …).
func (r Reason) String() string {
	if r >= 0 && int(r) < len(reasonNames) {
		return reasonNames[r]
	}
	return fmt.Sprintf("reason(%d)", int(r))
}

// MarshalText writes the reason's name, so that JSON shows "objective",
// not 1.
func (r Reason) MarshalText() ([]byte, error) {
	if r < 0 || int(r) >= len(reasonNames) {
		return nil, fmt.Errorf("%w: reason %d", ErrInvalid, int(r))
	}
	return []byte(reasonNames[r]), nil
}

// UnmarshalText reads a reason's name.
func (r *Reason) UnmarshalText(b []byte) error {
	i := slices.Index(reasonNames[:], string(b))
	if i < 0 {
		return fmt.Errorf("%w: reason %q", ErrInvalid, b)
	}
	*r = Reason(i)
	return nil
}

// Decision is what the host must do for one job this round.
type Decision struct {
	// Job is the job's ID.
	Job string `json:"job"`
	// Action is what to do, in the placement package's words: Keep (same
	// devices), Grow (keeps its devices and gains more), Shrink (keeps
	// some), Move (other devices: a restart on a new set), Start, Stop
	// (preempted: the job waits) or Queue (waits, as before).
	Action placement.Action `json:"action"`
	// FromType and From are the device type and count the job held when
	// the round started (From 0 = not running).
	FromType accel.TypeKey `json:"from_type,omitempty"`
	From     int           `json:"from"`
	// Type and To are the device type and count after the round (To 0 =
	// not running).
	Type accel.TypeKey `json:"type,omitempty"`
	To   int           `json:"to"`
	// Shares, for a W-job that runs on devices of several types after
	// the round, are its devices per type with the logical workers they
	// host (Type is then empty and FromType is empty when it held such a
	// gang before); nil otherwise.
	Shares []placement.Share `json:"shares,omitempty"`
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
	// Queues reports, when Input.Queues is set, every queue's standing
	// per device type of the cluster, sorted by queue name then type; nil
	// without queues.
	Queues []quota.Usage `json:"queues,omitempty"`
	// Tiers reports, when some job has a Tier, each tier present: its
	// jobs, those running, preempted or shrunk this round, and those
	// below their guarantee; sorted premium, standard, basic; nil
	// otherwise.
	Tiers []tiers.Report `json:"tiers,omitempty"`
}

// Decision returns the decision for job id: a binary search when the
// decisions are sorted by job ID (as Schedule returns them), else a scan.
func (p Plan) Decision(id string) (Decision, bool) {
	if k, ok := slices.BinarySearchFunc(p.Decisions, id, func(d Decision, id string) int { return strings.Compare(d.Job, id) }); ok {
		return p.Decisions[k], true
	}
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

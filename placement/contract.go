package placement

import (
	"context"
	"fmt"
	"slices"

	"github.com/goodsched/goodsched/accel"
)

// Assignment is the set of concrete devices (accel.Device.ID) serving a job.
type Assignment struct {
	// Job names the job.
	Job string `json:"job"`
	// Devices are accel.Device.ID values.
	Devices []string `json:"devices"`
	// Workers, for a job with a fixed number of logical workers
	// (EasyScale's W-jobs), is how many of them each device hosts, in the
	// order of Devices; nil for every other job.
	Workers []int `json:"workers,omitempty"`
}

// Target is what a policy wants for one job in a round: Count devices of
// Type on at most MaxNodes nodes (0 = any number). Count 0 means the job
// does not run this round.
type Target struct {
	// Job names the job; unique within a round.
	Job string `json:"job"`
	// Type is the device type (ignored when Count is 0).
	Type accel.TypeKey `json:"type"`
	// Count is the number of devices, 0 or more.
	Count int `json:"count"`
	// MaxNodes limits how many nodes the gang may span (0 = any).
	MaxNodes int `json:"max_nodes,omitempty"`
}

// ReasonCode classifies why a request or target was not placed (or, on a
// Decision, what happened).
type ReasonCode int

// Reason codes. "Does not fit" is a result, not an error.
const (
	// ReasonNone: placed as asked.
	ReasonNone ReasonCode = iota
	// ReasonCapacity: fewer free healthy devices of the type than asked.
	ReasonCapacity
	// ReasonFragmented: enough free devices, but not on few enough nodes.
	ReasonFragmented
	// ReasonTopology: no node has enough free devices in one NVLink island
	// or one NUMA node.
	ReasonTopology
	// ReasonInterference: it would fit only by sharing a node with another
	// distributed (multi-node) job.
	ReasonInterference
	// ReasonFiltered: a Filter rejected the nodes that could have taken it.
	ReasonFiltered
	// ReasonStopped: the job has no target (or a zero count) this round.
	ReasonStopped
	// ReasonUnhealthy: the job held an unhealthy device and was re-placed.
	ReasonUnhealthy
)

var reasonNames = [...]string{"none", "capacity", "fragmented", "topology", "interference", "filtered", "stopped", "unhealthy"}

// String returns the code's name.
func (c ReasonCode) String() string {
	if c >= 0 && int(c) < len(reasonNames) {
		return reasonNames[c]
	}
	return "unknown"
}

// Reason is a typed code with a sentence for people.
type Reason struct {
	// Code classifies the reason.
	Code ReasonCode `json:"code"`
	// Text explains it with the figures involved.
	Text string `json:"text,omitempty"`
}

// MarshalText writes the code's name (so JSON shows "capacity", not 1).
func (c ReasonCode) MarshalText() ([]byte, error) {
	if c < 0 || int(c) >= len(reasonNames) {
		return nil, fmt.Errorf("%w: reason code %d", ErrInvalid, int(c))
	}
	return []byte(reasonNames[c]), nil
}

// UnmarshalText reads a code's name.
func (c *ReasonCode) UnmarshalText(b []byte) error {
	i := slices.Index(reasonNames[:], string(b))
	if i < 0 {
		return fmt.Errorf("%w: reason code %q", ErrInvalid, b)
	}
	*c = ReasonCode(i)
	return nil
}

// Placer realises a scheduling round's targets on concrete devices: the
// contract between a scheduler (scheduler.Scheduler calls it every round)
// and a placement strategy. RoundPlacer (the default) and Packer are this
// package's; others live in their own packages (scheduler/topoplace,
// variability/palplace). Implementations must be deterministic and must
// not modify their input.
type Placer interface {
	// Place returns an assignment for every target it could place and an
	// Unplaced entry, with a typed reason, for every target it could not.
	Place(ctx context.Context, in PlaceInput) (PlaceResult, error)
}

// StateUser is an optional interface of a Placer: one whose UsesState
// returns false never reads PlaceInput.State (it works from Cluster and
// Current), so the caller builds no State for it and passes nil. A Placer
// without the method gets a State.
type StateUser interface {
	// UsesState reports whether Place reads PlaceInput.State.
	UsesState() bool
}

// PlaceInput is what a Placer is asked to realise.
type PlaceInput struct {
	// Cluster is the round's cluster index (read-only).
	Cluster *Index
	// Current holds the assignments in effect, in job order (jobs absent
	// from Targets release their devices); State is the same usage as a
	// State, a copy the Placer may modify (nil for a Placer whose
	// StateUser.UsesState reports false).
	Current []Assignment
	State   *State
	// Targets are the targets to realise, with positive counts, in job
	// order; each names one device type (a scheduler splits a gang of
	// several types into parts, GangPart).
	Targets []Target
	// AllowInterference lifts the rule that a node hosts at most one
	// distributed (multi-node) job (the scheduler's one setting for it).
	AllowInterference bool
	// Speeds reports per-device, per-job slowdowns (nil = no speed data;
	// placers that do not read it place as before).
	Speeds Speeds
}

// PlaceResult is a Placer's answer.
type PlaceResult struct {
	// Assignments holds one assignment per placed target.
	Assignments []Assignment
	// Unplaced lists the targets that could not be placed, with a typed
	// reason. A job that held devices may keep them (an assignment equal
	// to its current one).
	Unplaced []Unplaced
}

// Speeds tells placers and policies how fast each device runs each job:
// devices of one type are not equally fast (PAL, SC'24, measured 8–22%
// spread between V100s of one cluster), and interference makes the
// difference change over time. A synchronous gang runs at the speed of
// its slowest device, and slower still when it spans nodes.
//
// The host builds it per round (package variability's Estimator.Speeds is
// one) and hands it to the scheduler (scheduler.Input.Speeds), which
// passes it to the Placer as PlaceInput.Speeds. Nil means no speed data:
// every device of a type is taken as equally fast, and every plan is as
// without it. Implementations must be safe for concurrent reads and must
// not change during a round.
type Speeds interface {
	// Slowdown returns how many times longer job's steps take on device
	// than on a nominal device of its type: 1 is nominal, 1.2 is 20%
	// slower, and 1 is also the answer for a device or job it knows
	// nothing of. Values are finite and > 0.
	Slowdown(job, device string) float64
	// LocalityPenalty returns how many times longer job's steps take
	// when its gang spans more than one node (≥ 1; 1 = no penalty).
	LocalityPenalty(job string) float64
}

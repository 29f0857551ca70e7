package placement

import (
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

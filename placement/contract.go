package placement

import "github.com/goodsched/goodsched/accel"

// Assignment is the set of concrete devices (accel.Device.ID) serving a job.
type Assignment struct {
	Job     string   `json:"job"`
	Devices []string `json:"devices"`
}

// Target is what a policy wants for one job in a round: Count devices of
// Type on at most MaxNodes nodes (0 = any number). Count 0 means the job
// does not run this round.
type Target struct {
	Job      string        `json:"job"`
	Type     accel.TypeKey `json:"type"`
	Count    int           `json:"count"`
	MaxNodes int           `json:"max_nodes,omitempty"`
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
	Code ReasonCode `json:"code"`
	Text string     `json:"text,omitempty"`
}

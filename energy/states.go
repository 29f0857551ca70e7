package energy

import (
	"fmt"
	"math"
	"time"
)

// NodeState is the power state of a node. The zero value is On.
type NodeState uint8

const (
	// On: the node's devices are offered to jobs and draw their busy or
	// idle power (PowerModel.Power).
	On NodeState = iota
	// Suspended: suspended to RAM (ACPI S3); its devices are not offered
	// and the whole node draws NodePower.SuspendedWatts.
	Suspended
	// Off: soft off (ACPI S5, the management controller still powered);
	// its devices are not offered and the node draws NodePower.OffWatts.
	Off
)

// String returns "on", "suspended" or "off".
func (s NodeState) String() string {
	switch s {
	case On:
		return "on"
	case Suspended:
		return "suspended"
	case Off:
		return "off"
	}
	return fmt.Sprintf("NodeState(%d)", uint8(s))
}

// Transition is one change of a node's power state: how long the node is
// unusable while it happens and the energy it draws meanwhile.
type Transition struct {
	// Duration is how long the change takes; the node's devices are not
	// offered until it is over. Not negative.
	Duration time.Duration
	// Joules is the node's energy over the change (not counting the
	// state it leaves or enters). Not negative.
	Joules float64
}

// NodePower is the power of a node in each state that is not On, and the
// cost of each change of state; figures are per node, whatever its
// devices. It only matters where some host powers nodes down (package
// provision): with every node On, accounting is PowerModel.Account's.
//
// The zero value is DefaultNodePower; a NodePower with any field set is
// used as given (so a model may say 0 W for off).
type NodePower struct {
	// SuspendedWatts and OffWatts are the node's draw while suspended to
	// RAM and while soft off. Not negative.
	SuspendedWatts, OffWatts float64
	// Suspend (On → Suspended), Resume (Suspended → On), Shutdown (On or
	// Suspended → Off) and Boot (Off → On).
	Suspend, Resume, Shutdown, Boot Transition
}

// DefaultNodePower is a two-socket GPU server, from published vendor
// figures and their usual ranges (approximations: measure your own
// nodes and set NodePower where it matters):
//
//   - soft off, 8 W: the management controller's standby draw (BMCs such
//     as iDRAC or iLO, with the power supplies' standby rail, are
//     commonly rated at roughly 5–15 W);
//   - suspended to RAM, 15 W: standby plus DRAM self-refresh of a few
//     hundred GB;
//   - transitions at 200 W, a server's draw while its firmware and
//     operating system run with idle accelerators: boot 240 s
//     (enterprise firmware's memory training and POST take 2–5 minutes,
//     then the OS and the accelerator driver), shutdown 30 s, suspend
//     10 s, resume 20 s (device driver re-initialisation included).
//
// With 4 T4 (10.5 W idle each in the default PowerModel) suspending a node
// pays for itself after about 4 minutes down, and powering it off instead
// of suspending it after about 1.9 hours down.
var DefaultNodePower = NodePower{
	SuspendedWatts: 15,
	OffWatts:       8,
	Suspend:        Transition{Duration: 10 * time.Second, Joules: 200 * 10},
	Resume:         Transition{Duration: 20 * time.Second, Joules: 200 * 20},
	Shutdown:       Transition{Duration: 30 * time.Second, Joules: 200 * 30},
	Boot:           Transition{Duration: 240 * time.Second, Joules: 200 * 240},
}

// orDefault returns n, or DefaultNodePower for the zero value.
func (n NodePower) orDefault() NodePower {
	if n == (NodePower{}) {
		return DefaultNodePower
	}
	return n
}

// Validate checks the figures: watts, durations and joules must be
// finite and not negative. Errors wrap ErrInvalid and name the field.
func (n NodePower) Validate() error {
	for _, f := range []struct {
		name string
		v    float64
	}{{"SuspendedWatts", n.SuspendedWatts}, {"OffWatts", n.OffWatts}} {
		if math.IsNaN(f.v) || math.IsInf(f.v, 0) || f.v < 0 {
			return fmt.Errorf("%w: NodePower.%s %v: must be finite and not negative", ErrInvalid, f.name, f.v)
		}
	}
	for _, f := range []struct {
		name string
		t    Transition
	}{{"Suspend", n.Suspend}, {"Resume", n.Resume}, {"Shutdown", n.Shutdown}, {"Boot", n.Boot}} {
		if f.t.Duration < 0 {
			return fmt.Errorf("%w: NodePower.%s.Duration %v is negative", ErrInvalid, f.name, f.t.Duration)
		}
		if j := f.t.Joules; math.IsNaN(j) || math.IsInf(j, 0) || j < 0 {
			return fmt.Errorf("%w: NodePower.%s.Joules %v: must be finite and not negative", ErrInvalid, f.name, j)
		}
	}
	return nil
}

// Watts is the node's draw in state s (0 for On: its devices' draw is
// PowerModel.Power's). The zero NodePower reads as DefaultNodePower.
func (n NodePower) Watts(s NodeState) float64 {
	n = n.orDefault()
	switch s {
	case Suspended:
		return n.SuspendedWatts
	case Off:
		return n.OffWatts
	}
	return 0
}

// Change returns the transition from state a to state b: the zero
// Transition when a == b; Off → Suspended is a Boot (a node must be on
// to suspend), Suspended → Off a Shutdown. The zero NodePower reads as
// DefaultNodePower.
func (n NodePower) Change(a, b NodeState) Transition {
	n = n.orDefault()
	switch {
	case a == b:
		return Transition{}
	case b == On && a == Suspended:
		return n.Resume
	case b == On:
		return n.Boot
	case b == Suspended && a == On:
		return n.Suspend
	case b == Suspended:
		// Off → Suspended: boot, then suspend.
		return Transition{Duration: n.Boot.Duration + n.Suspend.Duration, Joules: n.Boot.Joules + n.Suspend.Joules}
	}
	return n.Shutdown
}

// NodeInterval is what one node did over an accounted interval
// (PowerModel.AccountNodes).
type NodeInterval struct {
	// State is the node's state, or the one it is moving into.
	State NodeState
	// Moving is how much of the interval the node spent in a transition
	// into State (at most the interval); MovingJoules its energy over
	// that part.
	Moving       time.Duration
	MovingJoules float64
}

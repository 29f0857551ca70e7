package sim

import (
	"context"
	"fmt"
	"slices"

	"github.com/goodsched/goodsched/energy"
	"github.com/goodsched/goodsched/scheduler"
)

// Provisioner powers nodes up and down between rounds (Config.Provision);
// package provision has one driven by the carbon-aware job plans.
type Provisioner interface {
	// Provision returns the state each node of in.Cluster (in its order)
	// should be in from now on, given the states they are in or moving
	// into (states; On for every node at the start). in is the round's
	// Input, with every node's devices (those of nodes not on included,
	// healthy unless failed), its jobs and the carbon forecast; with no
	// job active it has no jobs.
	Provision(ctx context.Context, in scheduler.Input, states []energy.NodeState) ([]energy.NodeState, error)
}

// power is the engine's node power state (Config.Provision).
type power struct {
	p     Provisioner
	state []energy.NodeState // the state each node is in, or moving into
	// a transition into state runs over [since, ready) (seconds on the
	// workload clock) and draws joules; ready ≤ now: settled.
	since, ready, joules []float64
	transitions          int
}

// powerOf returns the node power state, creating it on first use; nil
// without Config.Provision.
func (e *engine) powerOf() *power {
	if e.cfg.Provision == nil {
		return nil
	}
	if e.pow == nil {
		n := len(e.cluster.Nodes)
		e.pow = &power{p: e.cfg.Provision, state: make([]energy.NodeState, n),
			since: make([]float64, n), ready: make([]float64, n), joules: make([]float64, n)}
	}
	return e.pow
}

// provision asks the Provisioner for the nodes' states (in: the round's
// Input; nil builds one with no jobs), starts the transitions it asks
// for, and offers the policy only the devices of nodes that are on and
// settled (in.Cluster is replaced by that view). A node holding a running
// job's devices stays on whatever the Provisioner says; a node still
// moving finishes its transition first. Without Config.Provision it does
// nothing.
func (e *engine) provision(ctx context.Context, in *scheduler.Input) error {
	pw := e.powerOf()
	if pw == nil {
		return nil
	}
	if in == nil {
		now := e.cfg.Start.Add(dur(e.now))
		in = &scheduler.Input{Cluster: e.cluster, Now: now, Carbon: e.forecast(now)}
	}
	want, err := pw.p.Provision(ctx, *in, slices.Clone(pw.state))
	if err != nil {
		return fmt.Errorf("sim: provisioning at %v: %w", dur(e.now), err)
	}
	if len(want) != len(pw.state) {
		return fmt.Errorf("%w: provisioning at %v: %d states for %d nodes", ErrInvalid, dur(e.now), len(want), len(pw.state))
	}
	held := make([]bool, len(pw.state))
	for _, j := range e.live {
		if !j.done {
			for _, n := range j.nodes {
				held[n] = true
			}
		}
	}
	np := e.cfg.Power.Nodes
	for i, s := range want {
		if s > energy.Off {
			return fmt.Errorf("%w: provisioning at %v: node %d: state %v", ErrInvalid, dur(e.now), i, s)
		}
		if held[i] {
			s = energy.On
		}
		if s == pw.state[i] || pw.ready[i] > e.now {
			continue
		}
		t := np.Change(pw.state[i], s)
		pw.state[i], pw.since[i], pw.ready[i], pw.joules[i] = s, e.now, e.now+t.Duration.Seconds(), t.Joules
		pw.transitions++
		e.changed = true
	}
	off := e.cluster
	off.Nodes = slices.Clone(e.cluster.Nodes)
	for i := range off.Nodes {
		if pw.state[i] == energy.On && pw.ready[i] <= e.now {
			continue
		}
		devs := slices.Clone(off.Nodes[i].Devices)
		for k := range devs {
			devs[k].Healthy = false
		}
		off.Nodes[i].Devices = devs
	}
	in.Cluster = off
	return nil
}

// nodeIntervals returns what every node does over [now, now+dt) for the
// energy account.
func (pw *power) nodeIntervals(now, dt float64) []energy.NodeInterval {
	out := make([]energy.NodeInterval, len(pw.state))
	for i, s := range pw.state {
		out[i].State = s
		lo, hi := max(pw.since[i], now), min(pw.ready[i], now+dt)
		if hi > lo {
			out[i].Moving = dur(hi - lo)
			out[i].MovingJoules = pw.joules[i] * (hi - lo) / (pw.ready[i] - pw.since[i])
		}
		if out[i].Moving > dur(dt) {
			out[i].Moving = dur(dt)
		}
	}
	return out
}

// powering reports whether a node is still moving between states (a
// waiting job may get its devices when it is done).
func (e *engine) powering() bool {
	if e.pow == nil {
		return false
	}
	for _, r := range e.pow.ready {
		if r > e.now {
			return true
		}
	}
	return false
}

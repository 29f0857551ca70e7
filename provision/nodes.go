package provision

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/goodsched/goodsched/energy"
	"github.com/goodsched/goodsched/scheduler"
)

// Provision returns the state each node of in.Cluster should be in from
// Now (in cluster order), given the state each is in or moving into
// (states; nil reads as every node on). Per device type, with the nodes'
// demand n(s) = ⌈Demand's devices in slot s / devices per node⌉:
//
//   - on now: at least n(0), at least the nodes holding a running job's
//     devices; nodes already on stay on up to the most n(s) of the slots
//     that start within Hold (hysteresis), and the rest go down;
//   - which nodes: those holding jobs, then those on, then suspended,
//     then off (the fastest to bring back), each by cluster order;
//   - a node going down is suspended, or powered off when the plans next
//     need it (the first slot whose n(s) reaches it) later than the
//     break-even time of off over suspended (or OffAfter, when set), or
//     not within the forecast; a suspended node that will not be needed
//     for that long is powered off.
//
// Nodes whose devices have all failed keep their state. It implements
// sim.Provisioner.
func (p Planner) Provision(ctx context.Context, in scheduler.Input, states []energy.NodeState) ([]energy.NodeState, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if states != nil && len(states) != len(in.Cluster.Nodes) {
		return nil, fmt.Errorf("%w: %d states for %d nodes", ErrInvalid, len(states), len(in.Cluster.Nodes))
	}
	if err := p.Validate(); err != nil {
		return nil, err
	}
	types, byKey, err := p.types(in.Cluster)
	if err != nil {
		return nil, err
	}
	d, err := p.demand(in, types, byKey)
	if err != nil {
		return nil, err
	}
	out := make([]energy.NodeState, len(in.Cluster.Nodes))
	copy(out, states)
	holds := map[string]int{}
	for _, a := range in.Current {
		for _, id := range a.Devices {
			holds[id]++
		}
	}
	np := cmp.Or(p.Power.Nodes, energy.DefaultNodePower)
	breakEven, breakEvenSusp := offAfter(np, p.OffAfter)
	hold := cmp.Or(p.Hold, time.Hour)
	for t, ti := range types {
		per := max(ti.perNode, 1)
		need := make([]int, len(d.Devices[t]))
		for s, k := range d.Devices[t] {
			need[s] = min((k+per-1)/per, len(ti.nodes))
		}
		within := 1
		if d.Step > 0 {
			within = max(1, int((in.Now.Sub(d.Start)+hold+d.Step-1)/d.Step))
		}
		keep := slices.Max(need[:min(within, len(need))])
		type cand struct {
			node, rank, held int
		}
		var cands []cand
		on, must := 0, 0
		for k, n := range ti.nodes {
			if ti.failed[k] {
				continue
			}
			held := 0
			for _, dev := range in.Cluster.Nodes[n].Devices {
				held += holds[dev.ID]
			}
			rank := 1 + int(out[n]) // on 1, suspended 2, off 3
			if held > 0 {
				rank, must = 0, must+1
			}
			if out[n] == energy.On {
				on++
			}
			cands = append(cands, cand{n, rank, held})
		}
		target := on
		if target < need[0] {
			target = need[0]
		}
		if target > keep {
			target = max(keep, need[0])
		}
		target = max(target, must)
		slices.SortFunc(cands, func(a, b cand) int {
			return cmp.Or(cmp.Compare(a.rank, b.rank), cmp.Compare(b.held, a.held), cmp.Compare(a.node, b.node))
		})
		for i, c := range cands {
			if i < target {
				out[c.node] = energy.On
				continue
			}
			// The (i-target+1)-th node beyond those on is next needed in
			// the first slot whose demand reaches i+1 nodes.
			down := time.Duration(1<<62 - 1)
			for s := 1; s < len(need); s++ {
				if need[s] > i {
					down = d.Start.Add(time.Duration(s) * d.Step).Sub(in.Now)
					break
				}
			}
			switch out[c.node] {
			case energy.On:
				out[c.node] = energy.Suspended
				if down > breakEven {
					out[c.node] = energy.Off
				}
			case energy.Suspended:
				if down > breakEvenSusp {
					out[c.node] = energy.Off
				}
			}
		}
	}
	return out, nil
}

// offAfter returns how long a node going down, and a suspended one, must
// be unneeded before powering it off pays: off, when set, or the
// break-even times of np (off over suspended; off over staying
// suspended); "never" when off draws no less than suspended.
func offAfter(np energy.NodePower, off time.Duration) (down, suspended time.Duration) {
	if off > 0 {
		return off, off
	}
	// Off pays over suspended after this long down.
	extraJ := np.Shutdown.Joules + np.Boot.Joules - np.Suspend.Joules - np.Resume.Joules
	// Off pays over staying suspended after this long down.
	extraSuspJ := np.Shutdown.Joules + np.Boot.Joules - np.Resume.Joules
	down, suspended = time.Duration(1<<62-1), time.Duration(1<<62-1)
	if dw := np.SuspendedWatts - np.OffWatts; dw > 0 {
		down = time.Duration(max(extraJ, 0) / dw * float64(time.Second))
		suspended = time.Duration(max(extraSuspJ, 0) / dw * float64(time.Second))
	}
	return down, suspended
}

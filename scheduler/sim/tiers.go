package sim

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/goodsched/goodsched/placement"
)

// Tiers models the network above the node (racks, leaf and spine
// switches): a gang runs at Keep of its measured speed on the nodes it
// spans, and Observe sees the outcome of every round, for metrics such as
// stranded domain capacity. The scheduler never reads it; a
// topology-aware Placer (Config.Placer) brings its own model.
type Tiers struct {
	// Keep returns the fraction of its measured throughput a gang keeps
	// on the given nodes (names, sorted; one name for a one-node job), in
	// (0, 1]; nil = 1. Called once per allocation.
	Keep func(nodes []string) float64
	// Observe, if set, is called after every round, once the plan is
	// applied.
	Observe func(TiersRound)
}

// TiersRound is what Tiers.Observe sees of one round.
type TiersRound struct {
	// Now is the virtual time since the start of the workload.
	Now time.Duration
	// Current holds the running jobs' devices, by job.
	Current []placement.Assignment
	// Waiting holds, per submitted job without devices, how many it asks
	// for (the workload's num_replicas), in job order.
	Waiting []int
}

// keepOf is job j's throughput factor on its nodes.
func (e *engine) keepOf(j *job) (float64, error) {
	t := e.cfg.Tiers
	if t == nil || t.Keep == nil || len(j.nodes) == 0 {
		return 1, nil
	}
	names := make([]string, len(j.nodes))
	for i, n := range j.nodes {
		names[i] = e.cluster.Nodes[n].Name
	}
	slices.Sort(names)
	k := t.Keep(names)
	if math.IsNaN(k) || k <= 0 || k > 1 {
		return 0, fmt.Errorf("%w: Tiers.Keep(%v) = %v, want (0, 1]", ErrInvalid, names, k)
	}
	return k, nil
}

// observeTiers reports the round to Tiers.Observe.
func (e *engine) observeTiers() {
	t := e.cfg.Tiers
	if t == nil || t.Observe == nil {
		return
	}
	r := TiersRound{Now: dur(e.now)}
	for _, j := range e.active() {
		if len(j.devs) > 0 {
			r.Current = append(r.Current, placement.Assignment{Job: j.spec.Name, Devices: slices.Clone(j.devs)})
		} else {
			r.Waiting = append(r.Waiting, j.spec.Replicas)
		}
	}
	slices.SortFunc(r.Current, func(a, b placement.Assignment) int { return strings.Compare(a.Job, b.Job) })
	t.Observe(r)
}

package scheduler

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	"github.com/goodsched/goodsched/accel"
	"github.com/goodsched/goodsched/placement"
)

// Placer realises a round's targets on concrete devices. Implementations
// must be deterministic and must not modify their arguments.
type Placer interface {
	// Place returns an assignment for every target it could place and an
	// Unplaced entry, with a reason, for every target it could not.
	// current holds the assignments in effect (jobs absent from targets
	// release their devices).
	Place(ctx context.Context, cluster accel.Cluster, current []placement.Assignment, targets []Target) (PlaceResult, error)
}

// PlaceResult is a Placer's answer.
type PlaceResult struct {
	// Assignments holds one assignment per placed target.
	Assignments []placement.Assignment
	// Unplaced lists the targets that could not be placed.
	Unplaced []Unplaced
}

// Unplaced names a target that could not be placed and says why.
type Unplaced struct {
	Job    string
	Reason string
}

// Packer is a small consolidating Placer: jobs whose target equals their
// current type and count keep their devices; every other gang is placed,
// largest first, on the fewest nodes of its type (best fit on one node
// when it fits, else whole nodes with the most free devices first), with
// ties broken by node name and device index. It ignores links and NUMA.
//
// Packer is the Scheduler's fallback realisation until a placement-package
// round is configured. It is stateless and safe for concurrent use.
type Packer struct{}

var _ Placer = Packer{}

// Place implements Placer.
func (Packer) Place(ctx context.Context, cluster accel.Cluster, current []placement.Assignment, targets []Target) (PlaceResult, error) {
	if err := ctx.Err(); err != nil {
		return PlaceResult{}, err
	}
	type slot struct {
		node string
		devs []accel.Device // free healthy devices of one type, by index
	}
	devType := make(map[string]accel.TypeKey)
	healthy := make(map[string]bool)
	for _, n := range cluster.Nodes {
		for _, d := range n.Devices {
			devType[d.ID] = d.Type
			healthy[d.ID] = d.Healthy
		}
	}
	cur := make(map[string][]string, len(current))
	for _, a := range current {
		cur[a.Job] = a.Devices
	}
	used := make(map[string]bool)
	var res PlaceResult
	var todo []Target
	for _, t := range targets {
		if t.Count <= 0 {
			continue
		}
		devs := cur[t.Job]
		keep := len(devs) == t.Count
		for _, id := range devs {
			if devType[id] != t.Type || !healthy[id] || used[id] {
				keep = false
			}
		}
		if keep && (t.MaxNodes <= 0 || nodesOf(cluster, devs) <= t.MaxNodes) {
			for _, id := range devs {
				used[id] = true
			}
			res.Assignments = append(res.Assignments, placement.Assignment{Job: t.Job, Devices: slices.Clone(devs)})
			continue
		}
		todo = append(todo, t)
	}
	slices.SortStableFunc(todo, func(a, b Target) int {
		return cmp.Or(cmp.Compare(b.Count, a.Count), cmp.Compare(a.Job, b.Job))
	})
	for _, t := range todo {
		var slots []slot
		total := 0
		for _, n := range cluster.Nodes {
			var free []accel.Device
			for _, d := range n.Devices {
				if d.Type == t.Type && d.Healthy && !used[d.ID] {
					free = append(free, d)
				}
			}
			if len(free) > 0 {
				accel.SortDevices(free)
				slots = append(slots, slot{node: n.Name, devs: free})
				total += len(free)
			}
		}
		if total < t.Count {
			res.Unplaced = append(res.Unplaced, Unplaced{Job: t.Job, Reason: fmt.Sprintf("only %d free %s devices for %d", total, t.Type, t.Count)})
			continue
		}
		var pick []string
		// Best fit on one node.
		best := -1
		for i, s := range slots {
			if len(s.devs) >= t.Count && (best < 0 || len(s.devs) < len(slots[best].devs) ||
				(len(s.devs) == len(slots[best].devs) && s.node < slots[best].node)) {
				best = i
			}
		}
		if best >= 0 {
			for _, d := range slots[best].devs[:t.Count] {
				pick = append(pick, d.ID)
			}
		} else {
			slices.SortStableFunc(slots, func(a, b slot) int {
				return cmp.Or(cmp.Compare(len(b.devs), len(a.devs)), cmp.Compare(a.node, b.node))
			})
			need := t.Count
			nodes := 0
			for _, s := range slots {
				if need == 0 {
					break
				}
				k := min(need, len(s.devs))
				for _, d := range s.devs[:k] {
					pick = append(pick, d.ID)
				}
				need -= k
				nodes++
			}
			if t.MaxNodes > 0 && nodes > t.MaxNodes {
				res.Unplaced = append(res.Unplaced, Unplaced{Job: t.Job, Reason: fmt.Sprintf("%d %s devices span %d nodes, more than %d", t.Count, t.Type, nodes, t.MaxNodes)})
				continue
			}
		}
		for _, id := range pick {
			used[id] = true
		}
		res.Assignments = append(res.Assignments, placement.Assignment{Job: t.Job, Devices: pick})
	}
	slices.SortFunc(res.Assignments, func(a, b placement.Assignment) int { return cmp.Compare(a.Job, b.Job) })
	slices.SortFunc(res.Unplaced, func(a, b Unplaced) int { return cmp.Compare(a.Job, b.Job) })
	return res, nil
}

// nodesOf counts the distinct nodes holding the given devices.
func nodesOf(c accel.Cluster, ids []string) int {
	want := make(map[string]bool, len(ids))
	for _, id := range ids {
		want[id] = true
	}
	k := 0
	for _, n := range c.Nodes {
		for _, d := range n.Devices {
			if want[d.ID] {
				k++
				break
			}
		}
	}
	return k
}

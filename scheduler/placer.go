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
	// Job is the job's ID.
	Job string
	// Reason says why, in words.
	Reason string
}

// Packer is a small consolidating Placer: jobs whose target equals their
// current type and count keep their devices; every other gang is placed,
// largest first, on the fewest nodes of its type (best fit on one node
// when it fits, else whole nodes with the most free devices first), with
// ties broken by node name and device index. It ignores links, NUMA and
// interference; it does not shrink or grow jobs in place.
//
// Packer is a minimal alternative to RoundPlacer (the default), for hosts
// that want the simplest realisation and for tests. It is stateless and
// safe for concurrent use.
type Packer struct{}

var _ Placer = Packer{}

// Place implements Placer.
func (Packer) Place(ctx context.Context, cluster accel.Cluster, current []placement.Assignment, targets []Target) (PlaceResult, error) {
	if err := ctx.Err(); err != nil {
		return PlaceResult{}, err
	}
	type loc struct {
		node int
		typ  accel.TypeKey
		ok   bool // healthy
	}
	where := make(map[string]loc)
	for ni, n := range cluster.Nodes {
		for _, d := range n.Devices {
			where[d.ID] = loc{ni, d.Type, d.Healthy}
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
		nodes := make(map[int]bool)
		for _, id := range devs {
			l, found := where[id]
			if !found || l.typ != t.Type || !l.ok || used[id] {
				keep = false
				break
			}
			nodes[l.node] = true
		}
		if keep && (t.MaxNodes <= 0 || len(nodes) <= t.MaxNodes) {
			for _, id := range devs {
				used[id] = true
			}
			res.Assignments = append(res.Assignments, placement.Assignment{Job: t.Job, Devices: slices.Clone(devs)})
			continue
		}
		todo = append(todo, t)
	}
	// Free healthy devices per (type, node), lowest index first.
	type slot struct {
		node int
		free []string
	}
	slots := make(map[accel.TypeKey][]*slot)
	for ni, n := range cluster.Nodes {
		byType := make(map[accel.TypeKey]*slot)
		devs := slices.Clone(n.Devices)
		accel.SortDevices(devs)
		for _, d := range devs {
			if !d.Healthy || used[d.ID] {
				continue
			}
			sl := byType[d.Type]
			if sl == nil {
				sl = &slot{node: ni}
				byType[d.Type] = sl
				slots[d.Type] = append(slots[d.Type], sl)
			}
			sl.free = append(sl.free, d.ID)
		}
	}
	slices.SortStableFunc(todo, func(a, b Target) int {
		return cmp.Or(cmp.Compare(b.Count, a.Count), cmp.Compare(a.Job, b.Job))
	})
	name := func(s *slot) string { return cluster.Nodes[s.node].Name }
	for k, t := range todo {
		if k&63 == 0 {
			if err := ctx.Err(); err != nil {
				return PlaceResult{}, err
			}
		}
		ss := slots[t.Type]
		total := 0
		best := -1
		for i, s := range ss {
			n := len(s.free)
			total += n
			if n >= t.Count && (best < 0 || n < len(ss[best].free) || (n == len(ss[best].free) && name(s) < name(ss[best]))) {
				best = i
			}
		}
		if total < t.Count {
			res.Unplaced = append(res.Unplaced, Unplaced{Job: t.Job, Reason: fmt.Sprintf("only %d free %s devices for %d", total, t.Type, t.Count)})
			continue
		}
		var pick []string
		if best >= 0 {
			s := ss[best]
			pick = slices.Clone(s.free[:t.Count])
			s.free = s.free[t.Count:]
		} else {
			order := slices.Clone(ss)
			slices.SortStableFunc(order, func(a, b *slot) int {
				return cmp.Or(cmp.Compare(len(b.free), len(a.free)), cmp.Compare(name(a), name(b)))
			})
			need, nodes := t.Count, 0
			for _, s := range order {
				if need == 0 {
					break
				}
				if len(s.free) > 0 {
					need -= min(need, len(s.free))
					nodes++
				}
			}
			if t.MaxNodes > 0 && nodes > t.MaxNodes {
				res.Unplaced = append(res.Unplaced, Unplaced{Job: t.Job, Reason: fmt.Sprintf("%d %s devices span %d nodes, more than %d", t.Count, t.Type, nodes, t.MaxNodes)})
				continue
			}
			need = t.Count
			for _, s := range order {
				if need == 0 {
					break
				}
				k := min(need, len(s.free))
				pick = append(pick, s.free[:k]...)
				s.free = s.free[k:]
				need -= k
			}
		}
		res.Assignments = append(res.Assignments, placement.Assignment{Job: t.Job, Devices: pick})
	}
	slices.SortFunc(res.Assignments, func(a, b placement.Assignment) int { return cmp.Compare(a.Job, b.Job) })
	slices.SortFunc(res.Unplaced, func(a, b Unplaced) int { return cmp.Compare(a.Job, b.Job) })
	return res, nil
}

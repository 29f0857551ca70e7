package scheduler

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	"github.com/goodsched/goodsched/accel"
	"github.com/goodsched/goodsched/placement"
)

// RoundPlacer realises targets with the placement package's round
// (placement.Placer.Round): jobs whose devices meet their target keep
// them, others shrink or grow in place where they can, the rest are
// re-placed largest first, NVLink- and interference-aware. A job whose
// new target cannot be met keeps the devices it held (reported as
// unplaced, with the round's typed reason). It is the Scheduler's default
// Placer.
//
// Interference avoidance follows PlaceInput.AllowInterference (the
// Scheduler's Config.AllowInterference), not Placer.AllowInterference.
// RoundPlacer is safe for concurrent use when its Placer's Filters and
// Scores are.
type RoundPlacer struct {
	// Placer is the placement package's placer (strategy, filters,
	// scores); the zero value packs.
	Placer placement.Placer
}

var _ Placer = RoundPlacer{}

// Place implements Placer.
func (p RoundPlacer) Place(ctx context.Context, in PlaceInput) (PlaceResult, error) {
	if err := ctx.Err(); err != nil {
		return PlaceResult{}, err
	}
	st := in.State
	if st == nil {
		var err error
		if st, err = in.Cluster.NewState(in.Current); err != nil {
			return PlaceResult{}, err
		}
	}
	pts := make([]placement.Target, 0, len(in.Targets))
	for _, t := range in.Targets {
		if t.Count > 0 {
			pts = append(pts, placement.Target{Job: t.Job, Type: t.Type, Count: t.Count, MaxNodes: t.MaxNodes})
		}
	}
	pl := p.Placer
	pl.AllowInterference = in.AllowInterference
	rr, err := pl.Round(st, pts)
	if err != nil {
		return PlaceResult{}, err
	}
	res := PlaceResult{Unplaced: rr.Unplaced}
	for _, d := range rr.Decisions {
		if d.Action != placement.Stop && len(d.Devices) > 0 {
			res.Assignments = append(res.Assignments, placement.Assignment{Job: d.Job, Devices: d.Devices})
		}
	}
	return res, nil
}

// Packer is a small consolidating Placer: jobs whose target equals their
// current type and count keep their devices; every other gang is placed,
// largest first, on the fewest nodes of its type (best fit on one node
// when it fits, else whole nodes with the most free devices first), with
// ties broken by node name and device index. It ignores links, NUMA and
// interference (PlaceInput.AllowInterference); it does not shrink or grow
// jobs in place.
//
// Packer is a minimal alternative to RoundPlacer (the default), for hosts
// that want the simplest realisation and for tests. It is stateless and
// safe for concurrent use.
type Packer struct{}

var _ Placer = Packer{}

// Place implements Placer.
func (Packer) Place(ctx context.Context, in PlaceInput) (PlaceResult, error) {
	if err := ctx.Err(); err != nil {
		return PlaceResult{}, err
	}
	cur := make(map[string][]string, len(in.Current))
	for _, a := range in.Current {
		cur[a.Job] = a.Devices
	}
	used := make(map[string]bool)
	var res PlaceResult
	var todo []Target
	for _, t := range in.Targets {
		if t.Count <= 0 {
			continue
		}
		devs := cur[t.Job]
		keep := len(devs) == t.Count
		var nodes []string
		for _, id := range devs {
			d, found := in.Cluster.Device(id)
			if !found || d.Type != t.Type || !d.Usable() || used[id] {
				keep = false
				break
			}
			if !slices.Contains(nodes, d.Node) {
				nodes = append(nodes, d.Node)
			}
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
	// Free usable devices per (type, node), lowest index first.
	type slot struct {
		node string
		free []string
	}
	slots := make(map[accel.TypeKey][]*slot)
	for ni := range in.Cluster.Nodes() {
		node, devs := in.Cluster.Node(ni)
		byType := make(map[accel.TypeKey]*slot)
		for _, d := range devs {
			if !d.Usable() || used[d.ID] {
				continue
			}
			sl := byType[d.Type]
			if sl == nil {
				sl = &slot{node: node}
				byType[d.Type] = sl
				slots[d.Type] = append(slots[d.Type], sl)
			}
			sl.free = append(sl.free, d.ID)
		}
	}
	slices.SortStableFunc(todo, func(a, b Target) int {
		return cmp.Or(cmp.Compare(b.Count, a.Count), cmp.Compare(a.Job, b.Job))
	})
	name := func(s *slot) string { return s.node }
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
			res.Unplaced = append(res.Unplaced, unplaced(t, placement.ReasonCapacity, fmt.Sprintf("only %d free %s devices for %d", total, t.Type, t.Count)))
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
				res.Unplaced = append(res.Unplaced, unplaced(t, placement.ReasonFragmented, fmt.Sprintf("%d %s devices span %d nodes, more than %d", t.Count, t.Type, nodes, t.MaxNodes)))
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
	slices.SortFunc(res.Unplaced, func(a, b placement.Unplaced) int { return cmp.Compare(a.Target.Job, b.Target.Job) })
	return res, nil
}

// unplaced reports target t as not placed, with a typed reason.
func unplaced(t Target, code placement.ReasonCode, text string) placement.Unplaced {
	return placement.Unplaced{Target: placement.Target{Job: t.Job, Type: t.Type, Count: t.Count, MaxNodes: t.MaxNodes},
		Reason: placement.Reason{Code: code, Text: text}}
}

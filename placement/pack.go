package placement

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	"github.com/goodsched/goodsched/accel"
	"github.com/goodsched/goodsched/internal/nodeset"
)

// Consolidate places targets on the usable devices of x, from the assignments in
// effect (current; jobs without a target release theirs), the simplest
// consolidating way: a job whose current devices already meet its target
// (count, type, usable, within MaxNodes) keeps them; every other gang is
// placed, largest first, on the fewest nodes of its type (best fit on one
// node when it fits, else whole nodes with the most free devices first),
// ties broken by node name and device index. It ignores links, NUMA and
// interference, and does not shrink or grow jobs in place. It returns the
// assignments and the targets it could not place (ReasonCapacity,
// ReasonFragmented), both by job, and the context's error when ctx ends.
// Nodes are filed by free count in two bit sets, so each choice costs
// O(log nodes).
func Consolidate(ctx context.Context, x *Index, current []Assignment, targets []Target) ([]Assignment, []Unplaced, error) {
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	kept, used, todo := keepCurrent(x, current, targets)
	res := struct {
		Assignments []Assignment
		Unplaced    []Unplaced
	}{Assignments: kept}
	// Free usable devices per (type, node), lowest index first.
	pools := make(map[accel.TypeKey]*pool)
	for ni := range x.Nodes() {
		_, devs := x.Node(ni)
		var sl *freeSlot
		for _, d := range devs { // by type, then index
			if !d.Usable() || used[d.ID] {
				continue
			}
			if sl == nil || sl.typ != d.Type {
				p := pools[d.Type]
				if p == nil {
					p = &pool{}
					pools[d.Type] = p
				}
				sl = &freeSlot{typ: d.Type, pos: len(p.slots)}
				p.slots = append(p.slots, sl)
			}
			sl.free = append(sl.free, d.ID)
		}
	}
	for _, p := range pools {
		p.index()
	}
	slices.SortStableFunc(todo, func(a, b Target) int {
		return cmp.Or(cmp.Compare(b.Count, a.Count), cmp.Compare(a.Job, b.Job))
	})
	for k, t := range todo {
		if k&63 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, nil, err
			}
		}
		p := pools[t.Type]
		if p == nil {
			p = &pool{}
		}
		if p.total < t.Count {
			res.Unplaced = append(res.Unplaced, unplaced(t, ReasonCapacity, fmt.Sprintf("only %d free %s devices for %d", p.total, t.Type, t.Count)))
			continue
		}
		var pick []string
		if s := p.bestFit(t.Count); s != nil {
			pick = p.take(s, t.Count)
		} else {
			if nodes := p.spread(t.Count); t.MaxNodes > 0 && nodes > t.MaxNodes {
				res.Unplaced = append(res.Unplaced, unplaced(t, ReasonFragmented, fmt.Sprintf("%d %s devices span %d nodes, more than %d", t.Count, t.Type, nodes, t.MaxNodes)))
				continue
			}
			// Whole nodes with the most free devices first, then by name.
			for need := t.Count; need > 0; {
				s := p.most()
				got := p.take(s, min(need, len(s.free)))
				pick = append(pick, got...)
				need -= len(got)
			}
		}
		res.Assignments = append(res.Assignments, Assignment{Job: t.Job, Devices: pick})
	}
	slices.SortFunc(res.Assignments, func(a, b Assignment) int { return cmp.Compare(a.Job, b.Job) })
	slices.SortFunc(res.Unplaced, func(a, b Unplaced) int { return cmp.Compare(a.Target.Job, b.Target.Job) })
	return res.Assignments, res.Unplaced, nil
}

// keepCurrent returns the assignments of the jobs whose current devices
// already meet their target (count, type, usable, within MaxNodes), the
// devices they hold, and the targets left to place.
func keepCurrent(x *Index, current []Assignment, targets []Target) (kept []Assignment, used map[string]bool, todo []Target) {
	cur := make(map[string][]string, len(current))
	for _, a := range current {
		cur[a.Job] = a.Devices
	}
	used = make(map[string]bool, x.Devices())
	for _, t := range targets {
		if t.Count <= 0 {
			continue
		}
		devs := cur[t.Job]
		keep := len(devs) == t.Count
		for _, id := range devs {
			if d, found := x.Device(id); !found || d.Type != t.Type || !d.Usable() || used[id] {
				keep = false
				break
			}
		}
		if keep && (t.MaxNodes <= 0 || x.NodesOf(devs) <= t.MaxNodes) {
			for _, id := range devs {
				used[id] = true
			}
			kept = append(kept, Assignment{Job: t.Job, Devices: slices.Clone(devs)})
			continue
		}
		todo = append(todo, t)
	}
	return kept, used, todo
}

// unplaced reports target t as not placed, with a typed reason.
func unplaced(t Target, code ReasonCode, text string) Unplaced {
	return Unplaced{Target: t, Reason: Reason{Code: code, Text: text}}
}

// freeSlot is the free usable devices of one type on one node, lowest
// index first; pos is the node's rank by name among the type's nodes.
type freeSlot struct {
	typ  accel.TypeKey
	pos  int
	free []string
}

// pool files a type's nodes by free count, so that Consolidate's best fit and
// most-free choices cost O(log nodes) instead of a scan of every node.
type pool struct {
	slots []*freeSlot
	total int
	// byFree[k] holds the name ranks of the nodes with k free devices
	// (made on first use) and live[k] how many there are; frees holds
	// the counts k that some node has.
	byFree []nodeset.Set
	live   []int
	frees  nodeset.Set
}

// index files every node by its free count.
func (p *pool) index() {
	most := 0
	for _, s := range p.slots {
		most = max(most, len(s.free))
		p.total += len(s.free)
	}
	p.byFree, p.live, p.frees = make([]nodeset.Set, most+1), make([]int, most+1), nodeset.New(most+1)
	for _, s := range p.slots {
		p.file(s.pos, len(s.free))
	}
}

// file adds node pos to the nodes with k > 0 free devices.
func (p *pool) file(pos, k int) {
	if p.byFree[k] == nil {
		p.byFree[k] = nodeset.New(len(p.slots))
	}
	if p.live[k] == 0 {
		p.frees.Add(k)
	}
	p.byFree[k].Add(pos)
	p.live[k]++
}

// first returns the node with k free devices that comes first by name.
func (p *pool) first(k int) *freeSlot { return p.slots[p.byFree[k].Next(0)] }

// bestFit is the node with the fewest free devices that still holds c,
// first by name (nil when no node does).
func (p *pool) bestFit(c int) *freeSlot {
	if c >= len(p.live) {
		return nil
	}
	if k := p.frees.Next(c); k > 0 {
		return p.first(k)
	}
	return nil
}

// most is the node with the most free devices, first by name.
func (p *pool) most() *freeSlot { return p.first(p.frees.Prev(len(p.live) - 1)) }

// spread is how many nodes c devices take, most free first.
func (p *pool) spread(c int) int {
	nodes := 0
	for k := p.frees.Prev(len(p.live) - 1); k > 0 && c > 0; k = p.frees.Prev(k - 1) {
		n := p.live[k]
		if n*k >= c {
			return nodes + (c+k-1)/k
		}
		nodes += n
		c -= n * k
	}
	return nodes
}

// take removes the first c free devices of node s and refiles it.
func (p *pool) take(s *freeSlot, c int) []string {
	k := len(s.free)
	p.byFree[k].Remove(s.pos)
	if p.live[k]--; p.live[k] == 0 {
		p.frees.Remove(k)
	}
	got := slices.Clone(s.free[:c])
	s.free = s.free[c:]
	p.total -= c
	if k > c {
		p.file(s.pos, k-c)
	}
	return got
}

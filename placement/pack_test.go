package placement

import (
	"cmp"
	"context"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	"github.com/goodsched/goodsched/accel"
)

// scanConsolidate is Consolidate as it was before the pools, scanning
// every node per gang (after the same keepCurrent): the oracle.
func scanConsolidate(ctx context.Context, x *Index, current []Assignment, targets []Target) ([]Assignment, []Unplaced, error) {
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	kept, used, todo := keepCurrent(x, current, targets)
	res := struct {
		Assignments []Assignment
		Unplaced    []Unplaced
	}{Assignments: kept}
	// Free usable devices per (type, node), lowest index first.
	type slot struct {
		node string
		free []string
	}
	slots := make(map[accel.TypeKey][]*slot)
	for ni := range x.Nodes() {
		node, devs := x.Node(ni)
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
				return nil, nil, err
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
			res.Unplaced = append(res.Unplaced, unplaced(t, ReasonCapacity, fmt.Sprintf("only %d free %s devices for %d", total, t.Type, t.Count)))
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
				res.Unplaced = append(res.Unplaced, unplaced(t, ReasonFragmented, fmt.Sprintf("%d %s devices span %d nodes, more than %d", t.Count, t.Type, nodes, t.MaxNodes)))
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
		res.Assignments = append(res.Assignments, Assignment{Job: t.Job, Devices: pick})
	}
	slices.SortFunc(res.Assignments, func(a, b Assignment) int { return cmp.Compare(a.Job, b.Job) })
	slices.SortFunc(res.Unplaced, func(a, b Unplaced) int { return cmp.Compare(a.Target.Job, b.Target.Job) })
	return res.Assignments, res.Unplaced, nil
}

// Consolidate's pools choose exactly what the node scan chose, on random
// clusters (mixed types, unhealthy devices), current assignments and
// targets (some with MaxNodes).
func TestConsolidateMatchesScan(t *testing.T) {
	for seed := range uint64(300) {
		rng := rand.New(rand.NewPCG(seed, 11))
		var c accel.Cluster
		types := []accel.TypeKey{"a100", "t4", "v100"}[:1+rng.IntN(3)]
		for n := range 1 + rng.IntN(40) {
			name := fmt.Sprintf("n%02d", rng.IntN(1000)*100+n) // names out of input order
			node := accel.Node{Name: name}
			for k := range 1 + rng.IntN(8) {
				node.Devices = append(node.Devices, accel.Device{ID: fmt.Sprintf("%s/%d", name, k), Node: name, Index: k,
					Type: types[rng.IntN(len(types))], Healthy: rng.IntN(10) > 0})
			}
			c.Nodes = append(c.Nodes, node)
		}
		ix, err := NewIndex(c)
		if err != nil {
			t.Fatal(err)
		}
		var current []Assignment
		var targets []Target
		free := map[string]bool{}
		for _, n := range c.Nodes {
			for _, d := range n.Devices {
				free[d.ID] = true
			}
		}
		for j := range 1 + rng.IntN(30) {
			id := fmt.Sprintf("j%02d", j)
			typ := types[rng.IntN(len(types))]
			if rng.IntN(3) == 0 { // holds some devices of one type
				var devs []string
				for _, n := range c.Nodes {
					for _, d := range n.Devices {
						if d.Type == typ && free[d.ID] && rng.IntN(4) == 0 {
							devs = append(devs, d.ID)
							free[d.ID] = false
						}
					}
				}
				if len(devs) > 0 {
					current = append(current, Assignment{Job: id, Devices: devs})
					if rng.IntN(2) == 0 {
						typ = ""
						d, _ := ix.Device(devs[0])
						targets = append(targets, Target{Job: id, Type: d.Type, Count: len(devs)})
						continue
					}
				}
			}
			tg := Target{Job: id, Type: typ, Count: 1 + rng.IntN(12)}
			if rng.IntN(3) == 0 {
				tg.MaxNodes = 1 + rng.IntN(3)
			}
			targets = append(targets, tg)
		}
		wantA, wantU, err1 := scanConsolidate(context.Background(), ix, current, targets)
		gotA, gotU, err2 := Consolidate(context.Background(), ix, current, targets)
		if err1 != nil || err2 != nil || !reflect.DeepEqual(gotA, wantA) || !reflect.DeepEqual(gotU, wantU) {
			t.Fatalf("seed %d: got %+v %+v (%v)\nwant %+v %+v (%v)", seed, gotA, gotU, err2, wantA, wantU, err1)
		}
	}
}

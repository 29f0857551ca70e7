package placement

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/goodsched/goodsched/accel"
)

var propTypes = []accel.TypeKey{"a100", "h100", "t4"}

// randomCluster builds a small random cluster: nodes of 1–8 devices, one
// type each, random links and NUMA nodes, a few unhealthy devices.
func randomCluster(rng *rand.Rand) accel.Cluster {
	var c accel.Cluster
	nn := 1 + rng.IntN(8)
	for i := range nn {
		name := fmt.Sprintf("n%02d", rng.IntN(100)*100+i) // random name order
		t := propTypes[rng.IntN(len(propTypes))]
		k := 1 + rng.IntN(8)
		nd := accel.Node{Name: name}
		for d := range k {
			numa := rng.IntN(3) - 1
			nd.Devices = append(nd.Devices, accel.Device{
				ID: fmt.Sprintf("%s/%d", name, d), Node: name, Index: d, Type: t,
				NUMANode: numa, Healthy: rng.IntN(20) != 0,
			})
			for e := d + 1; e < k; e++ {
				if rng.IntN(3) == 0 {
					nd.Links = append(nd.Links, accel.Link{A: d, B: e, NVLinks: rng.IntN(4), PCIe: accel.PCIeLevel(rng.IntN(7))})
				}
			}
		}
		c.Nodes = append(c.Nodes, nd)
	}
	return c
}

func randomRequest(rng *rand.Rand, job string) Request {
	r := Request{Job: job, Count: 1 + rng.IntN(10)}
	switch rng.IntN(6) {
	case 0:
		r.SingleNode = true
	case 1:
		r.MaxNodes = 1 + rng.IntN(3)
	case 2:
		r.SameIsland = true
	case 3:
		r.SameNUMA = true
	}
	if rng.IntN(2) == 0 {
		r.Types = []accel.TypeKey{propTypes[rng.IntN(len(propTypes))]}
	}
	if rng.IntN(3) == 0 {
		r.Values = map[accel.TypeKey]float64{}
		for _, t := range propTypes {
			if r.Types == nil || slices.Contains(r.Types, t) {
				r.Values[t] = float64(rng.IntN(3))
			}
		}
	}
	return r
}

// checkInvariants verifies a state against its cluster: every device held
// at most once, counters consistent with a recount, free index consistent.
func checkInvariants(t *testing.T, c accel.Cluster, s *State) {
	t.Helper()
	held := map[string]string{}
	for _, a := range s.Assignments() {
		for _, id := range a.Devices {
			if o, dup := held[id]; dup {
				t.Fatalf("device %s held by %s and %s", id, o, a.Job)
			}
			held[id] = a.Job
			if o, _ := s.Owner(id); o != a.Job {
				t.Fatalf("owner of %s: %q, want %q", id, o, a.Job)
			}
		}
	}
	for _, f := range s.Fragmentation() {
		free, used, bad, partial, largest := 0, 0, 0, 0, 0
		for _, n := range c.Nodes {
			nf, nu := 0, 0
			for _, d := range n.Devices {
				if d.Type != f.Type {
					continue
				}
				_, isHeld := held[d.ID]
				h := s.Healthy(d.ID)
				switch {
				case isHeld:
					used++
					nu++
				case h:
					free++
					nf++
				}
				if !h {
					bad++
				}
			}
			if nu > 0 && nf > 0 {
				partial++
			}
			largest = max(largest, nf)
		}
		if f.Free != free || f.Used != used || f.Unhealthy != bad || f.PartlyUsedNodes != partial || f.LargestNodeGang != largest {
			t.Fatalf("%s: fragmentation %+v, recount free %d used %d bad %d partial %d largest %d", f.Type, f, free, used, bad, partial, largest)
		}
		if f.Free+f.Used > f.Capacity {
			t.Fatalf("%s over capacity: %+v", f.Type, f)
		}
	}
}

// checkPlacement verifies that a placed gang honours its request.
func checkPlacement(t *testing.T, c accel.Cluster, s *State, r Request, a Assignment, p Chooser) {
	t.Helper()
	if len(a.Devices) != r.Count {
		t.Fatalf("%+v: got %d devices", r, len(a.Devices))
	}
	nodes := map[string]bool{}
	numa := map[int]bool{}
	var typ accel.TypeKey
	for i, id := range a.Devices {
		d, ok := c.Device(id)
		if !ok {
			t.Fatalf("unknown device %s", id)
		}
		if o, held := s.Owner(id); held {
			t.Fatalf("device %s already held by %s", id, o)
		}
		if !s.Healthy(id) {
			t.Fatalf("unhealthy device %s offered", id)
		}
		if i > 0 && d.Type != typ {
			t.Fatalf("mixed types in %v", a.Devices)
		}
		typ = d.Type
		nodes[d.Node] = true
		numa[d.NUMANode] = true
	}
	if len(r.Types) > 0 && !slices.Contains(r.Types, typ) {
		t.Fatalf("type %s not allowed by %v", typ, r.Types)
	}
	if (r.singleNode() && len(nodes) != 1) || (r.MaxNodes > 0 && len(nodes) > r.MaxNodes) {
		t.Fatalf("%+v spans %d nodes", r, len(nodes))
	}
	if r.SameNUMA && (len(numa) != 1 || numa[-1]) {
		t.Fatalf("same NUMA violated: %v", a.Devices)
	}
	if len(nodes) > 1 && !p.AllowInterference {
		for n := range nodes {
			for _, other := range s.node(nodeNum(s, n)).dist {
				if other != r.Job {
					t.Fatalf("distributed %s shares node %s with %s", r.Job, n, other)
				}
			}
		}
	}
}

func nodeNum(s *State, name string) int32 {
	i, _ := slices.BinarySearchFunc(s.ix.nodes, name, func(n nodeInfo, x string) int {
		if n.name < x {
			return -1
		}
		if n.name > x {
			return 1
		}
		return 0
	})
	return int32(i)
}

// bruteFits reports whether some set of free devices of an allowed type
// meets the request ignoring interference and NVLink: single-node (with
// island/NUMA grouping) or on MaxNodes nodes.
func bruteFits(c accel.Cluster, s *State, r Request) bool {
	for _, t := range s.Types() {
		if len(r.Types) > 0 && !slices.Contains(r.Types, t) {
			continue
		}
		var perNode []int
		for _, n := range c.Nodes {
			groups := map[string]int{}
			nf := 0
			for _, d := range n.Devices {
				if d.Type != t || !s.Healthy(d.ID) {
					continue
				}
				if _, held := s.Owner(d.ID); held {
					continue
				}
				nf++
				if r.SameNUMA && d.NUMANode < 0 {
					continue
				}
				key := ""
				if r.SameNUMA {
					key += fmt.Sprint(d.NUMANode)
				}
				if r.SameIsland {
					key += "/" + fmt.Sprint(islandOf(n, d.Index))
				}
				groups[key]++
			}
			best := 0
			for _, v := range groups {
				best = max(best, v)
			}
			if r.singleNode() && best >= r.Count {
				return true
			}
			perNode = append(perNode, nf)
		}
		if r.singleNode() {
			continue
		}
		slices.Sort(perNode)
		slices.Reverse(perNode)
		sum := 0
		for i, v := range perNode {
			if r.MaxNodes > 0 && i >= r.MaxNodes {
				break
			}
			sum += v
		}
		if sum >= r.Count {
			return true
		}
	}
	return false
}

// islandOf returns the smallest device index NVLink-connected to idx
// among devices of the same type.
func islandOf(n accel.Node, idx int) int {
	typ := accel.TypeKey("")
	for _, d := range n.Devices {
		if d.Index == idx {
			typ = d.Type
		}
	}
	seen := map[int]bool{idx: true}
	stack := []int{idx}
	for len(stack) > 0 {
		a := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for _, l := range n.Links {
			if l.NVLinks <= 0 {
				continue
			}
			var b int
			switch a {
			case l.A:
				b = l.B
			case l.B:
				b = l.A
			default:
				continue
			}
			ok := false
			for _, d := range n.Devices {
				if d.Index == b && d.Type == typ {
					ok = true
				}
			}
			if ok && !seen[b] {
				seen[b] = true
				stack = append(stack, b)
			}
		}
	}
	m := idx
	for k := range seen {
		m = min(m, k)
	}
	return m
}

// TestPlaceProperties places random requests on random clusters and checks
// the invariants: never a device twice, never over capacity, all or
// nothing, constraints honoured, deterministic, and a fit whenever a brute
// force finds one without interference constraints.
func TestPlaceProperties(t *testing.T) {
	for seed := range uint64(300) {
		rng := rand.New(rand.NewPCG(seed, 7))
		c := randomCluster(rng)
		s, err := NewState(c, nil)
		if err != nil {
			t.Fatal(err)
		}
		p := Chooser{Strategy: Strategy(rng.IntN(3)), AllowInterference: rng.IntN(2) == 0}
		for i := range 30 {
			r := randomRequest(rng, fmt.Sprintf("j%02d", i))
			before := s.Assignments()
			a, err := p.Place(s, r)
			a2, err2 := p.Place(s.Clone(), r)
			if !slices.Equal(a.Devices, a2.Devices) || (err == nil) != (err2 == nil) {
				t.Fatalf("seed %d: not deterministic: %v/%v vs %v/%v", seed, a, err, a2, err2)
			}
			if !slices.EqualFunc(before, s.Assignments(), func(x, y Assignment) bool { return x.Job == y.Job && slices.Equal(x.Devices, y.Devices) }) {
				t.Fatalf("seed %d: Place changed the state", seed)
			}
			switch {
			case err == nil:
				checkPlacement(t, c, s, r, a, p)
				if err := s.Assign(a); err != nil {
					t.Fatalf("seed %d: assign %v: %v", seed, a, err)
				}
			case errors.Is(err, ErrNoFit):
				if p.AllowInterference && bruteFits(c, s, r) {
					t.Fatalf("seed %d: %+v did not fit (%v) but brute force finds a set", seed, r, err)
				}
			case errors.Is(err, ErrUnknownType):
				if len(r.Types) == 0 || s.Capacity(r.Types[0]) > 0 {
					t.Fatalf("seed %d: %+v: %v", seed, r, err)
				}
			case errors.Is(err, ErrImpossible):
				if bruteFits(c, mustState(t, healthyCopy(c)), r) {
					t.Fatalf("seed %d: %+v called impossible (%v) but fits the empty cluster", seed, r, err)
				}
			default:
				t.Fatalf("seed %d: %+v: unexpected error %v", seed, r, err)
			}
			if rng.IntN(4) == 0 {
				jobs := s.Assignments()
				if len(jobs) > 0 {
					s.Release(jobs[rng.IntN(len(jobs))].Job)
				}
			}
			checkInvariants(t, c, s)
		}
		// Rebuilding from the assignments gives the same state.
		r, err := NewState(c, s.Assignments())
		if err != nil {
			t.Fatalf("seed %d: rebuild: %v", seed, err)
		}
		if fmt.Sprint(r.Fragmentation(), r.Assignments()) != fmt.Sprint(s.Fragmentation(), s.Assignments()) {
			t.Fatalf("seed %d: rebuilt state differs:\n%v\n%v", seed, r.Fragmentation(), s.Fragmentation())
		}
		for n := range s.ix.nodes {
			if a, b := s.node(int32(n)).dist, r.node(int32(n)).dist; !slices.Equal(a, b) {
				t.Fatalf("seed %d: node %d distributed jobs %v, rebuilt %v", seed, n, a, b)
			}
		}
	}
}

func healthyCopy(c accel.Cluster) accel.Cluster {
	out := accel.Cluster{Nodes: slices.Clone(c.Nodes)}
	for i := range out.Nodes {
		out.Nodes[i].Devices = slices.Clone(out.Nodes[i].Devices)
		for j := range out.Nodes[i].Devices {
			out.Nodes[i].Devices[j].Healthy = true
		}
	}
	return out
}

// TestRoundProperties runs random rounds and checks: never a device twice,
// every decision consistent with the states, targets met or reported, a
// job whose devices already meet its target is kept untouched, and the
// same input gives the same result.
func TestRoundProperties(t *testing.T) {
	for seed := range uint64(200) {
		rng := rand.New(rand.NewPCG(seed, 11))
		c := randomCluster(rng)
		s, err := NewState(c, nil)
		if err != nil {
			t.Fatal(err)
		}
		p := Chooser{Strategy: Strategy(rng.IntN(3)), AllowInterference: rng.IntN(2) == 0}
		for i := range 12 {
			r := randomRequest(rng, fmt.Sprintf("j%02d", i))
			r.SameIsland, r.SameNUMA = false, false
			if a, err := p.Place(s, r); err == nil {
				_ = s.Assign(a)
			}
		}
		if rng.IntN(3) == 0 {
			var ids []string
			for _, n := range c.Nodes {
				if rng.IntN(3) == 0 {
					ids = append(ids, n.Devices[0].ID)
				}
			}
			if _, err := s.Fault(ids); err != nil {
				t.Fatal(err)
			}
		}
		var targets []Target
		satisfied := map[string][]string{}
		for _, a := range s.Assignments() {
			ty, _ := s.TypeOf(a)
			tg := Target{Job: a.Job, Type: ty, Count: len(a.Devices)}
			switch rng.IntN(5) {
			case 0:
				tg.Count += 1 + rng.IntN(3)
			case 1:
				tg.Count = rng.IntN(tg.Count + 1)
			case 2:
				tg.Type = propTypes[rng.IntN(len(propTypes))]
			case 3:
				continue
			}
			if s.Capacity(tg.Type) == 0 {
				tg.Type = ty
			}
			if s.ix.limit(s.ix.typeNum[tg.Type], &Request{Count: tg.Count}) < tg.Count {
				tg.Count = len(a.Devices)
				tg.Type = ty
			}
			if tg.Type == ty && tg.Count == len(a.Devices) && allHealthy(s, a) {
				satisfied[a.Job] = a.Devices
			}
			targets = append(targets, tg)
		}
		for i := range 4 {
			tg := Target{Job: fmt.Sprintf("new%d", i), Type: propTypes[rng.IntN(len(propTypes))], Count: 1 + rng.IntN(6)}
			if s.Capacity(tg.Type) >= tg.Count {
				targets = append(targets, tg)
			}
		}
		rng.Shuffle(len(targets), func(i, j int) { targets[i], targets[j] = targets[j], targets[i] })
		before := s.Assignments()
		res, err := p.Round(s, targets)
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		res2, _ := p.Round(s, targets)
		if fmt.Sprint(res.Decisions, res.Unplaced) != fmt.Sprint(res2.Decisions, res2.Unplaced) {
			t.Fatalf("seed %d: round not deterministic", seed)
		}
		if fmt.Sprint(before) != fmt.Sprint(s.Assignments()) {
			t.Fatalf("seed %d: round changed its input", seed)
		}
		checkInvariants(t, c, res.State)
		after := map[string][]string{}
		for _, a := range res.State.Assignments() {
			after[a.Job] = a.Devices
			if !allHealthy(res.State, a) {
				t.Fatalf("seed %d: %s left on an unhealthy device", seed, a.Job)
			}
		}
		for job, devs := range satisfied {
			if !slices.Equal(after[job], devs) {
				t.Fatalf("seed %d: satisfied job %s moved: %v -> %v", seed, job, devs, after[job])
			}
		}
		unplaced := map[string]bool{}
		for _, u := range res.Unplaced {
			unplaced[u.Target.Job] = true
			if u.Reason.Code == ReasonNone || u.Reason.Text == "" {
				t.Fatalf("seed %d: unplaced without reason: %+v", seed, u)
			}
		}
		for _, tg := range targets {
			got := after[tg.Job]
			if unplaced[tg.Job] {
				continue
			}
			if len(got) != tg.Count {
				t.Fatalf("seed %d: %+v got %v", seed, tg, got)
			}
			if tg.Count == 0 {
				continue
			}
			if ty, _ := res.State.TypeOf(Assignment{Devices: got}); ty != tg.Type {
				t.Fatalf("seed %d: %+v got type %s", seed, tg, ty)
			}
		}
		for _, d := range res.Decisions {
			if !slices.Equal(d.Devices, after[d.Job]) {
				t.Fatalf("seed %d: decision %+v disagrees with state %v", seed, d, after[d.Job])
			}
		}
	}
}

func allHealthy(s *State, a Assignment) bool {
	for _, id := range a.Devices {
		if !s.Healthy(id) {
			return false
		}
	}
	return true
}

// TestRoundGrowsInPlace: when one job grows and free devices of its type
// remain on the nodes it holds, the round grows it there (never moves it),
// and every other job keeps its devices.
func TestRoundGrowsInPlace(t *testing.T) {
	checked := 0
	for seed := range uint64(300) {
		rng := rand.New(rand.NewPCG(seed, 13))
		c := randomCluster(rng)
		s, err := NewState(c, nil)
		if err != nil {
			t.Fatal(err)
		}
		var p Chooser
		for i := range 10 {
			r := randomRequest(rng, fmt.Sprintf("j%02d", i))
			r.SameIsland, r.SameNUMA = false, false
			if a, err := p.Place(s, r); err == nil {
				_ = s.Assign(a)
			}
		}
		jobs := s.Assignments()
		if len(jobs) == 0 {
			continue
		}
		g := jobs[rng.IntN(len(jobs))]
		ty, _ := s.TypeOf(g)
		// Free devices of the type on g's nodes.
		room := 0
		nodes := map[string]bool{}
		for _, id := range g.Devices {
			d, _ := c.Device(id)
			nodes[d.Node] = true
		}
		for _, n := range c.Nodes {
			if !nodes[n.Name] {
				continue
			}
			for _, d := range n.Devices {
				if _, held := s.Owner(d.ID); d.Type == ty && !held && s.Healthy(d.ID) {
					room++
				}
			}
		}
		if room == 0 {
			continue
		}
		grow := 1 + rng.IntN(room)
		var targets []Target
		for _, a := range jobs {
			at, _ := s.TypeOf(a)
			tg := Target{Job: a.Job, Type: at, Count: len(a.Devices)}
			if a.Job == g.Job {
				tg.Count += grow
			}
			targets = append(targets, tg)
		}
		res, err := p.Round(s, targets)
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		for _, d := range res.Decisions {
			want := Keep
			if d.Job == g.Job {
				want = Grow
			}
			if d.Action != want {
				t.Fatalf("seed %d: %s %v (%v -> %v), want %v", seed, d.Job, d.Action, d.Previous, d.Devices, want)
			}
			if d.Job == g.Job {
				for _, id := range d.Devices {
					if dv, _ := c.Device(id); !nodes[dv.Node] {
						t.Fatalf("seed %d: grew onto %s, off its nodes %v", seed, id, nodes)
					}
				}
			}
		}
		checked++
	}
	if checked < 50 {
		t.Fatalf("only %d cases exercised", checked)
	}
}

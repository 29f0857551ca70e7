package palplace_test

import (
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/goodsched/goodsched/accel"
	"github.com/goodsched/goodsched/placement"
	"github.com/goodsched/goodsched/variability/palplace"
)

// speeds is a fixed placement.Speeds: per device, for every job.
type speeds struct {
	sf      map[string]float64
	penalty float64
	class   map[string]string
}

func (s speeds) Slowdown(_, d string) float64 {
	if v, ok := s.sf[d]; ok {
		return v
	}
	return 1
}
func (s speeds) LocalityPenalty(string) float64 { return s.penalty }
func (s speeds) Class(job string) string        { return s.class[job] }

func index(t testing.TB, spec string) (*placement.Index, accel.Cluster) {
	t.Helper()
	c, err := accel.ParseSpec(spec)
	if err != nil {
		t.Fatal(err)
	}
	x, err := placement.NewIndex(c)
	if err != nil {
		t.Fatal(err)
	}
	return x, c
}

func id(c accel.Cluster, node, dev int) string { return c.Nodes[node].Devices[dev].ID }

func devicesOf(res placement.PlaceResult, job string) []string {
	for _, a := range res.Assignments {
		if a.Job == job {
			return a.Devices
		}
	}
	return nil
}

func TestPackedSticky(t *testing.T) {
	x, c := index(t, "3x4:v100-32gb")
	typ := c.Nodes[0].Devices[0].Type
	// Node 0: 1 free (3 held by "old"), node 1: 2 free (2 held by "mid"), node 2: 4 free.
	cur := []placement.Assignment{
		{Job: "old", Devices: []string{id(c, 0, 0), id(c, 0, 1), id(c, 0, 2)}},
		{Job: "mid", Devices: []string{id(c, 1, 0), id(c, 1, 1)}},
	}
	in := placement.PlaceInput{Cluster: x, Current: cur, Targets: []placement.Target{
		{Job: "old", Type: typ, Count: 3},
		{Job: "mid", Type: typ, Count: 2},
		{Job: "two", Type: typ, Count: 2}, // exact match: node 1
		{Job: "one", Type: typ, Count: 1}, // exact match: node 0
		{Job: "big", Type: typ, Count: 5}, // capacity: 4 left
		{Job: "three", Type: typ, Count: 3},
	}}
	res, err := palplace.PackedSticky{}.Place(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	for job, want := range map[string][]string{
		"old":   cur[0].Devices,
		"mid":   cur[1].Devices,
		"two":   {id(c, 1, 2), id(c, 1, 3)},
		"one":   {id(c, 0, 3)},
		"three": {id(c, 2, 0), id(c, 2, 1), id(c, 2, 2)},
	} {
		if got := devicesOf(res, job); !slices.Equal(got, want) {
			t.Errorf("%s: %v, want %v", job, got, want)
		}
	}
	if len(res.Unplaced) != 1 || res.Unplaced[0].Target.Job != "big" || res.Unplaced[0].Reason.Code != placement.ReasonCapacity {
		t.Errorf("unplaced %+v, want big for capacity", res.Unplaced)
	}
	// Across nodes: the node with the most free devices first.
	in.Targets = []placement.Target{{Job: "old", Type: typ, Count: 3}, {Job: "mid", Type: typ, Count: 2}, {Job: "six", Type: typ, Count: 6}}
	res, _ = palplace.PackedSticky{}.Place(context.Background(), in)
	if got, want := devicesOf(res, "six"), []string{id(c, 2, 0), id(c, 2, 1), id(c, 2, 2), id(c, 2, 3), id(c, 1, 2), id(c, 1, 3)}; !slices.Equal(got, want) {
		t.Errorf("six: %v, want %v", got, want)
	}
}

func TestPMFirst(t *testing.T) {
	x, c := index(t, "2x4:v100-32gb")
	typ := c.Nodes[0].Devices[0].Type
	sp := speeds{sf: map[string]float64{
		id(c, 0, 0): 1.1, id(c, 0, 1): 0.95, id(c, 0, 2): 1.1, id(c, 0, 3): 1.1,
		id(c, 1, 0): 0.95, id(c, 1, 1): 0.95, id(c, 1, 2): 1.0, id(c, 1, 3): 1.0,
	}, penalty: 1.7}
	in := placement.PlaceInput{Cluster: x, Speeds: sp, Targets: []placement.Target{{Job: "j", Type: typ, Count: 2}}}
	res, err := palplace.PMFirst{}.Place(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	// The fastest (0.95) first; of those, node 1's two match the gang's size.
	if got, want := devicesOf(res, "j"), []string{id(c, 1, 0), id(c, 1, 1)}; !slices.Equal(got, want) {
		t.Errorf("PM-First: %v, want %v", got, want)
	}
	in.Targets[0].Count = 3 // the three 0.95 devices, across nodes
	res, _ = palplace.PMFirst{}.Place(context.Background(), in)
	if got, want := devicesOf(res, "j"), []string{id(c, 1, 0), id(c, 1, 1), id(c, 0, 1)}; !slices.Equal(got, want) {
		t.Errorf("PM-First 3: %v, want %v", got, want)
	}
	// PAL with a 1.7 penalty keeps the gang of 3 on one node: node 1's
	// 0.95, 0.95, 1.0 (largest 1.0 < 0.95 × 1.7).
	res, _ = palplace.PAL{}.Place(context.Background(), in)
	if got, want := devicesOf(res, "j"), []string{id(c, 1, 0), id(c, 1, 1), id(c, 1, 2)}; !slices.Equal(got, want) {
		t.Errorf("PAL 3: %v, want %v", got, want)
	}
}

// TestPALOptimal checks PAL against brute force: for a gang that fits on
// one node, its pick minimises the largest slowdown × the locality
// penalty when it spans nodes, over every subset of the free devices.
func TestPALOptimal(t *testing.T) {
	x, c := index(t, "3x3:v100-32gb")
	typ := c.Nodes[0].Devices[0].Type
	var all []string
	for _, n := range c.Nodes {
		for _, d := range n.Devices {
			all = append(all, d.ID)
		}
	}
	node := func(d string) string { dd, _ := x.Device(d); return dd.Node }
	cost := func(sp speeds, devs []string) float64 {
		w := 0.0
		for _, d := range devs {
			w = max(w, sp.sf[d])
		}
		if x.NodesOf(devs) > 1 {
			w *= sp.penalty
		}
		return w
	}
	rng := rand.New(rand.NewPCG(7, 7))
	levels := []float64{0.9, 0.95, 1, 1.05, 1.1, 1.3}
	for trial := range 300 {
		sp := speeds{sf: map[string]float64{}, penalty: []float64{1, 1.2, 1.7, 3}[trial%4]}
		for _, d := range all {
			sp.sf[d] = levels[rng.IntN(len(levels))]
		}
		busy := map[string]bool{}
		var cur []placement.Assignment
		var targets []placement.Target
		for _, d := range all {
			if rng.IntN(3) == 0 {
				busy[d] = true
				cur = append(cur, placement.Assignment{Job: "b" + d, Devices: []string{d}})
				targets = append(targets, placement.Target{Job: "b" + d, Type: typ, Count: 1})
			}
		}
		var free []string
		for _, d := range all {
			if !busy[d] {
				free = append(free, d)
			}
		}
		n := 2 + rng.IntN(2)
		if len(free) < n {
			continue
		}
		targets = append(targets, placement.Target{Job: "j", Type: typ, Count: n})
		res, err := palplace.PAL{}.Place(context.Background(), placement.PlaceInput{Cluster: x, Current: cur, Speeds: sp, Targets: targets})
		if err != nil {
			t.Fatal(err)
		}
		got := devicesOf(res, "j")
		if len(got) != n {
			t.Fatalf("trial %d: %v for %d", trial, got, n)
		}
		best := math.Inf(1)
		for mask := range 1 << len(free) {
			var sub []string
			for i, d := range free {
				if mask&(1<<i) != 0 {
					sub = append(sub, d)
				}
			}
			if len(sub) == n {
				best = min(best, cost(sp, sub))
			}
		}
		if g := cost(sp, got); math.Abs(g-best) > 1e-9 {
			t.Fatalf("trial %d (penalty %v): PAL's %v (nodes %v) costs %v, brute force %v", trial, sp.penalty, got, node(got[0]), g, best)
		}
	}
}

// TestPMFirstFastest checks PM-First against a sort of the free
// devices: its n devices have the n lowest slowdowns, with few distinct
// factors (PAL's bins) and with many (learned ones).
func TestPMFirstFastest(t *testing.T) {
	x, c := index(t, "8x4:v100-32gb")
	typ := c.Nodes[0].Devices[0].Type
	rng := rand.New(rand.NewPCG(3, 5))
	for trial := range 300 {
		distinct := []int{2, 5, 40, 300}[trial%4] // 300: 0.0013 apart, more than the placers' quantum
		sp := speeds{sf: map[string]float64{}, penalty: 1.7}
		var cur []placement.Assignment
		var targets []placement.Target
		var free []float64
		for n := range c.Nodes {
			for k := range c.Nodes[n].Devices {
				d := id(c, n, k)
				sp.sf[d] = 0.9 + 0.4*float64(rng.IntN(distinct))/float64(distinct)
				if rng.IntN(3) == 0 {
					cur = append(cur, placement.Assignment{Job: "b" + d, Devices: []string{d}})
					targets = append(targets, placement.Target{Job: "b" + d, Type: typ, Count: 1})
				} else {
					free = append(free, sp.sf[d])
				}
			}
		}
		n := 1 + rng.IntN(min(12, len(free)))
		targets = append(targets, placement.Target{Job: "j", Type: typ, Count: n})
		res, err := palplace.PMFirst{}.Place(context.Background(), placement.PlaceInput{Cluster: x, Current: cur, Speeds: sp, Targets: targets})
		if err != nil {
			t.Fatal(err)
		}
		var got []float64
		for _, d := range devicesOf(res, "j") {
			got = append(got, sp.sf[d])
		}
		slices.Sort(got)
		slices.Sort(free)
		if !slices.Equal(got, free[:n]) {
			t.Fatalf("trial %d: slowdowns %v, want the %d lowest free %v", trial, got, n, free[:n])
		}
	}
}

// TestClassOrder: PAL and PM-First give the fastest devices to class A
// first (PAL reorders its queue by class), Packed-Sticky in job order.
func TestClassOrder(t *testing.T) {
	x, c := index(t, "2x1:v100-32gb")
	typ := c.Nodes[0].Devices[0].Type
	sp := speeds{sf: map[string]float64{id(c, 0, 0): 1.2, id(c, 1, 0): 0.9}, penalty: 1,
		class: map[string]string{"d": "classD", "a": "classA"}}
	in := placement.PlaceInput{Cluster: x, Speeds: sp, Targets: []placement.Target{{Job: "d", Type: typ, Count: 1}, {Job: "a", Type: typ, Count: 1}}}
	for _, p := range []placement.Placer{palplace.PAL{}, palplace.PMFirst{}} {
		res, _ := p.Place(context.Background(), in)
		if got := devicesOf(res, "a"); !slices.Equal(got, []string{id(c, 1, 0)}) {
			t.Errorf("%T: class A job got %v, want the fast device", p, got)
		}
	}
}

// TestNoSpeeds: without speed data PM-First and PAL treat every device as
// nominal and place deterministically; nothing is placed twice.
func TestNoSpeeds(t *testing.T) {
	x, c := index(t, "4x4:v100-32gb")
	typ := c.Nodes[0].Devices[0].Type
	var targets []placement.Target
	for i, n := range []int{3, 1, 4, 2, 5, 1} {
		targets = append(targets, placement.Target{Job: string(rune('a' + i)), Type: typ, Count: n})
	}
	for _, p := range []placement.Placer{palplace.PAL{}, palplace.PMFirst{}, palplace.PackedSticky{}} {
		in := placement.PlaceInput{Cluster: x, Targets: targets}
		r1, err := p.Place(context.Background(), in)
		if err != nil {
			t.Fatal(err)
		}
		r2, _ := p.Place(context.Background(), in)
		seen := map[string]bool{}
		total := 0
		for i, a := range r1.Assignments {
			if !slices.Equal(a.Devices, r2.Assignments[i].Devices) {
				t.Errorf("%T: not deterministic", p)
			}
			for _, d := range a.Devices {
				if seen[d] {
					t.Errorf("%T: device %s placed twice", p, d)
				}
				seen[d] = true
			}
			total += len(a.Devices)
		}
		if total != 16 || len(r1.Unplaced) != 0 {
			t.Errorf("%T: placed %d devices, unplaced %v; want all 16", p, total, r1.Unplaced)
		}
	}
	_ = c
}

// TestReplace: by default a running job keeps its (slow) devices; with
// Replace, PAL and PM-First move it to the fast ones, as the artifact.
func TestReplace(t *testing.T) {
	x, c := index(t, "2x1:v100-32gb")
	typ := c.Nodes[0].Devices[0].Type
	sp := speeds{sf: map[string]float64{id(c, 0, 0): 1.2, id(c, 1, 0): 0.9}, penalty: 1}
	in := placement.PlaceInput{Cluster: x, Speeds: sp,
		Current: []placement.Assignment{{Job: "j", Devices: []string{id(c, 0, 0)}}},
		Targets: []placement.Target{{Job: "j", Type: typ, Count: 1}}}
	for _, tc := range []struct {
		p    placement.Placer
		want string
	}{
		{palplace.PAL{}, id(c, 0, 0)}, {palplace.PMFirst{}, id(c, 0, 0)}, {palplace.PackedSticky{}, id(c, 0, 0)},
		{palplace.PAL{Replace: true}, id(c, 1, 0)}, {palplace.PMFirst{Replace: true}, id(c, 1, 0)},
	} {
		res, _ := tc.p.Place(context.Background(), in)
		if got := devicesOf(res, "j"); !slices.Equal(got, []string{tc.want}) {
			t.Errorf("%#v: %v, want %s", tc.p, got, tc.want)
		}
	}
}

// TestEvict: a running job on a device at least Evict times slower is
// re-placed; below that it keeps its devices.
func TestEvict(t *testing.T) {
	x, c := index(t, "2x1:v100-32gb")
	typ := c.Nodes[0].Devices[0].Type
	in := placement.PlaceInput{Cluster: x,
		Current: []placement.Assignment{{Job: "j", Devices: []string{id(c, 0, 0)}}},
		Targets: []placement.Target{{Job: "j", Type: typ, Count: 1}}}
	for _, tc := range []struct {
		slow float64
		want string
	}{{1.4, id(c, 0, 0)}, {2, id(c, 1, 0)}} {
		in.Speeds = speeds{sf: map[string]float64{id(c, 0, 0): tc.slow}, penalty: 1}
		for _, p := range []placement.Placer{palplace.PAL{Evict: 1.5}, palplace.PMFirst{Evict: 1.5}} {
			res, _ := p.Place(context.Background(), in)
			if got := devicesOf(res, "j"); !slices.Equal(got, []string{tc.want}) {
				t.Errorf("%#v, slowdown %v: %v, want %s", p, tc.slow, got, tc.want)
			}
		}
	}
}

// TestEvictIgnoresLocality: a gang spanning nodes pays the locality
// penalty, which is no reason to move it.
func TestEvictIgnoresLocality(t *testing.T) {
	x, c := index(t, "2x1:v100-32gb")
	typ := c.Nodes[0].Devices[0].Type
	cur := []string{id(c, 0, 0), id(c, 1, 0)}
	in := placement.PlaceInput{Cluster: x, Speeds: speeds{sf: map[string]float64{}, penalty: 3},
		Current: []placement.Assignment{{Job: "j", Devices: cur}},
		Targets: []placement.Target{{Job: "j", Type: typ, Count: 2}}}
	res, _ := palplace.PAL{Evict: 1.5}.Place(context.Background(), in)
	if got := devicesOf(res, "j"); !slices.Equal(got, cur) {
		t.Errorf("%v, want %v kept", got, cur)
	}
}

// TestManyDistinctFactors: continuous (learned) factors take the sorting
// path and still give PAL's optimum.
func TestManyDistinctFactors(t *testing.T) {
	x, c := index(t, "16x4:v100-32gb")
	typ := c.Nodes[0].Devices[0].Type
	sp := speeds{sf: map[string]float64{}, penalty: 1.7}
	for n := range c.Nodes {
		for k := range c.Nodes[n].Devices {
			sp.sf[id(c, n, k)] = 2 - 0.01*float64(n*4+k) // 64 distinct, node 15 fastest
		}
	}
	res, _ := palplace.PAL{}.Place(context.Background(), placement.PlaceInput{Cluster: x, Speeds: sp,
		Targets: []placement.Target{{Job: "j", Type: typ, Count: 3}}})
	if got, want := devicesOf(res, "j"), []string{id(c, 15, 3), id(c, 15, 2), id(c, 15, 1)}; !slices.Equal(got, want) {
		t.Errorf("%v, want %v", got, want)
	}
}

package topoplace

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/goodsched/goodsched/accel"
	"github.com/goodsched/goodsched/accel/topology"
	"github.com/goodsched/goodsched/placement"
	"github.com/goodsched/goodsched/scheduler"
)

type scenario struct {
	cluster accel.Cluster
	cur     []placement.Assignment
	targets []placement.Target
	cons    map[string]Constraint
	prio    map[string]int
}

// randomScenario draws a fabric, an occupancy (which may break the
// constraints it is given: they are re-placed), targets and constraints.
func randomScenario(t *testing.T, rng *rand.Rand) (scenario, func(map[string]bool) *placement.Index, func() *placement.Index) {
	blocks, racks, nodes, gpus := 1+rng.IntN(3), 1+rng.IntN(3), 1+rng.IntN(4), 1+rng.IntN(4)
	c, top, x := fabric(t, blocks, racks, nodes, gpus, nil)
	var all []string
	for _, n := range c.Nodes {
		for _, d := range n.Devices {
			all = append(all, d.ID)
		}
	}
	rng.Shuffle(len(all), func(i, j int) { all[i], all[j] = all[j], all[i] })
	sc := scenario{cluster: c, cons: map[string]Constraint{}, prio: map[string]int{}}
	levels := []string{"", "", "block", "rack", NodeLevel}
	jobs := 1 + rng.IntN(8)
	for j := 0; j < jobs; j++ {
		job := fmt.Sprintf("j%d", j)
		k := 1 + rng.IntN(max(1, len(all)/2))
		if rng.IntN(3) > 0 && len(all) >= k { // running now, somewhere
			sc.cur = append(sc.cur, placement.Assignment{Job: job, Devices: slices.Clone(all[:k])})
			all = all[k:]
			if rng.IntN(3) == 0 {
				k = 1 + rng.IntN(blocks*racks*nodes*gpus)
			}
		}
		var cons Constraint
		cons.Required = levels[rng.IntN(len(levels))]
		if rng.IntN(2) == 0 {
			cons.Preferred = levels[2+rng.IntN(3)]
			if cons.Required != "" && slices.Index(levels, cons.Preferred) < slices.Index(levels, cons.Required) {
				cons.Preferred = cons.Required
			}
		}
		if rng.IntN(4) == 0 && cons.Required != NodeLevel {
			size := []int{1, 2, 4}[rng.IntN(3)]
			cons.Slices = []Slice{{Level: "rack", Size: size}}
			k = max(size, k/size*size)
		}
		cons.Balanced = rng.IntN(4) == 0
		sc.cons[job] = cons
		sc.prio[job] = rng.IntN(3)
		sc.targets = append(sc.targets, placement.Target{Job: job, Type: "gb200", Count: k})
	}
	faulty := func(bad map[string]bool) *placement.Index {
		_, _, x := fabric(t, blocks, racks, nodes, gpus, bad)
		return x
	}
	_ = top
	return sc, faulty, func() *placement.Index { return x }
}

// verify checks one Place result: a device at most once, only usable
// devices, full counts for placed targets, 0 required or slice
// violations, kept-but-unplaced jobs on their own devices.
func verify(t *testing.T, label string, p Placer, x *placement.Index, sc scenario, res placement.PlaceResult) {
	t.Helper()
	unplaced := map[string]bool{}
	for _, u := range res.Unplaced {
		unplaced[u.Target.Job] = true
		if u.Reason.Code == placement.ReasonNone {
			t.Errorf("%s: %s unplaced without a reason", label, u.Target.Job)
		}
	}
	count := map[string]int{}
	for _, tg := range sc.targets {
		count[tg.Job] = tg.Count
	}
	cur := map[string][]string{}
	for _, a := range sc.cur {
		cur[a.Job] = a.Devices
	}
	seen := map[string]string{}
	for _, a := range res.Assignments {
		for _, id := range a.Devices {
			if o, dup := seen[id]; dup {
				t.Errorf("%s: device %s given to %s and %s", label, id, o, a.Job)
			}
			seen[id] = a.Job
			if d, ok := x.Device(id); !ok || !d.Usable() {
				t.Errorf("%s: %s got unusable device %s", label, a.Job, id)
			}
		}
		if unplaced[a.Job] {
			if !placement.SameDevices(a.Devices, cur[a.Job]) {
				t.Errorf("%s: unplaced %s given devices other than its own", label, a.Job)
			}
		} else if len(a.Devices) != count[a.Job] {
			t.Errorf("%s: %s got %d devices, target %d", label, a.Job, len(a.Devices), count[a.Job])
		}
	}
	if n, err := Check(x, p.Topology, res.Assignments, p.Constraint); err != nil || n != 0 {
		t.Errorf("%s: %d required violations (%v): %+v", label, n, err, res.Assignments)
	}
}

// TestPropertyNoRequiredViolation: on random fabrics, occupancies,
// constraints and priorities, every strategy, with and without
// preemption, and again after random devices fail, gives 0 violations
// of a required level or slice, never a device twice or an unusable one,
// and the same answer twice.
func TestPropertyNoRequiredViolation(t *testing.T) {
	rng := rand.New(rand.NewPCG(47, 1))
	trials := 300
	if testing.Short() {
		trials = 60
	}
	for trial := 0; trial < trials; trial++ {
		sc, faulty, healthy := randomScenario(t, rng)
		x := healthy()
		for _, st := range []Strategy{LeastLoss, BestFit, Binpack} {
			for _, pre := range []bool{false, true} {
				keeps := []map[string]float64{nil, {"rack": 0.9, "block": 0.5, "": 0.3}, {"rack": 1, "block": 1, "": 1}}
				p := Placer{Strategy: st, Constraint: constraints(sc.cons), Keep: keeps[trial%3]}
				p.Topology = topologyOf(t, sc.cluster)
				if pre {
					p.Preempt = &Preemption{Priority: func(j string) int { return sc.prio[j] }}
				}
				label := fmt.Sprintf("trial %d %v preempt=%v", trial, st, pre)
				in := placement.PlaceInput{Cluster: x, Current: sc.cur, Targets: sc.targets}
				res, err := p.Place(context.Background(), in)
				if err != nil {
					t.Fatalf("%s: %v", label, err)
				}
				verify(t, label, p, x, sc, res)
				again, _ := p.Place(context.Background(), in)
				if !reflect.DeepEqual(res, again) {
					t.Fatalf("%s: not deterministic", label)
				}
				// Node failure: a random node's devices fail; re-place.
				bad := map[string]bool{}
				n := sc.cluster.Nodes[rng.IntN(len(sc.cluster.Nodes))]
				for _, d := range n.Devices {
					bad[d.ID] = true
				}
				fx := faulty(bad)
				sc2 := sc
				sc2.cur = res.Assignments
				res2, err := p.Place(context.Background(), placement.PlaceInput{Cluster: fx, Current: sc2.cur, Targets: sc.targets})
				if err != nil {
					t.Fatalf("%s after failure: %v", label, err)
				}
				verify(t, label+" after node failure", p, fx, sc2, res2)
			}
		}
	}
}

// topologyOf rebuilds the fabric's topology from its node names.
func topologyOf(t *testing.T, c accel.Cluster) *topology.Topology {
	t.Helper()
	blocks, racks, nodes := map[string]bool{}, map[string]bool{}, 0
	for _, n := range c.Nodes {
		parts := strings.Split(n.Name, "/")
		blocks[parts[0]] = true
		racks[parts[0]+"/"+parts[1]] = true
		nodes++
	}
	_, top, _ := fabric(t, len(blocks), len(racks)/len(blocks), nodes/len(racks), len(c.Nodes[0].Devices), nil)
	return top
}

// TestVictimsOracle: Victims' choice costs what a brute force over every
// subset of candidates and every domain finds cheapest.
func TestVictimsOracle(t *testing.T) {
	rng := rand.New(rand.NewPCG(12478, 4374))
	for trial := 0; trial < 300; trial++ {
		racks, nodes, gpus := 1+rng.IntN(3), 1+rng.IntN(3), 1+rng.IntN(4)
		c, top, x := fabric(t, 1, racks, nodes, gpus, nil)
		var all []string
		for _, n := range c.Nodes {
			for _, d := range n.Devices {
				all = append(all, d.ID)
			}
		}
		rng.Shuffle(len(all), func(i, j int) { all[i], all[j] = all[j], all[i] })
		var cur []placement.Assignment
		var cands []Candidate
		for j := 0; len(all) > 0 && j < 8; j++ {
			k := 1 + rng.IntN(min(len(all), 4))
			job := fmt.Sprintf("v%d", j)
			cur = append(cur, placement.Assignment{Job: job, Devices: all[:k]})
			all = all[k:]
			cands = append(cands, Candidate{Job: job, DeviceSeconds: float64(1 + rng.IntN(20))})
		}
		count := 1 + rng.IntN(nodes*gpus)
		level := []string{"rack", "block"}[rng.IntN(2)]
		got, err := Victims(x, top, cur, cands, "gb200", count, level)
		if err != nil {
			t.Fatal(err)
		}
		// Brute force.
		free := map[string]int{}
		for _, id := range all {
			free[domainOf(id, level)]++
		}
		best, bestN, found := math.Inf(1), 0, false
		for mask := 0; mask < 1<<len(cands); mask++ {
			cost, n := 0.0, 0
			freed := map[string]int{}
			for i := range cands {
				if mask&(1<<i) == 0 {
					continue
				}
				cost += cands[i].DeviceSeconds
				n++
				for _, id := range cur[i].Devices {
					freed[domainOf(id, level)]++
				}
			}
			doms := []string{"b0"}
			if level == "rack" {
				doms = nil
				for r := 0; r < racks; r++ {
					doms = append(doms, fmt.Sprintf("b0/r%d", r))
				}
			}
			for _, d := range doms {
				if free[d]+freed[d] >= count && (cost < best || cost == best && n < bestN) {
					best, bestN, found = cost, n, true
				}
			}
		}
		if found != (got.Domain != "") {
			t.Fatalf("trial %d: found=%v, Victims %+v", trial, found, got)
		}
		if found && (got.DeviceSeconds != best || len(got.Jobs) != bestN) {
			t.Fatalf("trial %d: Victims %+v cost %v (%d jobs), brute force %v (%d jobs)", trial, got, got.DeviceSeconds, len(got.Jobs), best, bestN)
		}
	}
}

func domainOf(id, level string) string {
	parts := strings.Split(id, "/")
	if level == "block" {
		return parts[0]
	}
	return parts[0] + "/" + parts[1]
}

// echo is a policy that gives every job its requested count, if the
// cluster has as many devices.
type echo struct{}

func (echo) Allocate(_ context.Context, r *scheduler.Round) ([]scheduler.Target, error) {
	var out []scheduler.Target
	total, _, _ := r.Cluster().Usable("gb200")
	for _, j := range r.Jobs() {
		if j.Min <= total {
			out = append(out, scheduler.Target{Job: j.Job.ID, Type: "gb200", Count: j.Min})
		}
	}
	return out, nil
}

// TestPropertyThroughScheduler: the Scheduler accepts every placement
// (its own checks: no device twice, usable, counts, an unplaced job only
// on its own devices), and the plan's devices break no required level.
func TestPropertyThroughScheduler(t *testing.T) {
	rng := rand.New(rand.NewPCG(47, 2))
	for trial := 0; trial < 100; trial++ {
		sc, _, healthy := randomScenario(t, rng)
		x := healthy()
		for _, st := range []Strategy{LeastLoss, BestFit, Binpack} {
			p := Placer{Strategy: st, Topology: topologyOf(t, sc.cluster), Constraint: constraints(sc.cons),
				Preempt: &Preemption{Priority: func(j string) int { return sc.prio[j] }}}
			s, err := scheduler.New(scheduler.Config{Policy: echo{}, Placer: p})
			if err != nil {
				t.Fatal(err)
			}
			in := scheduler.Input{Cluster: sc.cluster, Current: sc.cur}
			for _, tg := range sc.targets {
				in.Jobs = append(in.Jobs, scheduler.Job{ID: tg.Job, Requested: tg.Count, Priority: sc.prio[tg.Job]})
			}
			plan, err := s.Schedule(context.Background(), in)
			if err != nil {
				t.Fatalf("trial %d %v: %v", trial, st, err)
			}
			var as []placement.Assignment
			for _, d := range plan.Decisions {
				if len(d.Assignment.Devices) > 0 {
					as = append(as, d.Assignment)
				}
			}
			if n, err := Check(x, p.Topology, as, p.Constraint); err != nil || n != 0 {
				t.Fatalf("trial %d %v: %d violations (%v)", trial, st, n, err)
			}
		}
	}
}

// Package palplace holds the placers of PAL (Jain et al., SC'24) as
// scheduler.Placer implementations: PAL, PM-First and their baseline
// Packed-Sticky. They compute what PAL's artifact (hal-uw/blox-pal,
// placement/pal.py, pmfirst.py, packing_sticky.py) computes, on the
// per-device slowdowns of the round (scheduler.PlaceInput.Speeds, for
// example a variability.Estimator's snapshot).
//
// All three are sticky by default: a job whose current devices still
// meet its target keeps them, and the others are placed one by one on the
// free devices. Packed-Sticky places them in job order; PAL and PM-First
// order them by application class (A, B, C, D: the most
// variability-sensitive first) as PAL reorders its queue, when the Speeds
// know classes (an optional Class(job) string method, as
// variability.Speeds has). PAL's artifact re-places every job each round,
// which its simulator charges nothing for; in goodsched a job moved to
// other devices restarts, so that is an option (Replace).
//
// With no Speeds every device counts as nominal (slowdown 1, no locality
// penalty). The placers are stateless and safe for concurrent use.
package palplace

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"

	"github.com/goodsched/goodsched/placement"
	"github.com/goodsched/goodsched/scheduler"
)

// PackedSticky is PAL's baseline placer, Packed-Sticky: a new gang goes on
// the node whose free devices of its type match its size exactly, else on
// the node with the fewest free devices that still fits it, else across
// nodes, the node with the most free devices first. It ignores device
// speed.
type PackedSticky struct{}

// PMFirst is PAL's PM-First placer: a new gang takes the free devices with
// the lowest slowdown for its job, ties broken by best-match locality
// (devices of a node whose count of equally fast free devices is closest
// to the gang's size first).
type PMFirst struct {
	// Replace re-places every job each round, as PAL's artifact does (a
	// job that gets other devices restarts); the default keeps a running
	// job's devices while they meet its target.
	Replace bool
}

// PAL is PAL's placer: it walks the (slowdown, locality) options of the
// job in the order of slowdown × locality penalty (within a node the
// penalty is 1, across nodes the job's LocalityPenalty). For a gang that
// fits on one node, a within-node option takes the node whose best free
// devices have the lowest largest slowdown, among devices no slower than
// the option's; an across-node option takes PM-First's choice among
// them. Single-device gangs and gangs larger than a node are placed by
// PM-First.
type PAL struct {
	// Replace re-places every job each round, as PAL's artifact does (a
	// job that gets other devices restarts); the default keeps a running
	// job's devices while they meet its target.
	Replace bool
}

var (
	_ scheduler.Placer    = PackedSticky{}
	_ scheduler.Placer    = PMFirst{}
	_ scheduler.Placer    = PAL{}
	_ scheduler.StateUser = PAL{}
	_ scheduler.StateUser = PMFirst{}
	_ scheduler.StateUser = PackedSticky{}
)

// UsesState implements scheduler.StateUser: the placers work from the
// index and the current assignments only.
func (PackedSticky) UsesState() bool { return false }

// UsesState implements scheduler.StateUser.
func (PMFirst) UsesState() bool { return false }

// UsesState implements scheduler.StateUser.
func (PAL) UsesState() bool { return false }

// Place implements scheduler.Placer.
func (PackedSticky) Place(ctx context.Context, in scheduler.PlaceInput) (scheduler.PlaceResult, error) {
	return place(ctx, in, true, false, func(j *job, fr []node) []string { return packed(fr, j.t.Count) })
}

// Place implements scheduler.Placer.
func (p PMFirst) Place(ctx context.Context, in scheduler.PlaceInput) (scheduler.PlaceResult, error) {
	return place(ctx, in, !p.Replace, true, func(j *job, fr []node) []string { return pmFirst(j, flatten(fr)) })
}

// Place implements scheduler.Placer.
func (p PAL) Place(ctx context.Context, in scheduler.PlaceInput) (scheduler.PlaceResult, error) {
	return place(ctx, in, !p.Replace, true, pal)
}

// job is one gang to place: its target, and its slowdown per device.
type job struct {
	t       scheduler.Target
	sp      scheduler.Speeds
	penalty float64
	all     []dev // every usable device of its type (PAL's option list)
	perNode int   // the most devices of its type on one node
}

// dev is one device with the job's (quantised) slowdown on it.
type dev struct {
	id   string
	node int
	sf   float64
}

// node is one node's free devices of the job's type, by device index.
type node struct {
	num  int
	devs []dev
}

// quantum groups slowdowns that differ by less than this (PAL's factors
// are bin centroids; learned ones are continuous).
const quantum = 1e-3

func (j *job) slowdown(id string) float64 {
	if j.sp == nil {
		return 1
	}
	return math.Round(j.sp.Slowdown(j.t.Job, id)/quantum) * quantum
}

// classer is what PAL and PM-First use to order jobs by class.
type classer interface{ Class(job string) string }

func place(ctx context.Context, in scheduler.PlaceInput, sticky, byClass bool, choose func(*job, []node) []string) (scheduler.PlaceResult, error) {
	if err := ctx.Err(); err != nil {
		return scheduler.PlaceResult{}, err
	}
	x := in.Cluster
	cur := make(map[string][]string, len(in.Current))
	for _, a := range in.Current {
		cur[a.Job] = a.Devices
	}
	used := map[string]bool{}
	var res scheduler.PlaceResult
	kept := map[string]bool{}
	var todo []scheduler.Target
	for _, t := range in.Targets {
		devs := cur[t.Job]
		keep := len(devs) == t.Count && len(t.Shares) == 0
		for _, id := range devs {
			if d, ok := x.Device(id); !ok || d.Type != t.Type || !d.Usable() || used[id] {
				keep = false
				break
			}
		}
		if sticky && keep && (t.MaxNodes <= 0 || x.NodesOf(devs) <= t.MaxNodes) {
			for _, id := range devs {
				used[id] = true
			}
			kept[t.Job] = true
			continue
		}
		todo = append(todo, t)
	}
	if cl, ok := in.Speeds.(classer); ok && byClass {
		slices.SortStableFunc(todo, func(a, b scheduler.Target) int {
			return cmp.Compare(classRank(cl.Class(a.Job)), classRank(cl.Class(b.Job)))
		})
	}
	placed := map[string][]string{}
	for k, t := range todo {
		if k&63 == 0 {
			if err := ctx.Err(); err != nil {
				return scheduler.PlaceResult{}, err
			}
		}
		j := &job{t: t, sp: in.Speeds, penalty: 1}
		if in.Speeds != nil {
			j.penalty = in.Speeds.LocalityPenalty(t.Job)
		}
		var fr []node
		total := 0
		for n := range x.Nodes() {
			_, devs := x.Node(n)
			var f node
			count := 0
			for _, d := range devs {
				if d.Type != t.Type || !d.Usable() {
					continue
				}
				count++
				dv := dev{id: d.ID, node: n, sf: j.slowdown(d.ID)}
				j.all = append(j.all, dv)
				if !used[d.ID] {
					f.devs = append(f.devs, dv)
				}
			}
			j.perNode = max(j.perNode, count)
			if len(f.devs) > 0 {
				f.num = n
				fr = append(fr, f)
				total += len(f.devs)
			}
		}
		if total < t.Count {
			res.Unplaced = append(res.Unplaced, placement.Unplaced{
				Target: placement.Target{Job: t.Job, Type: t.Type, Count: t.Count, MaxNodes: t.MaxNodes},
				Reason: placement.Reason{Code: placement.ReasonCapacity, Text: fmt.Sprintf("only %d free %s devices for %d", total, t.Type, t.Count)}})
			continue
		}
		pick := choose(j, fr)
		if nodes := x.NodesOf(pick); t.MaxNodes > 0 && nodes > t.MaxNodes {
			res.Unplaced = append(res.Unplaced, placement.Unplaced{
				Target: placement.Target{Job: t.Job, Type: t.Type, Count: t.Count, MaxNodes: t.MaxNodes},
				Reason: placement.Reason{Code: placement.ReasonFragmented, Text: fmt.Sprintf("%d %s devices span %d nodes, more than %d", t.Count, t.Type, nodes, t.MaxNodes)}})
			continue
		}
		for _, id := range pick {
			used[id] = true
		}
		placed[t.Job] = pick
	}
	for _, t := range in.Targets { // in job order
		switch {
		case kept[t.Job]:
			res.Assignments = append(res.Assignments, placement.Assignment{Job: t.Job, Devices: slices.Clone(cur[t.Job])})
		case placed[t.Job] != nil:
			res.Assignments = append(res.Assignments, placement.Assignment{Job: t.Job, Devices: placed[t.Job]})
		}
	}
	slices.SortStableFunc(res.Unplaced, func(a, b placement.Unplaced) int { return cmp.Compare(a.Target.Job, b.Target.Job) })
	return res, nil
}

// classRank orders PAL's classes A, B, C, D, then anything else.
func classRank(c string) int {
	if i := slices.Index([]string{"classA", "classB", "classC", "classD"}, c); i >= 0 {
		return i
	}
	return 4
}

func flatten(fr []node) []dev {
	var out []dev
	for _, n := range fr {
		out = append(out, n.devs...)
	}
	return out
}

// packed is Packed-Sticky's consolidated choice (packing_sticky.py,
// _consolidated_placement): the first node with exactly n free devices,
// else the first node with the fewest free devices ≥ n, else nodes by
// most free devices first (node order on ties), as many from each as
// still needed. The caller ensures n devices are free.
func packed(fr []node, n int) []string {
	best := -1
	for i, nd := range fr {
		if len(nd.devs) >= n && (best < 0 || len(nd.devs) < len(fr[best].devs)) {
			best = i
		}
	}
	var out []string
	if best >= 0 {
		for _, d := range fr[best].devs[:n] {
			out = append(out, d.id)
		}
		return out
	}
	left := make([]int, len(fr))
	for i, nd := range fr {
		left[i] = len(nd.devs)
	}
	for len(out) < n {
		m := 0
		for i := range left {
			if left[i] > left[m] {
				m = i
			}
		}
		take := min(left[m], n-len(out))
		from := len(fr[m].devs) - left[m]
		for _, d := range fr[m].devs[from : from+take] {
			out = append(out, d.id)
		}
		left[m] -= take
	}
	return out
}

// pmFirst picks n of the free devices by slowdown, then best-match
// locality: how far the count of the node's free devices with the same
// slowdown is from n (pmfirst.py, _return_pmfirst_gpus); ties by device
// order.
func pmFirst(j *job, free []dev) []string {
	n := j.t.Count
	type key struct {
		node int
		sf   float64
	}
	same := map[key]int{}
	for _, d := range free {
		same[key{d.node, d.sf}]++
	}
	order := slices.Clone(free)
	slices.SortStableFunc(order, func(a, b dev) int {
		la, lb := abs(same[key{a.node, a.sf}]-n), abs(same[key{b.node, b.sf}]-n)
		return cmp.Or(cmp.Compare(a.sf, b.sf), cmp.Compare(la, lb))
	})
	out := make([]string, n)
	for i := range n {
		out[i] = order[i].id
	}
	return out
}

func abs(v int) int { return max(v, -v) }

// pal is PAL's choice (pal.py, _pal_placement).
func pal(j *job, fr []node) []string {
	n := j.t.Count
	if n <= 1 || n > j.perNode {
		return pmFirst(j, flatten(fr))
	}
	type option struct {
		sf     float64
		within bool
		cost   float64
	}
	var opts []option
	seen := map[float64]bool{}
	for _, d := range j.all { // every device's factor, as PAL's table
		if !seen[d.sf] {
			seen[d.sf] = true
			opts = append(opts, option{d.sf, true, d.sf}, option{d.sf, false, d.sf * j.penalty})
		}
	}
	slices.SortStableFunc(opts, func(a, b option) int { return cmp.Compare(a.cost, b.cost) })
	for _, o := range opts {
		if o.within {
			best, bestMax, bestCount := -1, 0.0, 0
			var bestPick []dev
			for i, nd := range fr {
				var ok []dev
				for _, d := range nd.devs {
					if d.sf <= o.sf {
						ok = append(ok, d)
					}
				}
				if len(ok) < n {
					continue
				}
				slices.SortStableFunc(ok, func(a, b dev) int { return cmp.Compare(a.sf, b.sf) })
				worst := ok[n-1].sf
				// The lowest largest slowdown; ties: the node with more
				// eligible devices (PAL walks nodes by that count), then
				// node order.
				if best < 0 || worst < bestMax || (worst == bestMax && len(ok) > bestCount) {
					best, bestMax, bestCount, bestPick = i, worst, len(ok), ok[:n]
				}
			}
			if best >= 0 {
				out := make([]string, n)
				for i, d := range bestPick {
					out[i] = d.id
				}
				return out
			}
			continue
		}
		var ok []dev
		for _, nd := range fr {
			for _, d := range nd.devs {
				if d.sf <= o.sf {
					ok = append(ok, d)
				}
			}
		}
		if len(ok) >= n {
			return pmFirst(j, ok)
		}
	}
	return pmFirst(j, flatten(fr)) // not reached: the slowest option admits every device
}

package pollux

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"

	"github.com/goodsched/goodsched/placement"
)

// coldStartJobs is the most jobs for which the search also starts from an
// empty cluster (beyond it the warm starts win and time matters more).
const coldStartJobs = 300

// Solution is one allocation the search found: a (type, count) per job
// and the nodes the engine's packing model lays it out on.
type Solution struct{ s *state }

// Alloc returns job i's device type (−1 when it gets none), device count
// and the node count of the engine's layout.
func (sol *Solution) Alloc(i int) (t, count, nodes int) {
	return sol.s.typ[i], sol.s.cnt[i], len(sol.s.place[i])
}

// Free returns how many usable devices of type t the solution leaves free.
func (sol *Solution) Free(t int) int { return sol.s.free[t] }

// Solve runs the search with at most maxPasses exchange passes per start
// and returns its distinct candidate solutions, the best by the engine's
// objective first (ties keep the warm start). Candidates: the current
// allocation improved (warm start), the current allocation shrunk to every
// job's minimum and improved (deflated), for up to 300 jobs an empty
// cluster improved (cold), and for up to 48 jobs on a contended cluster
// the best polished on replayed placements. With Problem.Parallel and
// more than one processor, two starts are searched at once, with the same
// results.
func (e *Search) Solve(ctx context.Context, maxPasses int) ([]*Solution, error) {
	if maxPasses < 1 {
		return nil, fmt.Errorf("%w: %d passes", ErrInvalid, maxPasses)
	}
	// The current allocation, on the bins the jobs hold.
	cold := e.emptyState()
	warm := e.emptyState()
	for i := range e.jobs {
		j := &e.jobs[i]
		p := e.cur[i]
		if j.pinned {
			e.assign(cold, i, j.CurrentType, len(j.Current), p)
			e.assign(warm, i, j.CurrentType, len(j.Current), p)
			continue
		}
		if !e.curOK[i] {
			continue // not running, on a type it may not use, or on a failed device: re-place
		}
		e.assign(warm, i, j.t0, j.c0, p)
		c := min(max(j.c0, j.min), e.maxOn(j, j.t0))
		if j.rigid {
			c = j.min
		}
		if c < j.min || (c != j.c0 && !e.apply(warm, i, j.t0, c)) {
			e.release(warm, i)
		}
	}
	// Groups over their caps shed devices first (reclaim).
	e.trimCaps(warm)
	// Deflated: every running job shrunk in place to its minimum, so the
	// greedy redistributes the rest from the jobs' current nodes.
	deflated := warm.clone()
	for i := range e.jobs {
		if j := &e.jobs[i]; !j.pinned && deflated.cnt[i] > j.min {
			e.apply(deflated, i, deflated.typ[i], j.min)
		}
	}
	var ref *state // with floors: the trimmed warm start, which every candidate must keep the floors of
	if e.floors != nil {
		ref = warm.clone()
	}
	states := []*state{warm}
	starts := []*state{deflated}
	if len(e.jobs) <= coldStartJobs {
		starts = append(starts, cold)
	}
	for _, s := range starts {
		// A start equal to one already kept (a cold round: nothing runs,
		// so all three are the empty cluster) would search to the same
		// result: skip it.
		if !slices.ContainsFunc(states, s.same) {
			states = append(states, s)
		}
	}
	if err := e.searchStarts(ctx, states, maxPasses); err != nil {
		return nil, err
	}
	// Best engine objective first; ties keep the warm start.
	slices.SortStableFunc(states, func(a, b *state) int {
		oa, ob := e.objective(a), e.objective(b)
		if math.Abs(oa-ob) <= 1e-12*(1+math.Abs(oa)) {
			return 0
		}
		return cmp.Compare(ob, oa)
	})
	if ref != nil {
		// Drop candidates that take a group below its floor (the cold and
		// deflated starts may hand its devices to others); the warm start
		// grown by the greedy alone always qualifies.
		states = slices.DeleteFunc(states, func(s *state) bool { return !e.floorsKept(s, ref) })
		if len(states) == 0 {
			if err := e.fill(ctx, ref); err != nil {
				return nil, err
			}
			states = append(states, ref)
		}
	}
	if len(e.jobs) <= polishJobs && e.contended(states[0]) {
		// One more candidate: the best state polished on replayed
		// placements, unless it takes a group below its floor.
		if p := e.polish(states[0]); e.floorsKept(p, states[0]) {
			states = append(states, p)
		}
	}
	if e.err != nil {
		return nil, e.err
	}
	var out []*Solution
	for _, s := range states {
		if !slices.ContainsFunc(out, func(o *Solution) bool { return slices.Equal(o.s.typ, s.typ) && slices.Equal(o.s.cnt, s.cnt) }) {
			out = append(out, &Solution{s})
		}
	}
	return out, nil
}

// contended reports whether some type has less than one whole node (its
// largest bin) free in s. When every type still has a whole free node, no
// job's layout is squeezed by another's and the polish on replayed
// placements has nothing to resolve.
func (e *Search) contended(s *state) bool {
	for t, free := range s.free {
		if free < e.lay.maxCap[t] {
			return true
		}
	}
	return false
}

// Layout realises sol on concrete devices exactly as the engine laid it
// out: on each of a job's bins its current devices there first, then free
// devices in node and index order. One assignment per job that runs, in
// job order.
func (e *Search) Layout(sol *Solution) []placement.Assignment { return e.layoutResult(sol.s) }

// markCurrent marks job i's current devices in owner (by device number,
// job index + 1) without looking them up by ID, when Current lists them
// bin by bin as e.cur[i] does, each bin's in the layout's order (as a
// placement made on this cluster lists them); it reports false, having
// marked some of them, otherwise.
func (e *Search) markCurrent(owner []int32, i int) bool {
	l, cur := e.lay, e.jobs[i].Current
	q := 0
	for _, sl := range e.cur[i] {
		devs, p := l.binDevs[sl.bin], 0
		for range sl.k {
			for p < len(devs) && q < len(cur) && devs[p] != cur[q] {
				p++
			}
			if p == len(devs) || q == len(cur) {
				return false
			}
			owner[l.binStart[sl.bin]+p] = int32(i + 1)
			p, q = p+1, q+1
		}
	}
	return q == len(cur)
}

// Realized is the fitness of concrete assignments: each job's value on
// the devices it gets (nodes counted), with the restart factor when its
// devices changed. Assignments of unknown jobs are ignored. Speedups come
// from the search's memo, so a bad one seen before (by the search or an
// earlier Realized) fails every later call.
func (e *Search) Realized(assignments []placement.Assignment) (float64, error) {
	vals := make([]float64, len(e.jobs))
	next := 0 // the job after the last one found
	for _, a := range assignments {
		i, ok := e.jobAfter(next, a.Job)
		if !ok || len(a.Devices) == 0 {
			continue
		}
		next = i + 1
		j := &e.jobs[i]
		t, n := j.CurrentType, j.CurrentNodes
		same := slices.Equal(a.Devices, j.Current)
		if !same {
			d, ok := e.prob.Index.Ref(a.Devices[0])
			if !ok {
				return 0, fmt.Errorf("%w: job %q: unknown device %q", ErrInvalid, a.Job, a.Devices[0])
			}
			t, n = d.Type, e.prob.Index.NodesOf(a.Devices)
		}
		v := e.norm(j, t, n, len(a.Devices))
		if e.err != nil {
			return 0, e.err
		}
		if j.penal && !same && !placement.SameDevices(a.Devices, j.Current) {
			v *= j.rf
		}
		if e.prob.GangSlowdown != nil {
			v /= e.prob.GangSlowdown(i, a.Devices)
		}
		vals[i] = v
	}
	return e.fitness(vals), nil
}

// jobAfter returns the position of the job with the given ID, looking
// first at the few jobs from position next on: assignments usually come
// in job order, as the jobs do, with a gap where a job gets nothing.
func (e *Search) jobAfter(next int, id string) (int, bool) {
	for i := next; i < min(next+8, len(e.jobs)); i++ {
		if e.jobs[i].ID == id {
			return i, true
		}
	}
	i, ok := e.byID[id]
	return i, ok
}

// Alloc is a job's allocation for Fitness.
type Alloc struct {
	// Type (a position in Index.Types()), Nodes and Count: what the job
	// runs on; Count 0 = nothing.
	Type, Nodes, Count int
	// Changed charges the restart factor (its devices change).
	Changed bool
}

// Fitness is the objective, the weighted power mean of the jobs' values,
// for one Alloc per job (in Problem.Jobs order).
func (e *Search) Fitness(allocs []Alloc) (float64, error) {
	if len(allocs) != len(e.jobs) {
		return 0, fmt.Errorf("%w: %d allocations for %d jobs", ErrInvalid, len(allocs), len(e.jobs))
	}
	vals := make([]float64, len(e.jobs))
	for i, a := range allocs {
		if a.Count <= 0 {
			continue
		}
		j := &e.jobs[i]
		v, err := j.Speedup(a.Type, max(a.Nodes, 1), a.Count)
		if err != nil {
			return 0, err
		}
		v /= j.base
		if j.penal && a.Changed {
			v *= j.rf
		}
		vals[i] = v
	}
	return e.fitness(vals), nil
}

// Speedup returns job i's speedup on (t, nodes, count), as its Speedup
// gives it (memoised).
func (e *Search) Speedup(i, t, nodes, count int) float64 {
	j := &e.jobs[i]
	return e.norm(j, t, nodes, count) * j.base
}

// RestartFactor returns job i's restart factor and whether a change of
// its devices is charged it (it runs now, or ran before).
func (e *Search) RestartFactor(i int) (float64, bool) { return e.jobs[i].rf, e.jobs[i].penal }

// Fits reports whether job i could get count devices of type t in sol
// (interference rules included), leaving sol as it was.
func (e *Search) Fits(sol *Solution, i, t, count int) bool {
	_, ok := e.probe(sol.s, i, t, count)
	return ok
}

func sumSlots(p []slot) int {
	n := 0
	for _, sl := range p {
		n += sl.k
	}
	return n
}

// Baseline returns job i's fair-share baseline: its best speedup on 1/J of
// the cluster, the denominator of its value.
func (e *Search) Baseline(i int) float64 { return e.jobs[i].base }

// same reports whether s and o are the same allocation with the same free
// bins in the same bucket order (so that a search from either ends alike).
func (s *state) same(o *state) bool {
	if !slices.Equal(s.typ, o.typ) || !slices.Equal(s.cnt, o.cnt) || !slices.Equal(s.bfree, o.bfree) ||
		!slices.Equal(s.bdist, o.bdist) || !slices.Equal(s.pos, o.pos) || !slices.Equal(s.free, o.free) ||
		!slices.EqualFunc(s.place, o.place, slices.Equal[[]slot]) || len(s.bucket) != len(o.bucket) {
		return false
	}
	for t := range s.bucket {
		if !slices.EqualFunc(s.bucket[t], o.bucket[t], slices.Equal[[]int]) {
			return false
		}
	}
	return true
}

// Why is the engine's explanation of one job's allocation (Explain).
type Why int

const (
	// WhyPinned: a running non-preemptible job keeps its devices.
	WhyPinned Why = iota
	// WhyUnchanged: the job keeps its allocation.
	WhyUnchanged
	// WhyObjective: the objective changed the job's allocation (or gave
	// a running job's devices to others).
	WhyObjective
	// WhyNoCapacity: no allowed type has room for the job's minimum.
	WhyNoCapacity
	// WhyInterference: there are free devices, but not on nodes free of
	// distributed jobs.
	WhyInterference
	// WhyRestartCost: starting would not pay for the restart.
	WhyRestartCost
)

// Explain says why job k has its allocation in sol, with the figures in
// words ("speedup 2.90→4.60, restart factor 0.97").
func (e *Search) Explain(sol *Solution, k int) (Why, string) {
	j := &e.prob.Jobs[k]
	t, c, nodes := sol.Alloc(k)
	t0, n0 := j.CurrentType, len(j.Current) // what it runs now, on a type it may use
	if !slices.Contains(j.Types, t0) {
		t0 = -1
	}
	rf, charged := e.RestartFactor(k)
	switch {
	case j.Pinned:
		return WhyPinned, "non-preemptible"
	case c > 0 && t == t0 && c == n0:
		v := e.Speedup(k, t, nodes, c)
		return WhyUnchanged, fmt.Sprintf("speedup %.2f (%.2f× its fair share)", v, v/e.Baseline(k))
	case c > 0:
		before := 0.0
		if t0 >= 0 {
			before = e.Speedup(k, t0, j.CurrentNodes, n0)
		}
		note := fmt.Sprintf("speedup %.2f→%.2f", before, e.Speedup(k, t, nodes, c))
		if charged {
			note += fmt.Sprintf(", restart factor %.2f", rf)
		}
		return WhyObjective, note
	}
	return e.whyQueued(sol, k, t0 >= 0)
}

// whyQueued explains why job k got nothing.
func (e *Search) whyQueued(sol *Solution, k int, running bool) (Why, string) {
	j := &e.prob.Jobs[k]
	largest := 0
	for _, t := range j.Types {
		largest = max(largest, e.cap[t])
	}
	if largest < j.Min {
		return WhyNoCapacity, fmt.Sprintf("needs %d devices, its largest allowed type has %d", j.Min, largest)
	}
	for _, t := range j.Types {
		if sol.Free(t) >= j.Min {
			if !e.Fits(sol, k, t, j.Min) {
				return WhyInterference, fmt.Sprintf("%d free %s devices, but not on nodes free of distributed jobs", sol.Free(t), e.types[t])
			}
			rf, _ := e.RestartFactor(k)
			return WhyRestartCost, fmt.Sprintf("starting on %s would not pay for the restart (factor %.2f)", e.types[t], rf)
		}
	}
	names := make([]string, 0, len(j.Types))
	for _, t := range j.Types {
		names = append(names, fmt.Sprintf("%d %s", sol.Free(t), e.types[t]))
	}
	slices.Sort(names)
	if running {
		return WhyObjective, fmt.Sprintf("devices serve the fairness objective better elsewhere (free: %v)", names)
	}
	return WhyNoCapacity, fmt.Sprintf("needs %d devices; free: %v", j.Min, names)
}

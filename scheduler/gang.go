package scheduler

import (
	"context"
	"fmt"
	"slices"

	"github.com/goodsched/goodsched/goodput"
	"github.com/goodsched/goodsched/placement"
)

// This file holds what the Round does for W-jobs (Job.Workers > 0): their
// bounds, their current gangs of one or several types, the checking of
// targets with Shares, the placement of gangs of several types (each
// type's part placed as a gang of its own, by the Scheduler's Placer) and
// the workers each device hosts.

// checkWorkers validates a W-job's worker count and bounds ji by it.
func (r *Round) checkWorkers(ji *jobInfo) error {
	j := ji.Job
	if j.Workers < 0 {
		return fmt.Errorf("%w: job %q: Workers = %d, want ≥ 1 (or 0: not a W-job)", ErrInvalid, j.ID, j.Workers)
	}
	if j.Workers == 0 {
		return nil
	}
	if ji.Min > j.Workers {
		return fmt.Errorf("%w: job %q: needs at least %d devices but has %d logical workers", ErrInvalid, j.ID, ji.Min, j.Workers)
	}
	ji.Max = min(ji.Max, j.Workers)
	if gs, ok := j.Speedup.(goodput.GangSpeedup); ok {
		if gs.Workers() != j.Workers {
			return fmt.Errorf("%w: job %q: Workers = %d but its Speedup models %d", ErrInvalid, j.ID, j.Workers, gs.Workers())
		}
		ji.Mixes = true
	}
	return nil
}

// checkCurrentWorkers validates the Workers of a's entry for W-job ji
// (types: each device's type position) and records its current shares;
// a job that is not a W-job must have none.
func (r *Round) checkCurrentWorkers(k int, ji *jobInfo, a *placement.Assignment, types []int) error {
	w := ji.Job.Workers
	if w == 0 {
		if a.Workers != nil {
			return fmt.Errorf("%w: current[%d]: job %q has Workers but is not a W-job", ErrInvalid, k, a.Job)
		}
		return nil
	}
	n := len(a.Devices)
	if n > w {
		return fmt.Errorf("%w: current[%d]: job %q holds %d devices but has %d logical workers", ErrInvalid, k, a.Job, n, w)
	}
	if a.Workers != nil && len(a.Workers) != n {
		return fmt.Errorf("%w: current[%d]: job %q: %d worker counts for %d devices", ErrInvalid, k, a.Job, len(a.Workers), n)
	}
	per := make([]int, len(r.types))
	dev := make([]int, len(r.types))
	sum := 0
	for p, t := range types {
		c := 0
		if a.Workers != nil {
			c = a.Workers[p]
			if c < 1 {
				return fmt.Errorf("%w: current[%d]: job %q: device %q hosts %d workers, want ≥ 1", ErrInvalid, k, a.Job, a.Devices[p], c)
			}
		}
		per[t] += c
		dev[t]++
		sum += c
	}
	if a.Workers == nil {
		// No counts given: the workers spread evenly, type by type.
		per = placement.SpreadWorkers(w, dev)
	} else if sum != w {
		return fmt.Errorf("%w: current[%d]: job %q: its devices host %d workers, want %d", ErrInvalid, k, a.Job, sum, w)
	}
	for t := range r.types {
		if dev[t] > 0 {
			ji.CurrentShares = append(ji.CurrentShares, Share{Type: r.types[t], Count: dev[t], Workers: per[t]})
		}
	}
	if len(ji.CurrentShares) > 1 {
		// A gang of several types: it is compared, pinned and kept as
		// its shares; its type is the one with the most devices.
		best := 0
		for t := range dev {
			if dev[t] > dev[best] {
				best = t
			}
		}
		ji.curType, ji.CurrentType, ji.mixedNow = best, r.types[best], true
	}
	return nil
}

// checkShares validates target t's Shares for job j and sets its Count
// and Type from them.
func (r *Round) checkShares(j *jobInfo, t *Target) error {
	id := j.Job.ID
	if !j.Mixes {
		return fmt.Errorf("%w: job %q: Shares for a job that may not mix types", ErrPolicy, id)
	}
	count, workers := 0, 0
	for k, s := range t.Shares {
		ti, ok := r.cluster.TypeIndex(s.Type)
		switch {
		case !ok:
			return fmt.Errorf("%w: job %q: shares[%d]: type %q is not in the cluster", ErrPolicy, id, k, s.Type)
		case !slices.Contains(j.allowed, ti):
			return fmt.Errorf("%w: job %q: shares[%d]: type %q is not allowed for the job", ErrPolicy, id, k, s.Type)
		case s.Count < 1 || s.Workers < s.Count:
			return fmt.Errorf("%w: job %q: shares[%d]: %d workers on %d %s devices", ErrPolicy, id, k, s.Workers, s.Count, s.Type)
		case s.Count > r.cap[ti]:
			return fmt.Errorf("%w: job %q: shares[%d]: %d %s devices, the cluster has %d", ErrPolicy, id, k, s.Count, s.Type, r.cap[ti])
		}
		for _, o := range t.Shares[:k] {
			if o.Type == s.Type {
				return fmt.Errorf("%w: job %q: shares[%d]: type %q twice", ErrPolicy, id, k, s.Type)
			}
		}
		count += s.Count
		workers += s.Workers
	}
	if workers != j.Job.Workers {
		return fmt.Errorf("%w: job %q: shares host %d workers, the job has %d", ErrPolicy, id, workers, j.Job.Workers)
	}
	if t.Count != count {
		return fmt.Errorf("%w: job %q: Count %d, shares total %d", ErrPolicy, id, t.Count, count)
	}
	if !j.fits(count) {
		return fmt.Errorf("%w: job %q: %d devices outside its bounds [%d, %d]", ErrPolicy, id, count, j.Min, j.Max)
	}
	t.Type = t.Shares[0].Type
	if len(t.Shares) == 1 {
		t.Shares = nil // one type: the plain target
	}
	return nil
}

// involvesGangs reports whether placing pt needs placeGangs: a target
// with shares of several types, or a job that holds such a gang now.
func (r *Round) involvesGangs(pt []Target) bool {
	for _, t := range pt {
		if len(t.Shares) > 1 {
			return true
		}
	}
	return r.gangsNow
}

// placeGangs places pt (as toPlace gives it) when gangs of several types
// are involved: every such job's current devices and target are split
// per type into parts with IDs of their own, the Placer places the parts
// as it places any gang, and each job's parts are joined again. A job one
// of whose parts cannot be placed keeps its current devices if the Placer
// left it every one of them, and otherwise does not run this round.
func (r *Round) placeGangs(ctx context.Context, pt []Target) (*placedSet, error) {
	split := make(map[string]bool) // jobs placed in parts
	for _, t := range pt {
		if len(t.Shares) > 1 {
			split[t.Job] = true
		}
	}
	for i := range r.jobs {
		if r.jobs[i].mixedNow {
			split[r.jobs[i].Job.ID] = true
		}
	}
	cur := r.cluster.SplitGangs(r.current, func(job string) bool { return split[job] })
	var parts []Target
	for _, t := range pt {
		switch {
		case !split[t.Job]:
			parts = append(parts, t)
		case len(t.Shares) > 1:
			for _, s := range t.Shares {
				parts = append(parts, Target{Job: placement.GangPart(t.Job, s.Type), Type: s.Type, Count: s.Count, MaxNodes: t.MaxNodes})
			}
		default:
			parts = append(parts, Target{Job: placement.GangPart(t.Job, t.Type), Type: t.Type, Count: t.Count, MaxNodes: t.MaxNodes})
		}
	}
	var st *placement.State
	if su, ok := r.placer.(StateUser); !ok || su.UsesState() {
		var err error
		if st, err = r.cluster.NewState(cur); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
		}
	}
	res, err := r.placer.Place(ctx, PlaceInput{Cluster: r.cluster, Current: cur, State: st, Targets: parts, AllowInterference: r.allowInterference})
	if err != nil {
		return nil, placeError(err)
	}
	// Join the parts.
	var out PlaceResult
	out.Assignments, out.Unplaced = placement.JoinGangs(res.Assignments, res.Unplaced, func(job string) []string {
		return r.jobs[r.byID[job]].Current
	})
	tg := r.alignTargets(pt)
	assigned, unplaced, err := r.checkPlacement(out, tg)
	if err != nil {
		return nil, err
	}
	r.placed = append(r.placed, placedSet{targets: pt, res: out, checked: true, assigned: assigned, unplaced: unplaced})
	return &r.placed[len(r.placed)-1], nil
}

// alignTargets returns the targets pt index-aligned with r.jobs (zero
// counts for jobs without one).
func (r *Round) alignTargets(pt []Target) []Target {
	tg := make([]Target, len(r.jobs))
	for _, t := range pt {
		tg[r.byID[t.Job]] = t
	}
	return tg
}

// gangTypesOK reports whether devs realise target t's types: per type
// what t.Shares say, or t.Count of t.Type.
func (r *Round) gangTypesOK(t Target, devs []string) bool {
	counts, _ := r.cluster.CountByType(devs, nil)
	want := make([]int, len(r.types))
	if len(t.Shares) > 1 {
		for _, s := range t.Shares {
			ti, _ := r.cluster.TypeIndex(s.Type)
			want[ti] = s.Count
		}
	} else {
		ti, _ := r.cluster.TypeIndex(t.Type)
		want[ti] = t.Count
	}
	return slices.Equal(want, counts)
}

// workersOf returns how many logical workers each of devs hosts for
// W-job j under target t: per type what t.Shares say (all on t's type
// without shares; the current shares when the job keeps its devices),
// spread evenly over that type's devices, the first devices taking the
// remainder.
func (r *Round) workersOf(j *jobInfo, t Target, devs []string) []int {
	w := j.Job.Workers
	if w == 0 || len(devs) == 0 {
		return nil
	}
	dev, _ := r.cluster.CountByType(devs, nil)
	per := make([]int, len(r.types))
	shares := t.Shares
	if placement.SameDevices(devs, j.Current) && len(j.CurrentShares) > 0 {
		shares = j.CurrentShares
	}
	matched := 0
	for _, s := range shares {
		if ti, ok := r.cluster.TypeIndex(s.Type); ok && dev[ti] == s.Count {
			per[ti] = s.Workers
			matched += s.Workers
		}
	}
	if matched != w {
		per = placement.SpreadWorkers(w, dev)
	}
	return r.cluster.DeviceWorkers(devs, per)
}

// sharesOf returns the shares (type, count, workers) of an assignment
// with workers per device, in type order.
func (r *Round) sharesOf(devs []string, workers []int) []Share {
	dev, per := r.cluster.CountByType(devs, workers)
	var out []Share
	for t := range r.types {
		if dev[t] > 0 {
			out = append(out, Share{Type: r.types[t], Count: dev[t], Workers: per[t]})
		}
	}
	return out
}

// gangSpeedup is job j's speedup on shares over nodes nodes: its
// GangSpeedup (checked), or for one type its Speedup.
func (r *Round) gangSpeedup(j *jobInfo, shares []Share, nodes int) (float64, error) {
	if len(shares) == 1 {
		t, _ := r.cluster.TypeIndex(shares[0].Type)
		return r.evalSpeedup(j, t, nodes, shares[0].Count)
	}
	gs, ok := j.Job.Speedup.(goodput.GangSpeedup)
	if !ok {
		return 0, nil
	}
	g := make([]goodput.TypeShare, len(shares))
	for k, s := range shares {
		g[k] = goodput.TypeShare{Type: string(s.Type), Devices: s.Count, Workers: s.Workers}
	}
	v := gs.GangSpeedup(g, nodes)
	if v != v || v < 0 || v > 1e300 {
		return 0, fmt.Errorf("%w: job %q: gang speedup %v", ErrBadSpeedup, j.Job.ID, v)
	}
	return v, nil
}

package scheduler

import (
	"fmt"
	"slices"

	"github.com/goodsched/goodsched/goodput"
	"github.com/goodsched/goodsched/placement"
)

// This file holds what the Round does for W-jobs (Job.Workers > 0): their
// bounds, their current gangs of one or several types, the checking of
// targets with Shares, the placement of gangs of several types (each
// type's part placed as a gang of its own, by the Scheduler's Placer) and
// the workers each device hosts (Round.place splits and joins the gangs).

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
// (placement.Index.CheckWorkers) and records its current shares; a job
// that is not a W-job must have none.
func (r *Round) checkCurrentWorkers(k int, ji *jobInfo, a *placement.Assignment) error {
	if ji.Job.Workers == 0 {
		if a.Workers != nil {
			return fmt.Errorf("%w: current[%d]: job %q has Workers but is not a W-job", ErrInvalid, k, a.Job)
		}
		return nil
	}
	sh, err := r.cluster.CheckWorkers(*a, ji.Job.Workers)
	if err != nil {
		return fmt.Errorf("%w: current[%d]: %w", ErrInvalid, k, err)
	}
	ji.CurrentShares = sh
	if len(sh) > 1 {
		// A gang of several types: it is compared, pinned and kept as
		// its shares; its type is the one with the most devices.
		best := 0
		for k := range sh {
			if sh[k].Count > sh[best].Count {
				best = k
			}
		}
		ji.CurrentType, ji.mixedNow = sh[best].Type, true
		ji.curType, _ = r.cluster.TypeIndex(ji.CurrentType)
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

// mixedGangs returns the jobs whose gangs span several types, in their
// target (Shares) or in the devices they hold; nil when there are none.
func (r *Round) mixedGangs(tg []Target) map[string]bool {
	var split map[string]bool
	for i := range tg {
		if tg[i].Count > 0 && len(tg[i].Shares) > 1 || r.jobs[i].mixedNow {
			if split == nil {
				split = make(map[string]bool)
			}
			split[r.jobs[i].Job.ID] = true
		}
	}
	return split
}

// gangTypesOK reports whether devs realise target t's types: per type
// what t.Shares say, or t.Count of t.Type.
func (r *Round) gangTypesOK(t Target, devs []string) bool {
	want, got := t.Shares, r.cluster.Shares(devs, nil)
	if len(want) <= 1 {
		want = []placement.Share{{Type: t.Type, Count: t.Count}}
	}
	return len(got) == len(want) && !slices.ContainsFunc(want, func(s placement.Share) bool {
		return !slices.ContainsFunc(got, func(g placement.Share) bool { return g.Type == s.Type && g.Count == s.Count })
	})
}

// gangSpeedup is job j's speedup on shares over nodes nodes: its
// GangSpeedup (checked), or for one type its Speedup.
func (r *Round) gangSpeedup(j *jobInfo, shares []placement.Share, nodes int) (float64, error) {
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

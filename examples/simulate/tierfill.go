package main

import (
	"cmp"
	"context"
	"slices"

	"github.com/goodsched/goodsched/accel"
	"github.com/goodsched/goodsched/scheduler"
)

// tierFill is the policy of the tiered fleet replay (-tiers): strict
// priority with preemption. Jobs that their tier guarantees devices
// (RoundJob.Pinned, RoundJob.Guarantee) keep them; then, by priority
// (the tier's), running jobs before waiting ones of the same priority,
// then submission, each job gets its count (its minimum) on its current
// type when it runs and that still fits, else on the allowed type with
// room where its Speedup is highest; a running job that no longer fits
// is preempted for the higher-priority jobs before it. It uses only the
// exported Round, as every policy must.
type tierFill struct{}

func (tierFill) Allocate(ctx context.Context, r *scheduler.Round) ([]scheduler.Target, error) {
	idx := r.Cluster()
	free := map[accel.TypeKey]int{}
	perNode := map[accel.TypeKey]int{}
	for _, t := range idx.Types() {
		free[t], perNode[t], _ = idx.Usable(t)
	}
	jobs := r.Jobs()
	var out []scheduler.Target
	kept := make([]bool, len(jobs))
	for i, j := range jobs {
		if n := len(j.Current); n > 0 && (j.Pinned || j.Guarantee > 0) {
			keep := n
			if !j.Pinned {
				keep = max(j.Guarantee, min(n, j.Min))
			}
			free[j.CurrentType] -= keep
			out = append(out, scheduler.Target{Job: j.Job.ID, Type: j.CurrentType, Count: keep, Reason: scheduler.ReasonTier})
			kept[i] = true
		}
	}
	order := make([]int, 0, len(jobs))
	for i := range jobs {
		if !kept[i] {
			order = append(order, i)
		}
	}
	slices.SortFunc(order, func(a, b int) int {
		ja, jb := jobs[a], jobs[b]
		return cmp.Or(cmp.Compare(jb.Job.Priority, ja.Job.Priority), cmp.Compare(running(jb), running(ja)),
			ja.Job.Submitted.Compare(jb.Job.Submitted), cmp.Compare(ja.Job.ID, jb.Job.ID))
	})
	for _, i := range order {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		j := jobs[i]
		want := j.Min
		if n := len(j.Current); n == want && free[j.CurrentType] >= want {
			free[j.CurrentType] -= want
			out = append(out, scheduler.Target{Job: j.Job.ID, Type: j.CurrentType, Count: want, Reason: scheduler.ReasonUnchanged})
			continue
		}
		best, bestV := accel.TypeKey(""), 0.0
		for _, t := range j.Types {
			if free[t] < want || perNode[t] == 0 {
				continue
			}
			v, err := r.Speedup(j.Job.ID, t, (want+perNode[t]-1)/perNode[t], want)
			if err != nil {
				return nil, err
			}
			if best == "" || v > bestV {
				best, bestV = t, v
			}
		}
		if best != "" {
			free[best] -= want
			out = append(out, scheduler.Target{Job: j.Job.ID, Type: best, Count: want, Reason: scheduler.ReasonOrder})
		}
	}
	return out, nil
}

// running is 1 for a job that holds devices, else 0.
func running(j scheduler.RoundJob) int {
	if len(j.Current) > 0 {
		return 1
	}
	return 0
}

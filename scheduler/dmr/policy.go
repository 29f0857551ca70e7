package dmr

import (
	"cmp"
	"context"
	"slices"

	"github.com/goodsched/goodsched/accel"
	"github.com/goodsched/goodsched/scheduler"
)

// Policy is a scheduler.Policy for a cluster of malleable jobs that follow
// Reconfigure at every round (their synchronisation points), and rigid jobs
// that do not. Each round it asks, for every running malleable job in
// arrival order, what Reconfigure answers against the allocations in
// effect (updated after each answer, as a resource manager serving the
// requests one by one would), and resizes the job accordingly; then
// waiting jobs start, first come first served, on their requested count
// where it fits (later jobs backfill), on their allowed type with the most
// free devices. Running jobs are never preempted. It reads only the
// exported scheduler.Round.
//
// Policy is a plain value: safe for concurrent use.
type Policy struct{}

var _ scheduler.Policy = Policy{}

// Allocate implements scheduler.Policy.
func (Policy) Allocate(ctx context.Context, r *scheduler.Round) ([]scheduler.Target, error) {
	in := r.Input()
	jobs := r.Jobs()
	slices.SortFunc(jobs, func(a, b scheduler.RoundJob) int {
		return cmp.Or(a.Job.Submitted.Compare(b.Job.Submitted), cmp.Compare(a.Job.ID, b.Job.ID))
	})
	// The allocations in effect, as the plan Reconfigure answers against.
	plan := scheduler.Plan{Decisions: make([]scheduler.Decision, 0, len(jobs))}
	for _, j := range jobs {
		d := scheduler.Decision{Job: j.Job.ID}
		if len(j.Current) > 0 {
			d.Type, d.To = j.CurrentType, len(j.Current)
		}
		plan.Decisions = append(plan.Decisions, d)
	}
	slices.SortFunc(plan.Decisions, func(a, b scheduler.Decision) int { return cmp.Compare(a.Job, b.Job) })
	decision := func(id string) *scheduler.Decision {
		k, _ := slices.BinarySearchFunc(plan.Decisions, id, func(d scheduler.Decision, id string) int { return cmp.Compare(d.Job, id) })
		return &plan.Decisions[k]
	}
	out := make([]scheduler.Target, 0, len(jobs))
	for _, j := range jobs {
		if len(j.Current) == 0 {
			continue
		}
		to := len(j.Current)
		if j.Job.Kind != scheduler.Rigid && !j.Pinned {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			a, err := New(*in, plan)
			if err != nil {
				return nil, err
			}
			ans, err := a.Reconfigure(j.Job.ID, in.Now)
			if err != nil {
				return nil, err
			}
			to = min(max(ans.To, j.Min), j.Max)
			decision(j.Job.ID).To = to
		}
		out = append(out, scheduler.Target{Job: j.Job.ID, Type: j.CurrentType, Count: to, Reason: scheduler.ReasonOrder, Note: "DMR reconfiguration"})
	}
	// Free devices per type after the reconfigurations.
	ix := r.Cluster()
	free := map[accel.TypeKey]int{}
	for _, t := range ix.Types() {
		free[t], _, _ = ix.Usable(t)
	}
	for _, t := range out {
		free[t.Type] -= t.Count
	}
	for _, j := range jobs {
		if len(j.Current) > 0 || j.Pinned {
			continue
		}
		want := cmp.Or(j.Job.Requested, j.Job.MinReplicas, 1)
		want = min(max(want, j.Min), j.Max)
		best := accel.TypeKey("")
		for _, t := range j.Types {
			if free[t] >= want && (best == "" || free[t] > free[best]) {
				best = t
			}
		}
		if best == "" {
			continue
		}
		free[best] -= want
		out = append(out, scheduler.Target{Job: j.Job.ID, Type: best, Count: want, Reason: scheduler.ReasonOrder, Note: "first come, first served"})
	}
	slices.SortFunc(out, func(a, b scheduler.Target) int { return cmp.Compare(a.Job, b.Job) })
	return out, nil
}

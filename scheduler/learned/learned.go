// Package learned offers the learned unrelated-machines policy of package
// unrelated (Hitzges & Sagnol, ICMLA'25) as a scheduler.Policy for rigid
// jobs on a heterogeneous cluster: which waiting job starts next on which
// device type.
//
// Each round, running jobs keep their devices (no preemption, as FIFO).
// The waiting jobs and the cluster's device types then form an
// unrelated-machines instance: one machine per type; a job's processing
// time on a type is the device-time share it would take there, its
// requested count times its run time on that type (remaining work over
// its speedup on the packed gang) divided by the type's usable devices, so
// that a type works through its jobs as fast as its capacity allows; a
// type is occupied at time 0 by its running jobs' share the same way, or
// free when it has free devices. Every job's deadline is 0 and its weight
// the job's weight, so the instance's cost is the makespan plus the
// weighted sum of completion times. The network (or the rule, or any
// unrelated.Policy) plays that instance; the order in which it starts jobs
// on each type is the round's priority: jobs start in that order where
// their count fits the type's free devices (later ones backfill).
//
// The policy reads only the exported scheduler.Round. Remaining work comes
// from Job.RemainingWork (a host or the simulator's Config.Oracle sets it;
// 1 when unknown, which makes the run time the inverse of the speedup). A
// type on which a job's speedup is 0 (unprofiled, or not allowed) costs it
// ten times its slowest allowed type.
package learned

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"

	"github.com/goodsched/goodsched/accel"
	"github.com/goodsched/goodsched/scheduler"
	"github.com/goodsched/goodsched/unrelated"
)

// Policy is the learned dispatching policy. The zero value uses the
// network shipped with package unrelated. Policy is a plain value: safe
// for concurrent use.
type Policy struct {
	// Decider plays each round's instance; nil = unrelated.Learned with
	// the shipped network. unrelated.Rule{} gives the paper's
	// dispatching rule instead.
	Decider unrelated.Policy
}

var _ scheduler.Policy = Policy{}

// Allocate implements scheduler.Policy.
func (p Policy) Allocate(ctx context.Context, r *scheduler.Round) ([]scheduler.Target, error) {
	ix := r.Cluster()
	types := ix.Types()
	free := make([]int, len(types))
	usable := make([]int, len(types))
	perNode := make([]int, len(types))
	for t, typ := range types {
		usable[t], perNode[t], _ = ix.Usable(typ)
		free[t] = usable[t]
	}
	jobs := r.Jobs()
	var out []scheduler.Target
	busy := make([]float64, len(types)) // device-hours held by running jobs, per type
	var waiting []scheduler.RoundJob
	for _, j := range jobs {
		t := slices.Index(types, j.CurrentType)
		if len(j.Current) > 0 && t >= 0 && (j.Pinned || (len(j.Current) >= j.Min && len(j.Current) <= j.Max && slices.Contains(j.Types, j.CurrentType))) {
			free[t] -= len(j.Current)
			out = append(out, scheduler.Target{Job: j.Job.ID, Type: j.CurrentType, Count: len(j.Current), Reason: scheduler.ReasonUnchanged, Note: "running jobs are not preempted"})
			run, err := runTime(r, j, j.CurrentType, perNode[t], len(j.Current))
			if err != nil {
				return nil, err
			}
			if !math.IsInf(run, 0) {
				busy[t] += run * float64(len(j.Current))
			}
			continue
		}
		if j.Pinned {
			continue
		}
		waiting = append(waiting, j)
	}
	if len(waiting) == 0 {
		return out, nil
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	order, runsOn, err := p.order(r, waiting, types, usable, perNode, free, busy)
	if err != nil {
		return nil, err
	}
	for _, o := range order {
		j := waiting[o.job]
		want := j.Min
		// On the type the instance chose; else on the job's fastest
		// allowed type with room.
		t := -1
		for _, c := range append([]int{o.typ}, runsOn[o.job]...) {
			if runsOn[o.job] != nil && slices.Contains(runsOn[o.job], c) && free[c] >= want && want > 0 {
				t = c
				break
			}
		}
		if t < 0 {
			continue
		}
		free[t] -= want
		out = append(out, scheduler.Target{Job: j.Job.ID, Type: types[t], Count: want, Reason: scheduler.ReasonOrder,
			Note: fmt.Sprintf("learned order %d on %s", o.rank+1, types[t])})
	}
	slices.SortFunc(out, func(a, b scheduler.Target) int { return cmp.Compare(a.Job, b.Job) })
	return out, nil
}

// start is one job of the instance's schedule: the waiting job, the type
// it starts on and its rank in the order of starts.
type start struct{ job, typ, rank int }

// order plays the round's unrelated-machines instance and returns the
// starts by start time (then type, then job), and per waiting job the
// types it can run on (allowed, with a positive speedup), fastest first.
func (p Policy) order(r *scheduler.Round, waiting []scheduler.RoundJob, types []accel.TypeKey, usable, perNode, free []int, busy []float64) ([]start, [][]int, error) {
	in := unrelated.Instance{Machines: make([]unrelated.Machine, len(types)), Jobs: make([]unrelated.Job, len(waiting))}
	for t := range types {
		if free[t] <= 0 && usable[t] > 0 {
			in.Machines[t].Busy = busy[t] / float64(usable[t])
		}
	}
	runsOn := make([][]int, len(waiting))
	for k, j := range waiting {
		proc := make([]float64, len(types))
		slowest := 0.0
		for t, typ := range types {
			proc[t] = math.Inf(1)
			if usable[t] == 0 || j.Min > usable[t] || !slices.Contains(j.Types, typ) {
				continue
			}
			run, err := runTime(r, j, typ, perNode[t], j.Min)
			if err != nil {
				return nil, nil, err
			}
			if !math.IsInf(run, 0) {
				proc[t] = run * float64(j.Min) / float64(usable[t])
				slowest = max(slowest, proc[t])
				runsOn[k] = append(runsOn[k], t)
			}
		}
		slices.SortStableFunc(runsOn[k], func(a, b int) int { return cmp.Compare(proc[a], proc[b]) })
		if slowest == 0 {
			slowest = 1 // runs nowhere: it never fits either
		}
		for t := range proc {
			if math.IsInf(proc[t], 0) {
				proc[t] = 10 * slowest
			}
		}
		in.Jobs[k] = unrelated.Job{Processing: proc, Weight: j.Weight}
	}
	dec := p.Decider
	if dec == nil {
		dec = unrelated.Learned{}
	}
	s, err := unrelated.Start(in)
	if err != nil {
		return nil, nil, fmt.Errorf("learned: round instance: %w", err)
	}
	var order []start
	at := make([]float64, 0, len(waiting))
	for !s.Done() {
		t, now := s.Machine, s.Time
		a := dec.Decide(s)
		if err := s.Step(a); err != nil {
			return nil, nil, fmt.Errorf("%w: learned: %w", scheduler.ErrPolicy, err)
		}
		if a != unrelated.Retire {
			order = append(order, start{job: int(a), typ: t, rank: len(order)})
			at = append(at, now)
		}
	}
	idx := make([]int, len(order))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int { return cmp.Compare(at[a], at[b]) })
	sorted := make([]start, len(order))
	for i, k := range idx {
		sorted[i] = order[k]
		sorted[i].rank = i
	}
	return sorted, runsOn, nil
}

// runTime is job j's run time on count devices of typ packed on the fewest
// nodes: its remaining work (1 when unknown) over its speedup there; +Inf
// when the speedup is 0.
func runTime(r *scheduler.Round, j scheduler.RoundJob, typ accel.TypeKey, perNode, count int) (float64, error) {
	nodes := (count + max(perNode, 1) - 1) / max(perNode, 1)
	v, err := r.Speedup(j.Job.ID, typ, nodes, count)
	if err != nil {
		return 0, err
	}
	if !(v > 0) {
		return math.Inf(1), nil
	}
	work := j.Job.RemainingWork
	if !(work > 0) {
		work = 1
	}
	return work / v, nil
}

package easyscale

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"

	"github.com/goodsched/goodsched/goodput"
	"github.com/goodsched/goodsched/placement"
	"github.com/goodsched/goodsched/scheduler"
)

// Policy is EasyScale's inter-job policy behind scheduler.Policy, through
// the exported Round only. Jobs are taken in submission order (ties by
// ID). W-jobs (Job.Workers > 0) are planned by Plan: a running W-job keeps
// what it holds and may grow, a waiting one starts on one device, and a
// job whose Speedup implements goodput.GangSpeedup (RoundJob.Mixes) may
// grow onto other types unless Homogeneous. A worker's time on each type
// is its Speedup's WorkerSeconds when it has one (goodput.WorkerModel),
// else the inverse of its one-device speedup there; a gang's speedup is
// its GangSpeedup (its Speedup on one type) on the nodes a consolidated
// placement would span. Every other job runs as FIFO runs it: it keeps
// its devices, and a waiting one starts, before the W-jobs are planned,
// on its minimum count of the allowed type where its Speedup is highest
// when that many are free. Jobs never shrink and are never preempted.
//
// Policy is a plain value: safe for concurrent use.
type Policy struct {
	// Homogeneous keeps every job on one device type (EasyScale-homo).
	Homogeneous bool
	// MaxWaste is the cap on a proposal's load-imbalance waste; 0 means
	// DefaultMaxWaste.
	MaxWaste float64
}

var _ scheduler.Policy = Policy{}

// Validate checks MaxWaste (scheduler.New calls it).
func (p Policy) Validate() error {
	if math.IsNaN(p.MaxWaste) || math.IsInf(p.MaxWaste, 0) || p.MaxWaste < 0 {
		return fmt.Errorf("%w: MaxWaste = %v", ErrInvalid, p.MaxWaste)
	}
	return nil
}

// workerTimer is what goodput.WorkerModel offers: a worker's time per type.
type workerTimer interface {
	WorkerSeconds(typ string) float64
}

// Allocate implements scheduler.Policy.
func (p Policy) Allocate(ctx context.Context, r *scheduler.Round) ([]scheduler.Target, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	ix := r.Cluster()
	types := ix.Types()
	nt := len(types)
	free := make([]int, nt)
	perNode := make([]int, nt)
	for t, tk := range types {
		free[t], perNode[t], _ = ix.Usable(tk)
	}
	jobs := r.Jobs()
	order := make([]int, len(jobs))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int {
		ja, jb := jobs[a].Job, jobs[b].Job
		return cmp.Or(ja.Submitted.Compare(jb.Submitted), cmp.Compare(ja.ID, jb.ID))
	})
	held := func(j *scheduler.RoundJob) []int {
		c := make([]int, nt)
		if len(j.CurrentShares) > 0 {
			for _, s := range j.CurrentShares {
				if t, ok := ix.TypeIndex(s.Type); ok {
					c[t] += s.Count
				}
			}
		} else if len(j.Current) > 0 {
			if t, ok := ix.TypeIndex(j.CurrentType); ok {
				c[t] = len(j.Current)
			}
		}
		return c
	}
	for _, i := range order {
		for t, c := range held(&jobs[i]) {
			free[t] -= c
		}
	}
	for t := range free {
		free[t] = max(free[t], 0)
	}
	var out []scheduler.Target
	// Jobs without logical workers: FIFO.
	for _, i := range order {
		j := &jobs[i]
		if j.Job.Workers > 0 {
			continue
		}
		if len(j.Current) > 0 {
			out = append(out, scheduler.Target{Job: j.Job.ID, Type: j.CurrentType, Count: len(j.Current), Reason: scheduler.ReasonUnchanged})
			continue
		}
		best, bestS := -1, 0.0
		for _, tk := range j.Types {
			t, _ := ix.TypeIndex(tk)
			if free[t] < j.Min {
				continue
			}
			s, err := r.Speedup(j.Job.ID, tk, (j.Min+max(perNode[t], 1)-1)/max(perNode[t], 1), j.Min)
			if err != nil {
				return nil, err
			}
			if s > bestS {
				best, bestS = t, s
			}
		}
		if best >= 0 {
			free[best] -= j.Min
			out = append(out, scheduler.Target{Job: j.Job.ID, Type: types[best], Count: j.Min, Reason: scheduler.ReasonObjective, Note: "start"})
		}
	}
	// W-jobs: EasyScale.
	var wjobs []Job
	var ids []int
	var errs []error
	for _, i := range order {
		j := &jobs[i]
		if j.Job.Workers == 0 {
			continue
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		pj := Job{Workers: j.Job.Workers, Current: held(j), WorkerSeconds: make([]float64, nt), OneType: !j.Mixes, MaxDevices: j.Max}
		wt, hasWT := j.Job.Speedup.(workerTimer)
		for _, tk := range j.Types {
			t, _ := ix.TypeIndex(tk)
			if hasWT {
				pj.WorkerSeconds[t] = wt.WorkerSeconds(string(tk))
				continue
			}
			s, err := r.Speedup(j.Job.ID, tk, 1, 1)
			if err != nil {
				return nil, err
			}
			if s > 0 {
				pj.WorkerSeconds[t] = 1 / s
			}
		}
		id := j.Job.ID
		gs, mixes := j.Job.Speedup.(goodput.GangSpeedup)
		pj.Speedup = func(devices, perType []int) float64 {
			nodes, n, last := 0, 0, -1
			var gang []goodput.TypeShare
			for t, d := range devices {
				if d == 0 {
					continue
				}
				nodes += (d + max(perNode[t], 1) - 1) / max(perNode[t], 1)
				n++
				last = t
				gang = append(gang, goodput.TypeShare{Type: string(types[t]), Devices: d, Workers: perType[t]})
			}
			switch {
			case n == 1:
				s, err := r.Speedup(id, types[last], nodes, devices[last])
				if err != nil {
					errs = append(errs, err)
				}
				return s
			case mixes:
				return gs.GangSpeedup(gang, nodes)
			}
			return 0
		}
		wjobs = append(wjobs, pj)
		ids = append(ids, i)
	}
	grants, err := Plan(free, wjobs, Options{MaxWaste: p.MaxWaste, Homogeneous: p.Homogeneous})
	if err != nil {
		return nil, err
	}
	if len(errs) > 0 {
		return nil, errs[0]
	}
	for k, g := range grants {
		j := &jobs[ids[k]]
		tg := scheduler.Target{Job: j.Job.ID, Reason: scheduler.ReasonUnchanged, Note: g.Note}
		if g.Note != "" {
			tg.Reason = scheduler.ReasonObjective
		}
		for t, d := range g.Devices {
			if d == 0 {
				continue
			}
			tg.Count += d
			tg.Type = types[t]
			tg.Shares = append(tg.Shares, placement.Share{Type: types[t], Count: d, Workers: g.Workers[t]})
		}
		if tg.Count == 0 || tg.Count < j.Min {
			continue // EasyScale starts jobs on one device: a larger minimum waits
		}
		if len(tg.Shares) == 1 {
			tg.Shares = nil
		}
		out = append(out, tg)
	}
	return out, nil
}

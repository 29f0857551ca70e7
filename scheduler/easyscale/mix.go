package easyscale

import (
	"context"
	"fmt"

	"github.com/goodsched/goodsched/goodput"
	"github.com/goodsched/goodsched/placement"
	"github.com/goodsched/goodsched/scheduler"
)

// Mix wraps a policy that gives each job devices of one type (Pollux,
// FIFO, Gavel, ...) so that the W-jobs that may mix types
// (RoundJob.Mixes) also use the devices it leaves idle. After the wrapped
// policy's targets, every such job whose target changes what it runs on
// this round (it restarts anyway) proposes, as EasyScale's inter-job
// policy does, one increment: more devices of another type, at most
// doubling it, split by Split within the waste cap; increments are granted
// by decreasing incremental speedup while the idle devices last, and
// only when they raise the job's speedup by at least MinGain. A round with
// no such job gives exactly the wrapped policy's targets.
//
// Mix is safe for concurrent use when its Policy is.
type Mix struct {
	// Policy is the wrapped policy (required).
	Policy scheduler.Policy
	// MinGain is the least relative speedup gain an increment must bring;
	// 0 means 0.05.
	MinGain float64
}

var _ scheduler.Policy = Mix{}

// Validate checks the wrapped policy is set and MinGain.
func (m Mix) Validate() error {
	if m.Policy == nil {
		return fmt.Errorf("%w: Mix.Policy is nil", ErrInvalid)
	}
	if m.MinGain < 0 || m.MinGain != m.MinGain {
		return fmt.Errorf("%w: Mix.MinGain = %v", ErrInvalid, m.MinGain)
	}
	if v, ok := m.Policy.(interface{ Validate() error }); ok {
		return v.Validate()
	}
	return nil
}

// Allocate implements scheduler.Policy.
func (m Mix) Allocate(ctx context.Context, r *scheduler.Round) ([]scheduler.Target, error) {
	if err := m.Validate(); err != nil {
		return nil, err
	}
	tg, err := m.Policy.Allocate(ctx, r)
	if err != nil {
		return nil, err
	}
	minGain := m.MinGain
	if minGain == 0 {
		minGain = 0.05
	}
	ix := r.Cluster()
	types := ix.Types()
	nt := len(types)
	free := make([]int, nt)
	perNode := make([]int, nt)
	for t, tk := range types {
		free[t], perNode[t], _ = ix.Usable(tk)
	}
	inTargets := make(map[string]int, len(tg))
	for k, t := range tg {
		inTargets[t.Job] = k
		for _, s := range sharesOf(t) {
			if ti, ok := ix.TypeIndex(s.Type); ok {
				free[ti] -= s.Count
			}
		}
	}
	var cands []Job
	var at []int // positions in tg
	for _, j := range r.Jobs() {
		k, ok := inTargets[j.Job.ID]
		if !ok {
			if j.Pinned {
				for _, s := range currentShares(&j) {
					if ti, ok := ix.TypeIndex(s.Type); ok {
						free[ti] -= s.Count
					}
				}
			}
			continue
		}
		t := tg[k]
		gs, mixes := j.Job.Speedup.(goodput.GangSpeedup)
		if !j.Mixes || !mixes || t.Count == 0 || j.Pinned || sameAsCurrent(&j, t) {
			continue
		}
		pj := Job{Workers: j.Job.Workers, Current: make([]int, nt), WorkerSeconds: make([]float64, nt), MaxDevices: j.Max}
		for _, s := range sharesOf(t) {
			ti, _ := ix.TypeIndex(s.Type)
			pj.Current[ti] = s.Count
		}
		wt, _ := j.Job.Speedup.(workerTimer)
		for _, tk := range j.Types {
			ti, _ := ix.TypeIndex(tk)
			if wt != nil {
				pj.WorkerSeconds[ti] = wt.WorkerSeconds(string(tk))
			} else if s := gs.GangSpeedup([]goodput.TypeShare{{Type: string(tk), Devices: 1, Workers: j.Job.Workers}}, 1); s > 0 {
				pj.WorkerSeconds[ti] = 1 / s
			}
		}
		pj.Speedup = func(devices, perType []int) float64 {
			nodes := 0
			var gang []goodput.TypeShare
			for t, d := range devices {
				if d > 0 {
					nodes += (d + max(perNode[t], 1) - 1) / max(perNode[t], 1)
					gang = append(gang, goodput.TypeShare{Type: string(types[t]), Devices: d, Workers: perType[t]})
				}
			}
			return gs.GangSpeedup(gang, nodes)
		}
		cands = append(cands, pj)
		at = append(at, k)
	}
	if len(cands) == 0 {
		return tg, nil
	}
	for t := range free {
		free[t] = max(free[t], 0)
	}
	grants, err := Plan(free, cands, Options{})
	if err != nil {
		return nil, err
	}
	for c, g := range grants {
		if g.Note == "" {
			continue
		}
		before, after := rate(&cands[c], cands[c].Current), rate(&cands[c], g.Devices)
		if !(after >= before*(1+minGain)) {
			continue
		}
		t := &tg[at[c]]
		t.Count, t.Shares = 0, nil
		for ti, d := range g.Devices {
			if d > 0 {
				t.Count += d
				t.Type = types[ti]
				t.Shares = append(t.Shares, placement.Share{Type: types[ti], Count: d, Workers: g.Workers[ti]})
			}
		}
		if len(t.Shares) == 1 {
			t.Shares = nil
		}
		t.Note += fmt.Sprintf("; mixed with idle devices: speedup %.2f→%.2f", before, after)
	}
	return tg, nil
}

// sharesOf returns target t's devices per type (one share without
// Shares; workers are not used here).
func sharesOf(t scheduler.Target) []placement.Share {
	if t.Count == 0 {
		return nil
	}
	if len(t.Shares) > 0 {
		return t.Shares
	}
	return []placement.Share{{Type: t.Type, Count: t.Count}}
}

// currentShares returns what job j holds per type.
func currentShares(j *scheduler.RoundJob) []placement.Share {
	if len(j.CurrentShares) > 0 {
		return j.CurrentShares
	}
	if len(j.Current) == 0 {
		return nil
	}
	return []placement.Share{{Type: j.CurrentType, Count: len(j.Current)}}
}

// sameAsCurrent reports whether target t is what job j runs on now.
func sameAsCurrent(j *scheduler.RoundJob, t scheduler.Target) bool {
	cur := currentShares(j)
	want := sharesOf(t)
	if len(cur) != len(want) {
		return false
	}
	for _, c := range cur {
		found := false
		for _, w := range want {
			if w.Type == c.Type && w.Count == c.Count {
				found = true
			}
		}
		if !found {
			return false
		}
	}
	return true
}

package sim

import (
	"fmt"
	"math"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/goodsched/goodsched/goodput"
	"github.com/goodsched/goodsched/scheduler"
)

// advance moves every running job forward by dt seconds of virtual time,
// as the Pollux simulator does: first the restart stall, then progress at
// the ground-truth rate gain / T_iter, epoch by epoch, until the round
// ends or the job reaches its target. Jobs advance independently (each
// touches only itself, its learner and the shared, concurrency-safe plan
// cache), so with many running they advance in parallel, which changes
// nothing but the wall time: most of it goes to refitting their models.
func (e *engine) advance(dt float64) {
	slow := e.interfered()
	var run []*job
	for _, j := range e.live {
		if !j.done && len(j.devs) > 0 {
			run = append(run, j)
		}
	}
	workers := min(runtime.GOMAXPROCS(0), len(run)/parallelJobs)
	if workers <= 1 {
		for _, j := range run {
			e.advanceJob(j, dt, slow)
		}
	} else {
		var next atomic.Int64
		var wg sync.WaitGroup
		for range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := next.Add(1) - 1; i < int64(len(run)); i = next.Add(1) - 1 {
					e.advanceJob(run[i], dt, slow)
				}
			}()
		}
		wg.Wait()
	}
	for _, j := range run {
		if j.done {
			e.changed, e.moved = true, true
			e.finished++
		}
	}
}

// parallelJobs is how many running jobs each extra goroutine of advance
// must have to itself (fewer are not worth the hand-off).
const parallelJobs = 8

// advanceJob advances running job j by dt seconds (slow: the interfered
// jobs, or nil); it writes only j and its learner.
func (e *engine) advanceJob(j *job, dt float64, slow []bool) {
	r := float64(len(j.devs))
	rem := dt
	d := min(j.stall, rem)
	j.stall -= d
	j.attained += d * r
	rem -= d
	slowdown := e.gangSlowdown(j)
	for rem > 0 && !j.done {
		rate := e.rate(j) / slowdown
		if e.cfg.Tiers != nil {
			rate *= j.keep
		}
		if slow != nil && slow[j.idx] {
			rate *= 1 - e.cfg.InterferenceSlowdown
		}
		next := j.app.EpochProgress(j.epoch + 1)
		if !(rate > 0) {
			j.attained += rem * r
			rem = 0
			break
		}
		if j.progress+rate*rem < next {
			j.progress += rate * rem
			j.attained += rem * r
			rem = 0
			break
		}
		delta := (next - j.progress) / rate
		delta = min(max(delta, 0), rem)
		j.progress = next
		j.epoch++
		j.ckptProg, j.ckptEp = j.progress, j.epoch
		j.attained += delta * r
		rem -= delta
		j.rateValid = false
		if j.epoch >= j.app.MaxEpochs {
			j.done = true
			j.finish = e.now + (dt - rem)
			j.release()
			break
		}
		e.rebatch(j)
	}
	if !j.done {
		e.rebatch(j)
	}
}

// rate returns the job's progress per second on its current allocation,
// batch and epoch, and reports the measurement to the job's model the
// first time a configuration is seen.
func (e *engine) rate(j *job) float64 {
	key := [3]int{j.local, j.accum, j.epoch}
	if j.rateValid && key == j.stepKey {
		return j.cachedRate
	}
	if j.w > 0 {
		j.cachedRate = e.rateW(j)
		j.rateValid, j.stepKey = true, key
		return j.cachedRate
	}
	if e.noMemo || !j.stepMemo || j.stepGen != j.gen || j.stepLocal != j.local {
		j.stepT, j.syncT, j.stepOK = j.app.StepTime(j.typ, j.counts, float64(j.local))
		j.stepMemo, j.stepGen, j.stepLocal = true, j.gen, j.local
	}
	step, sync, ok := j.stepT, j.syncT, j.stepOK
	if !ok || !(step > 0) {
		j.rateValid, j.stepKey, j.cachedRate = true, key, 0
		return 0
	}
	sync = min(sync, step)
	iter := step + float64(j.accum)*(step-sync)
	batch := float64(j.local * len(j.devs) * (j.accum + 1))
	gain := j.app.Gain(batch, j.epoch)
	if e.cfg.Kind == scheduler.Adaptive && j.app.FixedBatch == 0 {
		sqr, v := j.app.GradStats(batch, j.epoch)
		e.report(j, step, sync)
		e.reportGrad(j, goodput.GradStats{Sqr: sqr, Var: v})
	}
	j.cachedRate = gain / iter
	j.rateValid, j.stepKey = true, key
	return j.cachedRate
}

// interfered marks the jobs slowed by interference: distributed jobs on a
// node that hosts more than one distributed job.
func (e *engine) interfered() []bool {
	if e.cfg.InterferenceSlowdown == 0 {
		return nil
	}
	slow := make([]bool, len(e.jobs))
	dist := make([]int, len(e.cluster.Nodes))
	for _, j := range e.live {
		if !j.done && len(j.nodes) > 1 {
			for _, n := range j.nodes {
				dist[n]++
			}
		}
	}
	for _, j := range e.live {
		if j.done || len(j.nodes) < 2 {
			continue
		}
		for _, n := range j.nodes {
			if dist[n] > 1 {
				slow[j.idx] = true
			}
		}
	}
	return slow
}

// faults fails and repairs nodes at round boundaries. A job on a failed
// node loses the work since its last checkpoint and waits for the next
// round; the node's devices are unhealthy until it is repaired.
func (e *engine) faults() {
	if e.rng == nil {
		return
	}
	mtbf, repair := e.cfg.Faults.MTBF.Seconds(), e.cfg.Faults.Repair.Seconds()
	for i := range e.cluster.Nodes {
		if e.down[i] > 0 && e.down[i] <= e.now {
			e.changed = true
			e.down[i] = 0
			e.setHealth(i, true)
		}
		if e.down[i] == 0 && e.nextFail[i] <= e.now {
			e.changed, e.moved = true, true
			e.down[i] = e.now + repair
			e.nextFail[i] = e.down[i] + e.rng.ExpFloat64()*mtbf
			e.setHealth(i, false)
			for _, j := range e.live {
				if j.done || !slices.Contains(j.nodes, i) {
					continue
				}
				j.failures++
				j.progress, j.epoch = j.ckptProg, j.ckptEp
				j.release()
				j.typ = ""
				j.local, j.accum, j.batch, j.stall = 0, 0, 0, 0
			}
		}
	}
}

func (e *engine) setHealth(node int, ok bool) {
	for k := range e.cluster.Nodes[node].Devices {
		d := &e.cluster.Nodes[node].Devices[k]
		if d.Healthy != ok {
			if ok {
				e.healthy++
			} else {
				e.healthy--
			}
		}
		d.Healthy = ok
	}
}

// checkInvariants verifies the bookkeeping after a round: every job is
// waiting, running or completed; no device serves two jobs; running jobs
// hold healthy devices.
func (e *engine) checkInvariants() error {
	// Only held devices are visited: a device counts as taken in this
	// check when its ownedAt stamp is this check's number.
	if e.owner == nil {
		e.owner = make([]int, len(e.devIdx))
		e.ownedAt = make([]int, len(e.devIdx))
	}
	e.checks++
	for _, j := range e.live {
		ji := j.idx
		if j.done && len(j.devs) > 0 {
			return fmt.Errorf("%w: completed job %s still holds devices", ErrLostJob, j.spec.Name)
		}
		if j.done && (j.finish < j.submit || math.IsNaN(j.finish)) {
			return fmt.Errorf("%w: job %s completed at %v before its arrival", ErrLostJob, j.spec.Name, j.finish)
		}
		if !j.done && j.epoch >= j.app.MaxEpochs {
			return fmt.Errorf("%w: job %s reached its target but is not completed", ErrLostJob, j.spec.Name)
		}
		if len(j.devIdx) != len(j.devs) {
			return fmt.Errorf("%w: job %s: device index out of date", ErrLostJob, j.spec.Name)
		}
		for k, d := range j.devs {
			i := j.devIdx[k]
			if i < 0 {
				return fmt.Errorf("%w: job %s runs on unknown device %s", ErrLostJob, j.spec.Name, d)
			}
			if e.ownedAt[i] == e.checks {
				return fmt.Errorf("%w: device %s serves %s and %s", ErrLostJob, d, e.jobs[e.owner[i]].spec.Name, j.spec.Name)
			}
			e.owner[i], e.ownedAt[i] = ji, e.checks
			if at := e.devAt[i]; !e.cluster.Nodes[at[0]].Devices[at[1]].Healthy {
				return fmt.Errorf("%w: job %s runs on unhealthy device %s", ErrLostJob, j.spec.Name, d)
			}
		}
	}
	return nil
}

package sim

import (
	"fmt"
	"maps"
	"slices"

	"github.com/goodsched/goodsched/accel"
	"github.com/goodsched/goodsched/goodput"
	"github.com/goodsched/goodsched/scheduler"
)

// WorkerShare is the part of a W-job's gang on one device type, as the
// simulator runs it: Devices devices of Type, the busiest of which hosts
// Busiest logical workers.
type WorkerShare struct {
	Type    accel.TypeKey
	Devices int
	Busiest int
}

// WorkerPass is the measured time of one pass of a W-job's worker on one
// type of its gang: the pass's batch, and the step and sync time of the
// gang's placement at that batch on that type (what the job reports to
// its goodput.Estimator for the type).
type WorkerPass struct {
	Type       accel.TypeKey
	Local      int
	Passes     int // passes per worker
	Step, Sync float64
}

// WorkerPasses returns how a worker with local samples per step runs on
// typ: in passes of at most the type's largest measured per-device batch.
func (a *Application) WorkerPasses(typ accel.TypeKey, local int) (pass, passes int, ok bool) {
	_, hi, ok := a.LocalRange(typ)
	if !ok || local < 1 {
		return 0, 0, false
	}
	passes = 1
	if hi > 0 && local > hi {
		passes = (local + hi - 1) / hi
	}
	return (local + passes - 1) / passes, passes, true
}

// WorkerStepTime is the ground-truth time of one step of a job whose
// logical workers, local samples each, run on shares over the nodes of
// counts (devices per node, every type together): a device of each type
// runs its busiest device's workers' passes one after another, as
// gradient accumulation, measured on that type at the gang's placement:
// Busiest·passes − 1 passes of (step − sync) and one of step, plus
// overhead × (Busiest − 1) × passes × (step − sync) lost to switching
// between workers; the slowest type sets the step. It also returns each
// type's pass measurement. ok is false when a type has no measurements.
func (a *Application) WorkerStepTime(shares []WorkerShare, counts []int, local int, overhead float64) (step float64, passes []WorkerPass, ok bool) {
	if len(shares) == 0 {
		return 0, nil, false
	}
	for _, s := range shares {
		pass, n, ok := a.WorkerPasses(s.Type, local)
		if !ok || s.Busiest < 1 {
			return 0, nil, false
		}
		st, sy, ok := a.StepTime(s.Type, counts, float64(pass))
		if !ok || !(st > 0) {
			return 0, nil, false
		}
		sy = min(sy, st)
		grad := st - sy
		t := st + float64(s.Busiest*n-1)*grad + overhead*float64((s.Busiest-1)*n)*grad
		step = max(step, t)
		passes = append(passes, WorkerPass{Type: s.Type, Local: pass, Passes: n, Step: st, Sync: sy})
	}
	return step, passes, true
}

// workerModel builds a W-job's throughput model from its Estimator's
// per-type models (seeded with one-device profiles of every type, then
// fitted to what the job measured), with the batch limits of each type.
func workerModel(est *goodput.Estimator, app *Application, types []accel.TypeKey, workers, local int) (*goodput.WorkerModel, error) {
	models := make(map[string]goodput.Model, len(types))
	for _, t := range types {
		m, ok := est.Model(string(t))
		if !ok {
			continue
		}
		if _, hi, ok := app.LocalRange(t); ok {
			m.MaxLocal = hi
		}
		models[string(t)] = m
	}
	return goodput.NewWorkerModel(goodput.WorkerConfig{Workers: workers, Local: local, Models: models})
}

// checkWorkers checks, every round, that a W-job's decision keeps its W:
// its devices host exactly W workers, at least one each (ErrLostJob: a
// scheduler bug).
func (e *engine) checkWorkers(j *job, d scheduler.Decision) error {
	w := j.spec.Workers
	if w == 0 || d.To == 0 {
		return nil
	}
	a := d.Assignment
	if len(a.Workers) != len(a.Devices) {
		return fmt.Errorf("%w: round at %v: job %s: %d worker counts for %d devices", ErrLostJob, dur(e.now), j.spec.Name, len(a.Workers), len(a.Devices))
	}
	sum := 0
	for _, c := range a.Workers {
		if c < 1 {
			return fmt.Errorf("%w: round at %v: job %s: a device hosts %d workers", ErrLostJob, dur(e.now), j.spec.Name, c)
		}
		sum += c
	}
	if sum != w {
		return fmt.Errorf("%w: round at %v: job %s: W changed from %d to %d", ErrLostJob, dur(e.now), j.spec.Name, w, sum)
	}
	return nil
}

// sameGang reports whether a W-job keeps running as it is: the same
// devices hosting the same workers (in any order).
func (e *engine) sameGang(j *job, devs []string, workers []int) bool {
	if len(devs) != len(j.devs) {
		return false
	}
	if len(devs) == 0 {
		return true
	}
	pairs := func(ds []string, ws []int) []string {
		out := make([]string, len(ds))
		for i, d := range ds {
			c := 0
			if i < len(ws) {
				c = ws[i]
			}
			out[i] = fmt.Sprintf("%s\x00%d", d, c)
		}
		slices.Sort(out)
		return out
	}
	if !slices.Equal(pairs(devs, workers), pairs(j.devs, j.workers)) {
		return false
	}
	j.devs, j.workers = slices.Clone(devs), slices.Clone(workers)
	e.indexDevices(j)
	return true
}

// describeW presents a W-job to the policy: elastic between 1 and W
// devices (the application's cap included), W fixed, and its throughput
// model fitted from what it measured on each type.
func (e *engine) describeW(j *job, sj *scheduler.Job) {
	maxRep := e.maxReplicas(j)
	sj.Kind, sj.Workers = scheduler.Elastic, j.w
	sj.MinReplicas, sj.MaxReplicas, sj.Requested = 1, maxRep, 1
	l := e.learnerOf(j)
	if l == nil {
		return
	}
	if j.wmodel == nil || j.wmodelVer != l.version {
		m, err := workerModel(l.est, j.app, e.jobTypes(j), j.w, j.wlocal)
		if err != nil {
			return
		}
		j.wmodel, j.wmodelVer = m, l.version
	}
	sj.Speedup = j.wmodel
}

// rateW is a running W-job's progress per second on its gang, from the
// ground truth (WorkerStepTime); each type's pass is reported to the
// job's learner the first time that (type, shape, batch) is seen.
func (e *engine) rateW(j *job) float64 {
	if len(j.devs) == 0 {
		return 0
	}
	busiest := map[accel.TypeKey]int{}
	count := map[accel.TypeKey]int{}
	for i, d := range j.devs {
		_, t := e.device(d)
		count[t]++
		c := 1
		if i < len(j.workers) {
			c = j.workers[i]
		}
		busiest[t] = max(busiest[t], c)
	}
	var shares []WorkerShare
	for _, t := range slices.Sorted(maps.Keys(count)) {
		shares = append(shares, WorkerShare{Type: t, Devices: count[t], Busiest: busiest[t]})
	}
	step, passes, ok := j.app.WorkerStepTime(shares, j.counts, j.wlocal, goodput.DefaultSliceOverhead)
	if !ok || !(step > 0) {
		return 0
	}
	if l := e.learnerOf(j); l != nil {
		nodes, reps := len(j.counts), len(j.devs)
		for _, p := range passes {
			ti := slices.Index(e.types, p.Type)
			k := [4]int{ti, nodes, reps, p.Local}
			if l.seen[k] {
				continue
			}
			l.seen[k] = true
			if l.est.Observe(string(p.Type), goodput.ObservationFromStep(nodes, reps, p.Local, p.Step, p.Sync)) == nil {
				l.version++
				l.reports++
			}
		}
	}
	return j.app.Gain(float64(j.w*j.wlocal), j.epoch) / step
}

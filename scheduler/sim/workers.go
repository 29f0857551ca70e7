package sim

import (
	"github.com/goodsched/goodsched/accel"
	"github.com/goodsched/goodsched/goodput"
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

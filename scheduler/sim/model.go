package sim

import (
	"cmp"
	"math"
	"slices"

	"github.com/goodsched/goodsched/accel"
	"github.com/goodsched/goodsched/goodput"
)

// refitTolerance is the relative error between a new measurement and the
// current fit above which a job's throughput model is refitted. New
// (nodes, replicas) shapes always trigger a refit.
const refitTolerance = 0.05

// typeModel is what one job has learnt about one accelerator type from its
// own simulated measurements, exactly what a real job's data loader would
// report: step and sync times per configuration, and gradient statistics.
type typeModel struct {
	limits goodput.Limits
	obs    []goodput.Observation
	keys   map[[3]int]bool
	shapes map[[2]int]bool
	params *goodput.Params
	dirty  bool
	fits   int
}

func newTypeModel(l goodput.Limits) *typeModel {
	return &typeModel{limits: l, keys: map[[3]int]bool{}, shapes: map[[2]int]bool{}}
}

// observe records one configuration's step and sync time (seconds). It
// reports whether the observation was new.
func (m *typeModel) observe(nodes, replicas, local int, step, sync float64) bool {
	k := [3]int{nodes, replicas, local}
	if m.keys[k] {
		return false
	}
	m.keys[k] = true
	o := goodput.ObservationFromStep(nodes, replicas, local, step, sync)
	if o.Validate() != nil {
		return false
	}
	m.obs = append(m.obs, o)
	newShape := !m.shapes[[2]int{nodes, replicas}]
	m.shapes[[2]int{nodes, replicas}] = true
	if newShape || m.params == nil {
		m.dirty = true
		return true
	}
	pred := m.params.StepSeconds(nodes, replicas, local, 0)
	if !(pred > 0) || math.Abs(pred-step)/step > refitTolerance {
		m.dirty = true
	}
	return true
}

// refit fits the throughput parameters if the observations changed
// materially since the last fit, warm-starting from the previous fit.
func (m *typeModel) refit() {
	if !m.dirty || len(m.obs) == 0 {
		return
	}
	m.dirty = false
	opts := goodput.FitOptions{Init: m.params}
	p, _, err := goodput.Fit(m.obs, opts)
	if err != nil {
		return // keep the previous fit (or none)
	}
	m.params = &p
	m.fits++
}

// snapshot is an immutable view of a job's models for one round: the
// goodput.Speedup (and goodput.BatchPlanner) handed to the policy. Speedup
// is relative to one device of the job's reference type with its best batch.
// It is safe for concurrent use.
type snapshot struct {
	models  map[accel.TypeKey]goodput.Model // fitted types
	ratio   map[accel.TypeKey]float64       // 1-device throughput ratio to ref, for unfitted types
	ref     accel.TypeKey
	blind   bool // one model for all types
	base    float64
	maxRep  int
	allowed map[accel.TypeKey]bool
}

var (
	_ goodput.Speedup      = (*snapshot)(nil)
	_ goodput.BatchPlanner = (*snapshot)(nil)
)

func (s *snapshot) model(typ string) (goodput.Model, float64, bool) {
	t := accel.TypeKey(typ)
	if s.blind {
		t = s.ref
	}
	if s.allowed != nil && !s.allowed[accel.TypeKey(typ)] {
		return goodput.Model{}, 0, false
	}
	if m, ok := s.models[t]; ok {
		return m, 1, true
	}
	if r, ok := s.ratio[t]; ok {
		if m, ok := s.models[s.ref]; ok {
			return m, r, true
		}
	}
	return goodput.Model{}, 0, false
}

// Speedup implements goodput.Speedup.
func (s *snapshot) Speedup(typ string, nodes, replicas int) float64 {
	if nodes < 1 || replicas < nodes || (s.maxRep > 0 && replicas > s.maxRep) {
		return 0
	}
	m, scale, ok := s.model(typ)
	if !ok || !(s.base > 0) {
		if s.allowed != nil && !s.allowed[accel.TypeKey(typ)] {
			return 0
		}
		return float64(replicas) // nothing measured yet: assume linear, as Pollux does
	}
	v := m.Optimize(nodes, replicas).Goodput * scale / s.base
	if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
		return 0
	}
	return v
}

// BatchPlan implements goodput.BatchPlanner.
func (s *snapshot) BatchPlan(typ string, nodes, replicas int) goodput.BatchPlan {
	m, _, ok := s.model(typ)
	if !ok || nodes < 1 || replicas < nodes {
		return goodput.BatchPlan{}
	}
	return m.Optimize(nodes, replicas)
}

// linearSpeedup is the speedup of a job nothing is known about.
type linearSpeedup struct{ maxRep int }

func (l linearSpeedup) Speedup(_ string, nodes, replicas int) float64 {
	if nodes < 1 || replicas < nodes || (l.maxRep > 0 && replicas > l.maxRep) {
		return 0
	}
	return float64(replicas)
}

// fixedBatchSpeedup is the Optimus+Oracle view of a job that trains at a
// fixed total batch: T(1)/T(replicas) from the ground-truth step times on
// the canonical placement (nodes filled in order), as the Pollux
// simulator's Optimus baseline uses. It is immutable.
type fixedBatchSpeedup struct {
	app    *Application
	batch  int
	maxRep int
	types  []accel.TypeKey
	perNod map[accel.TypeKey]int
	t1     float64
	ref    accel.TypeKey
	cache  map[[2]int]float64 // (type index, replicas) -> step seconds, filled at construction
}

func newFixedBatchSpeedup(app *Application, batch, maxRep int, types []accel.TypeKey, perNode map[accel.TypeKey]int) *fixedBatchSpeedup {
	f := &fixedBatchSpeedup{app: app, batch: batch, maxRep: maxRep, types: types, perNod: perNode, cache: map[[2]int]float64{}}
	f.ref = types[0]
	for ti, t := range types {
		for r := 1; r <= maxRep; r++ {
			f.cache[[2]int{ti, r}] = oracleIterSeconds(app, t, batch, r, perNode[t])
		}
	}
	f.t1 = f.cache[[2]int{0, 1}]
	for ti := range types {
		if v := f.cache[[2]int{ti, 1}]; v > 0 && (f.t1 <= 0 || v < f.t1) {
			f.t1, f.ref = v, types[ti]
		}
	}
	return f
}

// Speedup implements goodput.Speedup.
func (f *fixedBatchSpeedup) Speedup(typ string, nodes, replicas int) float64 {
	if nodes < 1 || replicas < nodes || replicas > f.maxRep {
		return 0
	}
	ti := slices.Index(f.types, accel.TypeKey(typ))
	if ti < 0 {
		return 0
	}
	t := f.cache[[2]int{ti, replicas}]
	if !(t > 0) || !(f.t1 > 0) {
		return 0
	}
	return f.t1 / t
}

// oracleIterSeconds is the ground-truth time of one optimizer step at
// total batch `batch` on `replicas` devices of typ placed on nodes filled in
// order, with the Optimus oracle's batch split (at least one accumulation
// step on one device).
func oracleIterSeconds(app *Application, typ accel.TypeKey, batch, replicas, perNode int) float64 {
	if perNode < 1 {
		perNode = 1
	}
	lo, hi, ok := app.LocalRange(typ)
	if !ok {
		return 0
	}
	local, accum := splitBatch(batch, replicas, lo, hi, app.MaxBatch, true)
	var counts []int
	for left := replicas; left > 0; left -= perNode {
		counts = append(counts, min(left, perNode))
	}
	step, sync, ok := app.StepTime(typ, counts, float64(local))
	if !ok {
		return 0
	}
	return step + float64(accum)*(step-sync)
}

// splitBatch splits a fixed total batch over replicas as the Pollux
// simulator does for jobs with a target batch size: per-device batch
// ceil(batch/replicas), split into passes of at most maxLocal, at least
// two passes on a single device whose batch exceeds the initial one
// (forceAccum), and capped so that the total stays within maxBatch.
func splitBatch(batch, replicas, minLocal, maxLocal, maxBatch int, forceAccum bool) (local, accum int) {
	const eps = 1e-8
	l := int(math.Ceil(float64(batch)/float64(replicas) - eps))
	accum = max(int(math.Ceil(float64(l)/float64(maxLocal)-eps))-1, 0)
	if replicas == 1 && forceAccum {
		accum = max(1, accum)
	}
	local = int(math.Ceil(float64(l)/float64(accum+1) - eps))
	if c := replicas * (accum + 1); maxBatch > 0 && local > maxBatch/c {
		local = maxBatch / c
	}
	return max(local, 1), accum
}

func cmpTypeKey(a, b accel.TypeKey) int { return cmp.Compare(a, b) }

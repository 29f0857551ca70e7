package sim

import (
	"cmp"
	"math"
	"slices"

	"github.com/goodsched/goodsched/accel"
	"github.com/goodsched/goodsched/goodput"
)

// refitTolerance is the relative error between a new step-time
// measurement and the job's current model below which the measurement is
// not reported: the model already knows it, and a refit would change
// nothing. New (nodes, replicas) shapes are always reported.
const refitTolerance = 0.05

// gradTolerance is the relative change in the gradient noise scale below
// which new gradient statistics are not reported.
const gradTolerance = 0.01

// learner is what an adaptive job has learnt from its own simulated
// measurements, exactly what a real job's data loader would report: step
// and sync times per configuration and gradient statistics, fed to its
// goodput.Estimator. The curve handed to the policy is rebuilt only when
// the estimator was told something new.
type learner struct {
	est      *goodput.Estimator
	seen     map[[4]int]bool // (type index, nodes, replicas, local)
	shapes   map[[3]int]bool // (type index, nodes, replicas)
	grad     goodput.GradStats
	version  int // bumped on every report
	curve    *goodput.Curve
	curveVer int
	curveMax int
	reports  int
}

// blindSpeedup hides the accelerator type from a type-agnostic curve: the
// heterogeneity-blind view of a job. It is immutable.
type blindSpeedup struct{ c *goodput.Curve }

var (
	_ goodput.Speedup      = blindSpeedup{}
	_ goodput.BatchPlanner = blindSpeedup{}
	_ goodput.NodeBounder  = blindSpeedup{}
	_ goodput.NodeBounder  = linearSpeedup{}
)

func (b blindSpeedup) Speedup(_ string, nodes, replicas int) float64 {
	return b.c.Speedup(goodput.AnyType, nodes, replicas)
}

func (b blindSpeedup) BatchPlan(_ string, nodes, replicas int) goodput.BatchPlan {
	return b.c.BatchPlan(goodput.AnyType, nodes, replicas)
}

// NodeBound is the curve's: hiding the type changes no node count.
func (b blindSpeedup) NodeBound() int { return b.c.NodeBound() }

// linearSpeedup is the speedup of a job that does not adapt and about
// which nothing is modelled.
type linearSpeedup struct{ maxRep int }

func (l linearSpeedup) Speedup(_ string, nodes, replicas int) float64 {
	if nodes < 1 || replicas < nodes || (l.maxRep > 0 && replicas > l.maxRep) {
		return 0
	}
	return float64(replicas)
}

// NodeBound is 1: the speedup does not depend on the node count.
func (l linearSpeedup) NodeBound() int { return 1 }

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
	local, accum := SplitBatch(batch, replicas, lo, hi, app.MaxBatch, true)
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

// SplitBatch splits a fixed total batch over replicas as the Pollux
// simulator does for jobs with a target batch size: per-device batch
// ceil(batch/replicas), split into passes of at most maxLocal, at least
// two passes on a single device whose batch exceeds the initial one
// (forceAccum), and capped so that the total stays within maxBatch.
func SplitBatch(batch, replicas, minLocal, maxLocal, maxBatch int, forceAccum bool) (local, accum int) {
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

package sim

import (
	"math"
	"testing"

	"github.com/goodsched/goodsched/accel"
	"github.com/goodsched/goodsched/goodput"
)

// With one worker per device, a W-job's step is the rigid job's step at
// the same per-device batch (SplitBatch's passes as accumulation); each
// extra worker on a device adds its passes of compute and the switching
// overhead.
func TestWorkerStepTime(t *testing.T) {
	apps := polluxApps(t)
	for _, name := range []string{"cifar10", "imagenet", "bert"} {
		app := apps[name]
		t4 := app.DefaultType()
		lo, hi, _ := app.LocalRange(t4)
		for _, c := range []struct {
			counts []int
			batch  int
		}{{[]int{1}, app.InitBatch}, {[]int{4}, 4 * app.InitBatch}, {[]int{4, 4}, 8 * hi}, {[]int{2, 4, 1}, 3 * app.InitBatch}} {
			r := 0
			for _, x := range c.counts {
				r += x
			}
			local, accum := SplitBatch(c.batch, r, lo, hi, max(app.MaxBatch, c.batch), false)
			wl := (c.batch + r - 1) / r
			step, passes, ok := app.WorkerStepTime([]WorkerShare{{Type: t4, Devices: r, Busiest: 1}}, c.counts, wl, 0.003)
			st, sy, ok2 := app.StepTime(t4, c.counts, float64(local))
			if !ok || !ok2 || len(passes) != 1 || passes[0].Local != local || passes[0].Passes != accum+1 {
				t.Fatalf("%s %v: ok %v %v, passes %+v, want local %d accum %d", name, c.counts, ok, ok2, passes, local, accum)
			}
			if want := st + float64(accum)*(st-sy); math.Abs(step-want) > 1e-12 {
				t.Fatalf("%s %v: step %v, want rigid %v", name, c.counts, step, want)
			}
			// Three workers on each device.
			three, _, _ := app.WorkerStepTime([]WorkerShare{{Type: t4, Devices: r, Busiest: 3}}, c.counts, wl, 0.003)
			n := float64(accum + 1)
			if want := st + (3*n-1)*(st-sy) + 0.003*2*n*(st-sy); math.Abs(three-want) > 1e-12 {
				t.Fatalf("%s %v: 3 workers per device: %v, want %v", name, c.counts, three, want)
			}
		}
	}
	if _, _, ok := apps["cifar10"].WorkerStepTime([]WorkerShare{{Type: "a100", Devices: 1, Busiest: 1}}, []int{1}, 32, 0); ok {
		t.Fatal("a type without measurements must not be timed")
	}
}

// The policy's view of a W-job, built from its Estimator's per-type
// models, predicts the ground truth of a one-device gang (pure
// accumulation, no synchronisation) within 10% (7% here).
func TestWorkerModelFromEstimator(t *testing.T) {
	app := polluxApps(t)["cifar10"]
	t4 := app.DefaultType()
	lo, hi, _ := app.LocalRange(t4)
	var obs []goodput.Observation
	for _, l := range []int{lo, (lo + hi) / 2, hi} {
		st, sy, _ := app.StepTime(t4, []int{1}, float64(l))
		obs = append(obs, goodput.ObservationFromStep(1, 1, l, st, sy))
	}
	est, err := goodput.NewEstimator(goodput.EstimatorConfig{
		Limits:   goodput.Limits{InitBatch: app.InitBatch, MaxBatch: app.MaxBatch, MinLocal: lo, MaxLocal: hi, Accumulation: true},
		Profiles: map[string][]goodput.Observation{string(t4): obs},
	})
	if err != nil {
		t.Fatal(err)
	}
	wm, err := workerModel(est, app, []accel.TypeKey{t4}, 8, 64)
	if err != nil {
		t.Fatal(err)
	}
	// All 8 workers on one device: 8 passes of 64, the fitted line through
	// the three seed points against the measured profile.
	truth, _, _ := app.WorkerStepTime([]WorkerShare{{Type: t4, Devices: 1, Busiest: 8}}, []int{1}, 64, goodput.DefaultSliceOverhead)
	pred := wm.StepSeconds([]goodput.TypeShare{{Type: string(t4), Devices: 1, Workers: 8}}, 1)
	if math.Abs(pred-truth)/truth > 0.10 {
		t.Fatalf("8 workers on 1 device: predicted %v s, measured %v s", pred, truth)
	}
}

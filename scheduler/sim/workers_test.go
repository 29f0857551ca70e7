package sim

import (
	"context"
	"errors"
	"fmt"
	"math"
	"testing"
	"testing/fstest"
	"time"

	"github.com/goodsched/goodsched/accel"
	"github.com/goodsched/goodsched/goodput"
	"github.com/goodsched/goodsched/placement"
	"github.com/goodsched/goodsched/scheduler"
	"github.com/goodsched/goodsched/scheduler/easyscale"
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

// twoTypeFS is toyFS with an A100 profile twice as fast as the T4 one.
func twoTypeFS() fstest.MapFS {
	m := toyFS()
	m["p/toy/placements-dgx-ext.csv"] = &fstest.MapFile{Data: []byte(`placement,local_bsz,step_time,sync_time
1,5,0.25,0
1,10,0.5,0
1,20,1.0,0
2,5,0.5,0.25
2,10,0.75,0.25
11,5,0.6,0.4
11,10,0.85,0.4
`)}
	m["p/toy/scalability-dgx-ext.csv"] = &fstest.MapFile{Data: []byte(`num_nodes,num_replicas,local_bsz,step_time,sync_time
4,4,5,1.0,0.5
4,8,5,1.5,1.0
`)}
	return m
}

// W-jobs run to completion under EasyScale's policies on two types, and
// the simulator's per-round check of W holds.
func TestWorkersRun(t *testing.T) {
	apps, err := LoadProfiles(ProfileOptions{}, ProfileSource{FS: twoTypeFS(), Dir: "p"})
	if err != nil {
		t.Fatal(err)
	}
	var jobs []JobSpec
	for i := range 6 {
		jobs = append(jobs, JobSpec{Name: fmt.Sprintf("j%d", i), Submit: time.Duration(i) * 30 * time.Second, Application: "toy", Replicas: 2, BatchSize: 20, Workers: 4})
	}
	for _, pol := range []scheduler.Policy{easyscale.Policy{}, easyscale.Policy{Homogeneous: true}, scheduler.Pollux{}} {
		res, err := Run(context.Background(), Config{Cluster: cluster(t, "1x2:t4,1x2:a100-40gb"), Jobs: jobs, Apps: apps, Policy: pol, Kind: scheduler.Elastic, PerType: true})
		if err != nil {
			t.Fatalf("%T: %v", pol, err)
		}
		if res.Completed != len(jobs) {
			t.Fatalf("%T: %d of %d completed", pol, res.Completed, len(jobs))
		}
	}
}

// The per-round check catches a plan that changes W.
func TestCheckWorkers(t *testing.T) {
	e := &engine{}
	j := &job{spec: JobSpec{Name: "w", Workers: 4}}
	ok := scheduler.Decision{To: 2, Assignment: placement.Assignment{Devices: []string{"a", "b"}, Workers: []int{3, 1}}}
	if err := e.checkWorkers(j, ok); err != nil {
		t.Fatal(err)
	}
	for _, w := range [][]int{{2, 1}, {4, 0}, {4}, nil} {
		d := ok
		d.Assignment.Workers = w
		if err := e.checkWorkers(j, d); !errors.Is(err, ErrLostJob) {
			t.Errorf("workers %v: %v, want ErrLostJob", w, err)
		}
	}
}

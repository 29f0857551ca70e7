package goodput_test

import (
	"errors"
	"fmt"
	"math"

	"github.com/goodsched/goodsched/goodput"
)

// Fit a model to a few measurements, then ask the speedup curve what
// allocations are worth to the job and which batch size to use.
func Example() {
	// Measured mean times (seconds) of a job at a few shapes.
	obs := []goodput.Observation{
		{Nodes: 1, Replicas: 1, Local: 32, AccumSeconds: 0.043, OptimSeconds: 0.044},
		{Nodes: 1, Replicas: 1, Local: 128, AccumSeconds: 0.104, OptimSeconds: 0.105},
		{Nodes: 1, Replicas: 2, Local: 128, AccumSeconds: 0.104, OptimSeconds: 0.120},
		{Nodes: 1, Replicas: 4, Local: 128, AccumSeconds: 0.104, OptimSeconds: 0.128},
		{Nodes: 2, Replicas: 2, Local: 128, AccumSeconds: 0.104, OptimSeconds: 0.190},
		{Nodes: 2, Replicas: 8, Local: 128, AccumSeconds: 0.104, OptimSeconds: 0.230},
	}
	est, err := goodput.NewEstimator(goodput.EstimatorConfig{
		Limits: goodput.Limits{InitBatch: 128, MaxBatch: 4096, MinLocal: 32, MaxLocal: 256, Accumulation: true},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := est.ObserveBatch("t4", obs); err != nil {
		fmt.Println(err)
		return
	}
	_ = est.ObserveGrad(goodput.GradStats{Sqr: 0.13, Var: 5.0})
	curve, err := est.Curve(goodput.CurveOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("max replicas:", curve.MaxReplicas("t4"))
	for _, a := range [][2]int{{1, 1}, {1, 4}, {2, 8}, {4, 16}} {
		p := curve.BatchPlan("t4", a[0], a[1])
		fmt.Printf("%d node(s) × %d GPUs: speedup %.1f, batch %d (local %d, accum %d)\n",
			a[0], a[1], curve.Speedup("t4", a[0], a[1]), p.Batch, p.Local, p.Accum)
	}
	// Output:
	// max replicas: 32
	// 1 node(s) × 1 GPUs: speedup 1.0, batch 512 (local 256, accum 1)
	// 1 node(s) × 4 GPUs: speedup 3.3, batch 1024 (local 256, accum 0)
	// 2 node(s) × 8 GPUs: speedup 4.0, batch 2048 (local 256, accum 0)
	// 4 node(s) × 16 GPUs: speedup 5.2, batch 4096 (local 256, accum 0)
}

// Fit Pollux's seven parameters to per-configuration mean step times.
func ExampleFit() {
	obs := []goodput.Observation{
		{Nodes: 1, Replicas: 1, Local: 32, AccumSeconds: 0.043, OptimSeconds: 0.044},
		{Nodes: 1, Replicas: 1, Local: 128, AccumSeconds: 0.104, OptimSeconds: 0.105},
		{Nodes: 1, Replicas: 4, Local: 128, AccumSeconds: 0.104, OptimSeconds: 0.128},
	}
	p, res, err := goodput.Fit(obs, goodput.FitOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%s after %d start(s); pinned by priors: %v\n", res.Status, res.Starts, res.Pinned)
	fmt.Printf("1 GPU at batch 64: %.3f s per step\n", p.StepSeconds(1, 1, 64, 0))
	fmt.Printf("inter-node at least 1.1× intra-node: %v\n", p.AlphaN >= 1.1*p.AlphaR)

	// Invalid measurements are rejected, never fitted.
	obs[1].OptimSeconds = math.NaN()
	_, _, err = goodput.Fit(obs, goodput.FitOptions{})
	fmt.Println(errors.Is(err, goodput.ErrInvalidObservation), err)
	// Output:
	// converged after 1 start(s); pinned by priors: [AlphaN BetaN AlphaT BetaT DeltaT]
	// 1 GPU at batch 64: 0.063 s per step
	// inter-node at least 1.1× intra-node: true
	// true observation 1: goodput: invalid observation: OptimSeconds = NaN
}

// Estimate the gradient statistics from per-replica gradient norms.
func ExampleNoiseScale() {
	var ns goodput.NoiseScale
	// 4 replicas at batch 2·M0: mean squared norm of the 4 local gradients
	// and squared norm of their average.
	if err := ns.Update(62, 17, 4, 2); err != nil {
		fmt.Println(err)
		return
	}
	g, _ := ns.Stats()
	fmt.Printf("|g|² ≈ %.0f, tr Σ ≈ %.0f, noise scale at M0 = 128: %.0f\n", g.Sqr, g.Var, g.NoiseScale(128))
	// Output:
	// |g|² ≈ 2, tr Σ ≈ 30, noise scale at M0 = 128: 1920
}

// A job with 8 logical workers on gangs of one and two types. On the
// mixed gang each T4 hosts one worker and each A100 three, so neither
// waits long for the other, but spanning two nodes costs a synchronisation
// that two A100s on one node do not pay.
func ExampleNewWorkerModel() {
	t4 := goodput.Params{AlphaC: 0.02, BetaC: 0.004, AlphaN: 0.05, BetaN: 0.004, Gamma: 2}
	a100 := t4
	a100.AlphaC, a100.BetaC = t4.AlphaC/4, t4.BetaC/4
	m, err := goodput.NewWorkerModel(goodput.WorkerConfig{Workers: 8, Local: 32,
		Models: map[string]goodput.Model{"t4": {Params: t4}, "a100-40gb": {Params: a100}}})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, gang := range [][]goodput.TypeShare{
		{{Type: "t4", Devices: 1, Workers: 8}},
		{{Type: "a100-40gb", Devices: 2, Workers: 8}},
		{{Type: "a100-40gb", Devices: 2, Workers: 6}, {Type: "t4", Devices: 2, Workers: 2}},
	} {
		nodes := len(gang)
		fmt.Printf("%v: step %.3f s, speedup %.2f\n", gang, m.StepSeconds(gang, nodes), m.GangSpeedup(gang, nodes))
	}
	// Output:
	// [{t4 1 8}]: step 1.187 s, speedup 1.00
	// [{a100-40gb 2 8}]: step 0.148 s, speedup 8.00
	// [{a100-40gb 2 6} {t4 2 2}]: step 0.159 s, speedup 7.47
}

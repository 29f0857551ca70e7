package goodsched_test

import (
	"context"
	"fmt"
	"time"

	"github.com/goodsched/goodsched/accel"
	"github.com/goodsched/goodsched/goodput"
	"github.com/goodsched/goodsched/scheduler"
)

// Example shows one scheduling round end to end: a cluster description,
// a job that learns its goodput model from its own step times, a rigid
// job, and the plan the host applies.
func Example() {
	ctx := context.Background()
	cluster, err := accel.ParseSpec("2x4:t4")
	if err != nil {
		panic(err)
	}

	// The adaptive job reports measured step times; its Estimator fits
	// Pollux's model and turns it into a speedup curve.
	est, err := goodput.NewEstimator(goodput.EstimatorConfig{
		Limits: goodput.Limits{InitBatch: 128, MaxBatch: 1024, MinLocal: 32, MaxLocal: 256, Accumulation: true},
	})
	if err != nil {
		panic(err)
	}
	for _, o := range []goodput.Observation{
		goodput.ObservationFromStep(1, 1, 128, 0.20, 0),
		goodput.ObservationFromStep(1, 2, 128, 0.23, 0.03),
		goodput.ObservationFromStep(1, 4, 128, 0.25, 0.05),
	} {
		if err := est.Observe("t4", o); err != nil {
			panic(err)
		}
	}
	if err := est.ObserveGrad(goodput.GradStats{Sqr: 0.5, Var: 20}); err != nil {
		panic(err)
	}
	curve, err := est.Curve(goodput.CurveOptions{})
	if err != nil {
		panic(err)
	}

	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	jobs := []scheduler.Job{
		{ID: "resnet", Kind: scheduler.Adaptive, MinReplicas: 1, MaxReplicas: 8, Speedup: curve, Submitted: now.Add(-time.Hour)},
		{ID: "bert", Kind: scheduler.Rigid, Requested: 2, Submitted: now.Add(-time.Hour)},
	}
	s, err := scheduler.New(scheduler.Config{}) // Pollux policy, placement round
	if err != nil {
		panic(err)
	}
	plan, err := s.Schedule(ctx, scheduler.Input{Cluster: cluster, Jobs: jobs, Now: now})
	if err != nil {
		panic(err)
	}
	for _, d := range plan.Decisions {
		fmt.Printf("%s: %v %d×%s on %d node(s), batch %d: %s\n", d.Job, d.Action, d.To, d.Type, d.Nodes, d.Batch.Batch, d.Message)
	}
	// Next round, the host passes plan.Assignments() as Input.Current.

	// Output:
	// bert: start 2×t4 on 1 node(s), batch 0: started on 2×t4 (1 node): speedup 0.00→2.00
	// resnet: start 6×t4 on 2 node(s), batch 1020: started on 6×t4 (2 nodes): speedup 0.00→3.53
}

package genetic_test

import (
	"context"
	"fmt"
	"time"

	"github.com/goodsched/goodsched/accel"
	"github.com/goodsched/goodsched/scheduler"
	"github.com/goodsched/goodsched/scheduler/genetic"
)

// The genetic reference, on a small population, and Pollux on two elastic
// jobs sharing 8 T4s, each plan scored with Pollux's objective: Pollux's
// fitness is at least the reference's.
func Example() {
	cluster, err := accel.ParseSpec("2x4:t4")
	if err != nil {
		fmt.Println(err)
		return
	}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	in := scheduler.Input{Cluster: cluster, Now: t0.Add(time.Hour), Jobs: []scheduler.Job{
		{ID: "a", Kind: scheduler.Elastic, MinReplicas: 1, MaxReplicas: 8, Submitted: t0},
		{ID: "b", Kind: scheduler.Elastic, MinReplicas: 1, MaxReplicas: 8, Submitted: t0},
	}}
	for _, pol := range []scheduler.Policy{genetic.Policy{Population: 20, Generations: 20, Seed: 1}, scheduler.Pollux{}} {
		s, err := scheduler.New(scheduler.Config{Policy: pol})
		if err != nil {
			fmt.Println(err)
			return
		}
		plan, err := s.Schedule(context.Background(), in)
		if err != nil {
			fmt.Println(err)
			return
		}
		f, err := scheduler.Pollux{}.Fitness(in, plan)
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Printf("%T: a %d, b %d devices, fitness %.3f\n", pol, plan.Decisions[0].To, plan.Decisions[1].To, f)
	}
	// Output:
	// genetic.Policy: a 3, b 5 devices, fitness 0.939
	// scheduler.Pollux: a 4, b 4 devices, fitness 1.001
}

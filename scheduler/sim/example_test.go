package sim_test

import (
	"context"
	"fmt"

	"github.com/goodsched/goodsched/accel"
	"github.com/goodsched/goodsched/scheduler"
	"github.com/goodsched/goodsched/scheduler/baselines"
	"github.com/goodsched/goodsched/scheduler/sim"
	"github.com/goodsched/goodsched/scheduler/sim/polluxdata"
)

// Replay the first 20 jobs of Pollux's workload-6 on 8 nodes × 4 T4 with
// the Tiresias baseline, which runs each job on its tuned device count and
// batch size.
func ExampleRun() {
	apps, err := sim.LoadProfiles(sim.ProfileOptions{}, sim.ProfileSource{FS: polluxdata.FS, Dir: "traces"})
	if err != nil {
		fmt.Println(err)
		return
	}
	ws, err := sim.LoadWorkloads(polluxdata.FS, "workloads/workload-6.csv")
	if err != nil {
		fmt.Println(err)
		return
	}
	cluster, err := accel.ParseSpec("8x4:t4")
	if err != nil {
		fmt.Println(err)
		return
	}
	res, err := sim.Run(context.Background(), sim.Config{
		Cluster: cluster,
		Jobs:    ws[0].Jobs[:20],
		Apps:    apps,
		Policy:  baselines.Tiresias{},
		Kind:    scheduler.Rigid,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("completed %d of %d jobs\n", res.Completed, len(res.Jobs))
	fmt.Printf("average JCT %.2f h, makespan %.1f h\n", res.AvgJCT.Hours(), res.Makespan.Hours())
	// Output:
	// completed 20 of 20 jobs
	// average JCT 0.86 h, makespan 10.5 h
}

package sim_test

import (
	"context"
	"fmt"
	"time"

	"github.com/goodsched/goodsched/accel"
	"github.com/goodsched/goodsched/scheduler"
	"github.com/goodsched/goodsched/scheduler/baselines"
	"github.com/goodsched/goodsched/scheduler/sim"
	"github.com/goodsched/goodsched/scheduler/sim/polluxdata"
)

// Share ExampleRun's cluster with an inference service of 2-GPU replicas
// that needs 4 of them (8 GPUs) for the first two hours, then 1: the
// service takes its devices first every round, preempting the jobs that
// hold the fewest, and the policy sees it as the pinned rigid job
// ServiceJobID("chat"). The workload's average JCT grows from 0.86 h on
// the whole cluster (ExampleRun) to 1.03 h, and no replica went without
// room.
func ExampleService() {
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
	chat := sim.Service{Name: "chat", Type: "t4", GPUsPerReplica: 2, Replicas: func(now time.Duration) int {
		if now < 2*time.Hour {
			return 4
		}
		return 1
	}}
	res, err := sim.Run(context.Background(), sim.Config{
		Cluster:  cluster,
		Jobs:     ws[0].Jobs[:20],
		Apps:     apps,
		Policy:   baselines.Tiresias{},
		Kind:     scheduler.Rigid,
		Services: []sim.Service{chat},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("the policy sees the service as", sim.ServiceJobID(chat.Name))
	fmt.Printf("completed %d of %d jobs\n", res.Completed, len(res.Jobs))
	fmt.Printf("average JCT %.2f h, makespan %.1f h\n", res.AvgJCT.Hours(), res.Makespan.Hours())
	fmt.Printf("replica-rounds without room: %d\n", res.ServiceShortfall)
	// Output:
	// the policy sees the service as service/chat
	// completed 20 of 20 jobs
	// average JCT 1.03 h, makespan 10.9 h
	// replica-rounds without room: 0
}

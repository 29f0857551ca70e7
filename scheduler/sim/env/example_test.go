package env_test

import (
	"context"
	"fmt"

	"github.com/goodsched/goodsched/accel"
	"github.com/goodsched/goodsched/scheduler"
	"github.com/goodsched/goodsched/scheduler/baselines"
	"github.com/goodsched/goodsched/scheduler/sim"
	"github.com/goodsched/goodsched/scheduler/sim/env"
	"github.com/goodsched/goodsched/scheduler/sim/polluxdata"
)

// Play FIFO through the environment on the first 20 jobs of Pollux's
// workload-6 (8 nodes × 4 T4): the episode's JCT return is minus the sum
// of the jobs' completion times, in hours.
func Example() {
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
	e, err := env.New(env.Config{Sim: sim.Config{Cluster: cluster, Jobs: ws[0].Jobs[:20], Apps: apps, Kind: scheduler.Rigid}})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer e.Close()
	obs, err := e.Reset(1)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%s: %d job(s) at t=%.0fs, %d devices\n", obs.Schema, len(obs.Jobs), obs.TimeSeconds, len(obs.Devices))
	ret := 0.0
	for {
		// A Go agent may act on the round itself; a remote one reads obs.
		targets, err := baselines.FIFO{}.Allocate(context.Background(), e.Round())
		if err != nil {
			fmt.Println(err)
			return
		}
		st, err := e.Step(env.ActionOf(targets))
		if err != nil {
			fmt.Println(err)
			return
		}
		ret += st.Reward
		if st.Done {
			break
		}
	}
	res, _ := e.Result()
	fmt.Printf("%d steps, return %.2f job-hours; average JCT %.2f h over %d jobs\n", e.Steps(), ret, res.AvgJCT.Hours(), res.Completed)
	// Output:
	// goodsched.env/v1: 1 job(s) at t=60s, 32 devices
	// 618 steps, return -25.37 job-hours; average JCT 1.27 h over 20 jobs
}

package dmr_test

import (
	"fmt"
	"time"

	"github.com/goodsched/goodsched/accel"
	"github.com/goodsched/goodsched/scheduler"
	"github.com/goodsched/goodsched/scheduler/dmr"
)

// A malleable job holds 6 of 8 devices; a rigid job waits for 4. At its
// next synchronisation point the malleable job is told to shrink to 4.
func Example() {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	cluster, _ := accel.ParseSpec("1x8:t4")
	typ := cluster.Types()[0]
	in := scheduler.Input{Cluster: cluster, Now: now, Jobs: []scheduler.Job{
		{ID: "train", Kind: scheduler.Elastic, MinReplicas: 2, MaxReplicas: 8, Submitted: now},
		{ID: "eval", Kind: scheduler.Rigid, Requested: 4, Submitted: now},
	}}
	plan := scheduler.Plan{Decisions: []scheduler.Decision{{Job: "eval"}, {Job: "train", Type: typ, To: 6}}}
	a, err := dmr.New(in, plan)
	if err != nil {
		fmt.Println(err)
		return
	}
	ans, _ := a.Reconfigure("train", now.Add(time.Minute))
	fmt.Println(ans.Verdict, ans.To, "-", ans.Reason)
	// Output:
	// shrink 4 - queued job eval needs 4 t4 devices, 2 free: give back 2
}

package baselines_test

import (
	"context"
	"fmt"
	"time"

	"github.com/goodsched/goodsched/accel"
	"github.com/goodsched/goodsched/scheduler"
	"github.com/goodsched/goodsched/scheduler/baselines"
)

// FIFO with backfill on 8 T4s: the second job asks for all of them and
// waits, the third fits in what the first left and starts.
func ExampleFIFO() {
	cluster, err := accel.ParseSpec("2x4:t4")
	if err != nil {
		fmt.Println(err)
		return
	}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s, err := scheduler.New(scheduler.Config{Policy: baselines.FIFO{}})
	if err != nil {
		fmt.Println(err)
		return
	}
	plan, err := s.Schedule(context.Background(), scheduler.Input{Cluster: cluster, Now: t0.Add(time.Hour), Jobs: []scheduler.Job{
		{ID: "a", Submitted: t0, Requested: 4},
		{ID: "b", Submitted: t0.Add(time.Minute), Requested: 8},
		{ID: "c", Submitted: t0.Add(2 * time.Minute), Requested: 2},
	}})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, d := range plan.Decisions {
		fmt.Printf("%s: %d devices (%s)\n", d.Job, d.To, d.Reason)
	}
	// Output:
	// a: 4 devices (order)
	// b: 0 devices (no-capacity)
	// c: 2 devices (order)
}

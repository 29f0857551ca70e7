package learned_test

import (
	"context"
	"fmt"

	"github.com/goodsched/goodsched/accel"
	"github.com/goodsched/goodsched/scheduler"
	"github.com/goodsched/goodsched/scheduler/learned"
)

// Two rigid jobs wait on a cluster of 4 T4 and 4 A100: the learned
// policy orders them and starts each where it fits.
func ExamplePolicy() {
	c, err := accel.ParseSpec("1x4:t4,1x4:a100-40gb")
	if err != nil {
		fmt.Println(err)
		return
	}
	in := scheduler.Input{Cluster: c, Jobs: []scheduler.Job{
		{ID: "big", Kind: scheduler.Rigid, Requested: 4, RemainingWork: 3600},
		{ID: "small", Kind: scheduler.Rigid, Requested: 2, RemainingWork: 600},
	}}
	r, err := scheduler.NewRound(in)
	if err != nil {
		fmt.Println(err)
		return
	}
	targets, err := learned.Policy{}.Allocate(context.Background(), r)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, t := range targets {
		fmt.Printf("%s: %d × %s\n", t.Job, t.Count, t.Type)
	}
	// Output:
	// big: 4 × a100-40gb
	// small: 2 × t4
}

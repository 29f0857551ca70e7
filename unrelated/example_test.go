package unrelated_test

import (
	"fmt"

	"github.com/goodsched/goodsched/unrelated"
)

// Two job types on two accelerator types (throughput in steps per second):
// build the instance from the throughput matrix, then solve it exactly and
// with the dispatching rule.
func Example() {
	throughput := [][]float64{
		{4, 1}, // type 0: four times faster on accelerator type 0
		{2, 2}, // type 1: the same on both
	}
	jobs := []unrelated.WorkJob{
		{Type: 0, Work: 40, Deadline: 10, Weight: 2},
		{Type: 1, Work: 20, Deadline: 10, Weight: 1},
		{Type: 0, Work: 20, Deadline: 20, Weight: 1},
	}
	machines := []unrelated.Machine{{Deadline: 30, Weight: 1}, {Busy: 2, Deadline: 30, Weight: 1}}
	in, err := unrelated.FromThroughput(throughput, jobs, machines, []int{0, 1})
	if err != nil {
		fmt.Println(err)
		return
	}
	opt, c, _ := unrelated.Optimal(in)
	fmt.Println("optimal:", opt.Sequences, c.Total())
	_, r, _ := unrelated.Run(in, unrelated.Rule{})
	fmt.Println("rule:", r.Total())
	// Output:
	// optimal: [[0 2] [1]] 17
	// rule: 27
}

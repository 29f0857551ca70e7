package easyscale_test

import (
	"fmt"

	"github.com/goodsched/goodsched/scheduler/easyscale"
)

// Two device types, a fast one (a worker takes 0.5 s) and a slow one
// (1 s). A job with 4 logical workers holds one slow device; a new job
// with 2 workers arrives while one fast and two slow devices are free.
func ExamplePlan() {
	times := []float64{0.5, 1}
	jobs := []easyscale.Job{
		{Workers: 4, Current: []int{0, 1}, WorkerSeconds: times},
		{Workers: 2, WorkerSeconds: times},
	}
	grants, err := easyscale.Plan([]int{1, 2}, jobs, easyscale.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	for i, g := range grants {
		fmt.Printf("job %d: devices %v, workers %v (%s)\n", i, g.Devices, g.Workers, g.Note)
	}
	// Output:
	// job 0: devices [1 1], workers [3 1] (1→2 devices (+1 of type 0), incremental speedup 2.667)
	// job 1: devices [0 1], workers [0 2] (start on 1 device)
}

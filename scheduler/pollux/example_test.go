package pollux_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/goodsched/goodsched/accel"
	"github.com/goodsched/goodsched/placement"
	"github.com/goodsched/goodsched/scheduler/pollux"
)

// Two elastic jobs share two nodes of four T4s: one scales almost
// linearly, the other saturates at two devices. The search gives the
// devices where they add most speedup over each job's fair share.
func Example() {
	cluster, err := accel.ParseSpec("2x4:t4")
	if err != nil {
		log.Fatal(err)
	}
	ix, err := placement.NewIndex(cluster)
	if err != nil {
		log.Fatal(err)
	}
	linear := func(_, nodes, count int) (float64, error) { return float64(count) * (1 - 0.1*float64(nodes-1)), nil }
	saturating := func(_, _, count int) (float64, error) { return float64(min(count, 2)), nil }
	p := pollux.Problem{Cluster: &cluster, Index: ix, Exponent: -1, RestartDelay: 30 * time.Second,
		Jobs: []pollux.Job{
			{ID: "linear", Weight: 1, Types: []int{0}, Min: 1, Max: 8, CurrentType: -1, Age: time.Hour, Speedup: linear},
			{ID: "saturating", Weight: 1, Types: []int{0}, Min: 1, Max: 8, CurrentType: -1, Age: time.Hour, Speedup: saturating},
		}}
	s, err := pollux.New(p)
	if err != nil {
		log.Fatal(err)
	}
	sols, err := s.Solve(context.Background(), 4)
	if err != nil {
		log.Fatal(err)
	}
	for i, j := range p.Jobs {
		_, count, nodes := sols[0].Alloc(i)
		fmt.Printf("%s: %d devices on %d node(s)\n", j.ID, count, nodes)
	}
	// Output:
	// linear: 6 devices on 2 node(s)
	// saturating: 2 devices on 1 node(s)
}

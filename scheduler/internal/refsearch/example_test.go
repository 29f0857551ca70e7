package refsearch_test

import (
	"fmt"

	"github.com/goodsched/goodsched/scheduler/internal/refsearch"
)

// Two jobs on two 4-device nodes. The fitness adds a diminishing gain per
// replica and charges each node a job spans, so the best matrix gives each
// job one whole node.
func ExampleSearch() {
	p := refsearch.Problem{
		NodeType: []int{0, 0},
		NodeCap:  []int{4, 4},
		Jobs:     []refsearch.Job{{Min: 1, Max: 8}, {Min: 1, Max: 8}},
		Fitness: func(rows [][]int) float64 {
			f := 0.0
			for _, r := range rows {
				k := 0
				for _, v := range r {
					k += v
					if v > 0 {
						f -= 0.1 // spanning another node costs
					}
				}
				for i := 1; i <= k; i++ {
					f += 1 / float64(i) // a concave gain per extra replica
				}
			}
			return f
		},
	}
	res, err := refsearch.Search(p, refsearch.Options{Seed: 1}) // Pollux's 100 × 100
	if err != nil {
		fmt.Println(err)
		return
	}
	for j, r := range res.Rows {
		fmt.Println("job", j, "replicas per node", r)
	}
	// Output:
	// job 0 replicas per node [4 0]
	// job 1 replicas per node [0 4]
}

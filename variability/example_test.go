package variability_test

import (
	"fmt"
	"time"

	"github.com/goodsched/goodsched/accel"
	"github.com/goodsched/goodsched/variability"
)

// A node becomes 2× slower (interference); the estimator learns it from
// the step times of the gangs on it, and the scheduler sees it through
// the Speeds snapshot.
func Example() {
	c, _ := accel.ParseSpec("2x2:v100-32gb")
	e, _ := variability.NewEstimator(c, nil, variability.Options{LocalityPenalty: 1.7})
	slowGang := []string{"v100-32gb-0/0", "v100-32gb-0/1"}
	for range 3 {
		_ = e.Observe(variability.Report{Job: "a", Class: "classA", Devices: slowGang,
			Step: 200 * time.Millisecond, Base: 100 * time.Millisecond})
	}
	sp := e.Speeds(map[string]string{"a": "classA"})
	fmt.Println(sp.Slowdown("a", "v100-32gb-0/0"), sp.Slowdown("a", "v100-32gb-1/0"), sp.LocalityPenalty("a"))
	// Output: 2 1 1.7
}

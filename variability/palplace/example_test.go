package palplace_test

import (
	"context"
	"fmt"

	"github.com/goodsched/goodsched/accel"
	"github.com/goodsched/goodsched/placement"
	"github.com/goodsched/goodsched/variability"
	"github.com/goodsched/goodsched/variability/palplace"
)

// PAL keeps a 2-GPU gang on the node whose GPUs are fastest for its class.
func Example() {
	c, _ := accel.ParseSpec("2x2:v100-32gb")
	prior := variability.NewTable("classA")
	_ = prior.Set("v100-32gb-0/0", "classA", 1.12) // a slow GPU on node 0
	est, _ := variability.NewEstimator(c, prior, variability.Options{LocalityPenalty: 1.7})
	x, _ := placement.NewIndex(c)
	res, _ := palplace.PAL{}.Place(context.Background(), placement.PlaceInput{
		Cluster: x,
		Speeds:  est.Speeds(map[string]string{"resnet": "classA"}),
		Targets: []placement.Target{{Job: "resnet", Type: "v100-32gb", Count: 2}},
	})
	fmt.Println(res.Assignments[0].Devices)
	// Output: [v100-32gb-1/0 v100-32gb-1/1]
}

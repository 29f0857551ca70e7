package goodput_test

import (
	"fmt"

	"github.com/goodsched/goodsched/accel/topology"
	"github.com/goodsched/goodsched/goodput"
)

// Fit a sync factor per network tier from reports tagged with the slowest
// tier each placement spanned (accel/topology's TierOf of its nodes), then
// predict a step across the spine, where the job never ran: the topology
// knows no bandwidth for it, so it takes the block's factor.
func ExampleFitTiers() {
	top, err := topology.FromLabels(
		[]topology.Level{{Name: "block", Bandwidth: 100}, {Name: "rack", Bandwidth: 400}},
		map[string]map[string]string{
			"n1": {"block": "b1", "rack": "r1"}, "n2": {"block": "b1", "rack": "r1"},
			"n3": {"block": "b1", "rack": "r2"}, "n4": {"block": "b2", "rack": "r3"},
		})
	if err != nil {
		fmt.Println(err)
		return
	}
	tier := func(nodes ...string) int { t, _ := top.TierOf(nodes); return t }
	report := func(t, nodes, replicas int, pass, step float64) goodput.TierObservation {
		return goodput.TierObservation{Tier: t, Observation: goodput.Observation{Nodes: nodes, Replicas: replicas,
			Local: 32, AccumSeconds: pass, OptimSeconds: step}}
	}
	obs := []goodput.TierObservation{
		report(tier("n1"), 1, 1, 0.100, 0.100),
		report(tier("n1"), 1, 4, 0.100, 0.110),
		report(tier("n1", "n2"), 2, 8, 0.100, 0.140), // one rack
		report(tier("n1", "n3"), 2, 8, 0.100, 0.220), // two racks of one block
	}
	p, _, err := goodput.FitTiers(obs, goodput.TierOptions{Bandwidths: top.TierBandwidths()})
	if err != nil {
		fmt.Println(err)
		return
	}
	for t := 1; t <= 3; t++ {
		fmt.Printf("tier %d: sync ×%.1f, step on 2 nodes × 4 GPUs %.2f s\n", t, p.Factor(t), p.At(t).StepSeconds(2, 8, 32, 0))
	}
	// Output:
	// tier 1: sync ×1.0, step on 2 nodes × 4 GPUs 0.14 s
	// tier 2: sync ×3.0, step on 2 nodes × 4 GPUs 0.22 s
	// tier 3: sync ×3.0, step on 2 nodes × 4 GPUs 0.22 s
}

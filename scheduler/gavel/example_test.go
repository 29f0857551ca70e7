package gavel_test

import (
	"context"
	"fmt"
	"log"

	"github.com/goodsched/goodsched/accel"
	"github.com/goodsched/goodsched/scheduler/gavel"
)

// Three jobs from Gavel's published throughput matrix share one V100, one
// P100 and one K80. Heterogeneity-aware max-min fairness gives each job the
// types where it gains most; the blind variant splits time evenly.
func Example() {
	tab, err := gavel.Published()
	if err != nil {
		log.Fatal(err)
	}
	types := []accel.TypeKey{"v100-16gb", "p100", "k80"}
	classes := []string{"ResNet-18 (batch size 256)", "Recommendation (batch size 1024)", "A3C"}
	p := gavel.Problem{Devices: []int{1, 1, 1}}
	for _, c := range classes {
		row := make([]float64, len(types))
		for j, t := range types {
			row[j], _ = tab.Lookup(c, 1, t)
		}
		p.Throughput = append(p.Throughput, row)
	}
	for _, obj := range []gavel.MaxMinFairness{{}, {HeterogeneityBlind: true}} {
		sol, err := gavel.Solve(context.Background(), p, obj, nil)
		if err != nil {
			log.Fatal(err)
		}
		// Shares are measured on the real throughputs in both cases.
		shares, _ := p.NormalizedShares(sol.X)
		fmt.Printf("%s (optimal within 1e-6: %v)\n", obj.Name(), sol.Gap < 1e-6)
		for m, c := range classes {
			fmt.Printf("  %-33s %.2f× its equal share\n", c, shares[m])
		}
	}
	// Output:
	// max-min (optimal within 1e-6: true)
	//   ResNet-18 (batch size 256)        1.15× its equal share
	//   Recommendation (batch size 1024)  1.15× its equal share
	//   A3C                               1.15× its equal share
	// max-min-blind (optimal within 1e-6: true)
	//   ResNet-18 (batch size 256)        1.00× its equal share
	//   Recommendation (batch size 1024)  1.00× its equal share
	//   A3C                               1.00× its equal share
}

package gavel_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/goodsched/goodsched/accel"
	"github.com/goodsched/goodsched/placement"
	"github.com/goodsched/goodsched/scheduler"
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

// A Policy runs Gavel's rounds behind scheduler.Policy. Here three jobs
// share one V100 node and one K80 node; each round the policy credits what
// ran and hands out the devices to the jobs furthest below their share.
func ExamplePolicy() {
	tab, err := gavel.Published()
	if err != nil {
		log.Fatal(err)
	}
	cluster, err := accel.ParseSpec("1x2:v100,1x2:k80")
	if err != nil {
		log.Fatal(err)
	}
	class := map[string]string{"resnet": "ResNet-50 (batch size 64)", "lm": "LM (batch size 20)", "a3c": "A3C"}
	pol, err := gavel.NewPolicy(gavel.Config{
		Throughput: tab.Throughput(func(j *scheduler.Job) string { return class[j.ID] }),
	})
	if err != nil {
		log.Fatal(err)
	}
	s, err := scheduler.New(scheduler.Config{Policy: pol, Placer: placement.Packer{}})
	if err != nil {
		log.Fatal(err)
	}
	jobs := []scheduler.Job{{ID: "a3c"}, {ID: "lm"}, {ID: "resnet", Requested: 2}}
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var current []placement.Assignment
	for round := range 4 {
		in := scheduler.Input{Cluster: cluster, Jobs: jobs, Current: current, Now: start.Add(time.Duration(round) * 6 * time.Minute)}
		plan, err := s.Schedule(context.Background(), in)
		if err != nil {
			log.Fatal(err)
		}
		current = plan.Assignments()
		fmt.Printf("round %d:", round)
		for _, d := range plan.Decisions {
			if d.To > 0 {
				fmt.Printf(" %s→%d×%s", d.Job, d.To, d.Type)
			} else {
				fmt.Printf(" %s waits", d.Job)
			}
		}
		fmt.Println()
	}
	// Output:
	// round 0: a3c→1×v100-16gb lm→1×v100-16gb resnet→2×k80
	// round 1: a3c→1×k80 lm→1×k80 resnet→2×v100-16gb
	// round 2: a3c→1×v100-16gb lm→1×v100-16gb resnet→2×k80
	// round 3: a3c→1×v100-16gb lm→1×v100-16gb resnet→2×k80
}

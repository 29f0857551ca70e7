package main

import (
	"fmt"
	"slices"
	"strings"

	"github.com/goodsched/goodsched/placement"
	"github.com/goodsched/goodsched/scheduler"
	"github.com/goodsched/goodsched/scheduler/baselines"
	"github.com/goodsched/goodsched/scheduler/dmr"
	"github.com/goodsched/goodsched/scheduler/easyscale"
	"github.com/goodsched/goodsched/scheduler/gavel"
)

// policySpec says how to build one policy for one run and how the
// simulator presents jobs to it.
type policySpec struct {
	about string
	// build returns a fresh policy (some keep state between rounds).
	build func() (scheduler.Policy, error)
	kind  scheduler.Kind
	// placer realises the targets (nil = the scheduler's default). The
	// baselines use Packer, which fills nodes like the Pollux simulator's
	// baselines do.
	placer  placement.Placer
	oracle  bool
	perType bool // per-type goodput models (only matters on mixed clusters)
}

// registry is the name → policy map behind -policies. It is built by the
// program, as a value (no global registration).
func registry() map[string]policySpec {
	return map[string]policySpec{
		"goodput": {
			about: "Pollux/Sia goodput policy: adaptive jobs, one goodput model per accelerator type (W-jobs: their fixed batch, one type)",
			build: func() (scheduler.Policy, error) { return scheduler.Pollux{Parallel: true}, nil },
			kind:  scheduler.Adaptive, perType: true,
		},
		"goodput-blind": {
			about: "goodput policy with heterogeneity-blind models (one model for all types)",
			build: func() (scheduler.Policy, error) { return scheduler.Pollux{Parallel: true}, nil },
			kind:  scheduler.Adaptive,
		},
		"tiresias": {
			about: "Tiresias 2-queue LAS on the workload's tuned GPU counts and batch sizes",
			build: func() (scheduler.Policy, error) { return baselines.Tiresias{}, nil },
			kind:  scheduler.Rigid, placer: placement.Packer{},
		},
		"fifo": {
			about: "FIFO with backfill on the workload's GPU counts and batch sizes",
			build: func() (scheduler.Policy, error) { return baselines.FIFO{}, nil },
			kind:  scheduler.Rigid, placer: placement.Packer{},
		},
		"optimus": {
			about: "Optimus+Oracle: elastic counts at the workload's batch size, ground-truth remaining work",
			build: func() (scheduler.Policy, error) { return baselines.Optimus{}, nil },
			kind:  scheduler.Elastic, oracle: true, placer: placement.Packer{},
		},
		"gavel": {
			about: "Gavel heterogeneity-aware max-min fairness on the workload's GPU counts (oracle throughputs)",
			build: func() (scheduler.Policy, error) { return gavel.NewPolicy(gavel.Config{}) },
			kind:  scheduler.Rigid, oracle: true,
		},
		"easyscale": {
			about: "EasyScale: W-jobs (-workers) start on one device and grow greedily by incremental speedup, on several device types at once",
			build: func() (scheduler.Policy, error) { return easyscale.Policy{}, nil },
			kind:  scheduler.Elastic, perType: true,
		},
		"goodput-mix": {
			about: "goodput, and W-jobs that restart anyway also take idle devices of other types (easyscale.Mix)",
			build: func() (scheduler.Policy, error) {
				return easyscale.Mix{Policy: scheduler.Pollux{Parallel: true}}, nil
			},
			kind: scheduler.Adaptive, perType: true,
		},
		"easyscale-homo": {
			about: "EasyScale with one device type per job",
			build: func() (scheduler.Policy, error) { return easyscale.Policy{Homogeneous: true}, nil },
			kind:  scheduler.Elastic, perType: true,
		},
		"dmr": {
			about: "DMR: malleable jobs (the workload's batch size, any count) that expand, shrink or keep their size as dmr.Reconfigure answers every round; waiting jobs first come first served on their GPU counts",
			build: func() (scheduler.Policy, error) { return dmr.Policy{}, nil },
			kind:  scheduler.Elastic, placer: placement.Packer{},
		},
		"gavel-blind": {
			about: "Gavel's heterogeneity-blind max-min fairness (every throughput 1) on the workload's GPU counts",
			build: func() (scheduler.Policy, error) {
				return gavel.NewPolicy(gavel.Config{Objective: gavel.MaxMinFairness{HeterogeneityBlind: true}})
			},
			kind: scheduler.Rigid, oracle: true,
		},
	}
}

// parsePolicies splits a comma-separated list and checks every name.
func parsePolicies(list string, reg map[string]policySpec) ([]string, error) {
	var names []string
	for _, n := range strings.Split(list, ",") {
		n = strings.TrimSpace(strings.ToLower(n))
		if n == "" {
			continue
		}
		if _, ok := reg[n]; !ok {
			known := make([]string, 0, len(reg))
			for k := range reg {
				known = append(known, k)
			}
			slices.Sort(known)
			return nil, fmt.Errorf("unknown policy %q (known: %s)", n, strings.Join(known, ", "))
		}
		if !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("no policies given")
	}
	return names, nil
}

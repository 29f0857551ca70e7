package main

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/goodsched/goodsched/accel"
	"github.com/goodsched/goodsched/energy"
	"github.com/goodsched/goodsched/provision"
	"github.com/goodsched/goodsched/scheduler/sim"
)

// learnedName is the row -learn-from adds: goodput-carbon provisioned by
// the Planner with thresholds learned from the oracle on other weeks.
const learnedName = "learned"

// learnWeeks reads -learn-from: comma-separated start times (RFC 3339 or
// dates) inside the -carbon series.
func learnWeeks(o options, g gridSettings) ([]time.Time, error) {
	var out []time.Time
	for _, f := range strings.Split(o.learnFrom, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		t, err := parseStart(f)
		if err != nil {
			return nil, usage("-learn-from %q: want RFC 3339 or YYYY-MM-DD", f)
		}
		if _, ok := g.series.Index(t); !ok {
			return nil, usage("-learn-from %s is outside the -carbon series", f)
		}
		out = append(out, t)
	}
	if len(out) == 0 {
		return nil, usage("-learn-from: no start times")
	}
	return out, nil
}

// checkLearn checks -learn-from against the other flags and the cluster
// and adds the learned row to names.
func checkLearn(o options, g gridSettings, cluster accel.Cluster, reg map[string]policySpec, names *[]string) ([]time.Time, error) {
	if o.learnFrom == "" {
		return nil, nil
	}
	if o.carbon == "" || o.slack <= 0 {
		return nil, usage("-learn-from needs -carbon and -slack")
	}
	if o.carbonWeight != 1 {
		return nil, usage("-learn-from plans with carbon weight 1; -carbon-weight %v is not supported with it", o.carbonWeight)
	}
	per := len(cluster.Nodes[0].Devices)
	for _, n := range cluster.Nodes {
		if len(n.Devices) != per {
			return nil, usage("-learn-from needs identical nodes (-cluster %s mixes node sizes)", o.cluster)
		}
	}
	if len(cluster.Types()) != 1 || len(cluster.Nodes) > provision.MaxOracleNodes {
		return nil, usage("-learn-from needs one device type and at most %d nodes (the oracle it learns from)", provision.MaxOracleNodes)
	}
	weeks, err := learnWeeks(o, g)
	if err != nil {
		return nil, err
	}
	reg[learnedName] = carbonSpec(1)
	if !containsName(*names, learnedName) {
		*names = append(*names, learnedName)
	}
	return weeks, nil
}

// learnRule runs goodput-carbon, provisioned by the default Planner (as
// -provision does), on every workload from each training start, solves
// provision.Oracle on each run's busy nodes and fits the Planner's
// thresholds to the oracle's node states (provision.Learn). It reports
// the fit on stderr.
func learnRule(ctx context.Context, o options, g gridSettings, weeks []time.Time, cluster accel.Cluster, apps map[string]*sim.Application, workloads []sim.Workload, stderr io.Writer) (provision.Rule, error) {
	power := energy.PowerModel{PUE: o.pue}
	type run struct {
		start time.Time
		cfg   sim.Config
	}
	var runs []run
	for _, start := range weeks {
		for _, w := range workloads {
			p, err := carbonSpec(1).build()
			if err != nil {
				return provision.Rule{}, err
			}
			runs = append(runs, run{start, sim.Config{
				Cluster: cluster, Jobs: w.Jobs, Apps: apps, Policy: p, Kind: carbonSpec(1).kind,
				Interval: o.interval, InterferenceSlowdown: o.interference, Explore: o.explore,
				Faults: sim.Faults{MTBF: o.mtbf, Seed: o.seed},
				Carbon: g.series, Start: start, Slack: o.slack, Power: power,
				Provision: provision.Planner{Power: power},
			}})
		}
	}
	fmt.Fprintf(stderr, "learning: %d training run(s) of goodput-carbon with -provision (%d start(s) × %d workload(s))\n", len(runs), len(weeks), len(workloads))
	results := make([]sim.Result, len(runs))
	errs := make([]error, len(runs))
	var wg sync.WaitGroup
	sem := make(chan struct{}, max(1, runtime.GOMAXPROCS(0)))
	for i := range runs {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			results[i], errs[i] = sim.Run(ctx, runs[i].cfg)
		}()
	}
	wg.Wait()
	var train []provision.OracleInput
	for i, r := range results {
		if errs[i] != nil {
			return provision.Rule{}, fmt.Errorf("learning run from %s: %w", runs[i].start.Format(time.RFC3339), errs[i])
		}
		in, _, _, _, err := oracleInput(o, g.series, runs[i].start, cluster, r)
		if err != nil {
			return provision.Rule{}, err
		}
		train = append(train, in)
	}
	l, err := provision.Learn(train, provision.LearnOptions{})
	if err != nil {
		return provision.Rule{}, err
	}
	fmt.Fprintf(stderr, "learned: Hold %v, OffAfter %v (disagreement with the oracle %.3f nodes per slot; idle and transitions in replay %.1f%% above the oracle's on the training runs)\n",
		l.Hold, l.OffAfter, l.Disagreement, 100*(l.ReplayCarbonG/l.OracleCarbonG-1))
	return l.Rule, nil
}

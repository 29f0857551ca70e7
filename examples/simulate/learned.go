package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/goodsched/goodsched/accel"
	"github.com/goodsched/goodsched/energy"
	"github.com/goodsched/goodsched/provision"
	"github.com/goodsched/goodsched/scheduler/sim"
)

// learnedName is the row -learn-from adds: goodput-carbon provisioned by
// the Planner with thresholds learned from the oracle on other weeks.
const learnedName = "learned"

// learnWeeks reads the start times of flag (-learn-from or
// -learn-holdout), v: comma-separated RFC 3339 times or dates inside the
// -carbon series.
func learnWeeks(flag, v string, g gridSettings) ([]time.Time, error) {
	var out []time.Time
	for _, f := range strings.Split(v, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		t, err := parseStart(f)
		if err != nil {
			return nil, usage("%s %q: want RFC 3339 or YYYY-MM-DD", flag, f)
		}
		if _, ok := g.series.Index(t); !ok {
			return nil, usage("%s %s is outside the -carbon series", flag, f)
		}
		out = append(out, t)
	}
	if len(out) == 0 {
		return nil, usage("%s: no start times", flag)
	}
	return out, nil
}

// checkLearnable checks flag (-learn-from or -learn-holdout), with start
// times v, against the other flags and the cluster, and returns the
// start times.
func checkLearnable(flag, v string, o options, g gridSettings, cluster accel.Cluster) ([]time.Time, error) {
	if o.carbon == "" || o.slack <= 0 {
		return nil, usage("%s needs -carbon and -slack", flag)
	}
	if o.carbonWeight != 1 {
		return nil, usage("%s plans with carbon weight 1; -carbon-weight %v is not supported with it", flag, o.carbonWeight)
	}
	per := len(cluster.Nodes[0].Devices)
	for _, n := range cluster.Nodes {
		if len(n.Devices) != per {
			return nil, usage("%s needs identical nodes (-cluster %s mixes node sizes)", flag, o.cluster)
		}
	}
	if len(cluster.Types()) != 1 || len(cluster.Nodes) > provision.MaxOracleNodes {
		return nil, usage("%s needs one device type and at most %d nodes (the oracle it learns from)", flag, provision.MaxOracleNodes)
	}
	return learnWeeks(flag, v, g)
}

// checkLearn checks -learn-from and adds the learned row to names.
func checkLearn(o options, g gridSettings, cluster accel.Cluster, reg map[string]policySpec, names *[]string) ([]time.Time, error) {
	if o.learnFrom == "" {
		return nil, nil
	}
	weeks, err := checkLearnable("-learn-from", o.learnFrom, o, g, cluster)
	if err != nil {
		return nil, err
	}
	reg[learnedName] = carbonSpec(1, true)
	if !containsName(*names, learnedName) {
		*names = append(*names, learnedName)
	}
	return weeks, nil
}

// provisionedRun is the run of goodput-carbon (carbon weight 1, planned
// jointly, as under -provision) on workload w from start, provisioned
// by p.
func provisionedRun(o options, g gridSettings, cluster accel.Cluster, apps map[string]*sim.Application, w sim.Workload, start time.Time, p sim.Provisioner) sim.Config {
	spec := carbonSpec(1, true)
	pol, _ := spec.build() // never fails
	return sim.Config{
		Cluster: cluster, Jobs: w.Jobs, Apps: apps, Policy: pol, Kind: spec.kind,
		Interval: o.interval, InterferenceSlowdown: o.interference, Explore: o.explore,
		Faults: sim.Faults{MTBF: o.mtbf, Seed: o.seed},
		Carbon: g.series, Start: start, Slack: o.slack, Power: energy.PowerModel{PUE: o.pue},
		Provision: p,
	}
}

// learnRule runs goodput-carbon, provisioned by the default Planner (as
// -provision does), on every workload from each training start, solves
// provision.Oracle on each run's busy nodes and fits the Planner's
// thresholds to the oracle's node states (provision.Learn). It reports
// the fit on stderr.
func learnRule(ctx context.Context, o options, g gridSettings, weeks []time.Time, cluster accel.Cluster, apps map[string]*sim.Application, workloads []sim.Workload, stderr io.Writer) (provision.Rule, error) {
	power := energy.PowerModel{PUE: o.pue}
	var cfgs []sim.Config
	for _, start := range weeks {
		for _, w := range workloads {
			cfgs = append(cfgs, provisionedRun(o, g, cluster, apps, w, start, planner(power)))
		}
	}
	fmt.Fprintf(stderr, "learning: %d training run(s) of goodput-carbon with -provision (%d start(s) × %d workload(s))\n", len(cfgs), len(weeks), len(workloads))
	results, err := sim.RunAll(ctx, cfgs, 0)
	if err != nil {
		return provision.Rule{}, fmt.Errorf("learning: runs from %s: %w", o.learnFrom, err)
	}
	var train []provision.OracleInput
	for i, r := range results {
		in, _, _, _, err := oracleInput(o, g.series, cfgs[i].Start, cluster, r)
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

// holdoutWeek is one row of -learn-holdout: the learned policy on a week
// it did not learn from.
type holdoutWeek struct {
	Start string `json:"start"`
	// LearnedFrom are the training starts; Hold and OffAfter the fitted
	// thresholds.
	LearnedFrom []string `json:"learned_from"`
	Hold        string   `json:"hold"`
	OffAfter    string   `json:"off_after"`
	// Mean per workload: the learned row, goodput-carbon with -provision
	// (the default Planner), and the oracle (goodput-carbon's -provision
	// schedule with the optimal node states, as -oracle).
	LearnedKg   float64 `json:"learned_carbon_kg"`
	ProvisionKg float64 `json:"provision_carbon_kg"`
	OracleKg    float64 `json:"oracle_carbon_kg"`
	// LearnedOverOracle is LearnedKg / OracleKg − 1.
	LearnedOverOracle float64 `json:"learned_over_oracle"`
	LearnedMisses     float64 `json:"learned_deadline_misses"`
}

// simulateHoldout is -learn-holdout: goodput-carbon with -provision on
// every workload from each start, the oracle on each run, then for each
// start the Planner with thresholds learned (provision.Learn) from the
// other starts' runs, run on that start: learned against the oracle on
// weeks it did not learn from. Prints learned_holdout.
func simulateHoldout(ctx context.Context, o options, g gridSettings, cluster accel.Cluster, apps map[string]*sim.Application, workloads []sim.Workload, stdout, stderr io.Writer) error {
	weeks, err := learnWeeks("-learn-holdout", o.learnHoldout, g)
	if err != nil {
		return err
	}
	if len(weeks) < 2 {
		return usage("-learn-holdout needs at least two start times (each is held out in turn)")
	}
	power := energy.PowerModel{PUE: o.pue}
	var cfgs []sim.Config
	for _, start := range weeks {
		for _, w := range workloads {
			cfgs = append(cfgs, provisionedRun(o, g, cluster, apps, w, start, planner(power)))
		}
	}
	fmt.Fprintf(stderr, "learn-holdout: %d run(s) of goodput-carbon with -provision (%d start(s) × %d workload(s))\n", len(cfgs), len(weeks), len(workloads))
	prov, err := sim.RunAll(ctx, cfgs, 0)
	if err != nil {
		return fmt.Errorf("learn-holdout: runs from %s: %w", o.learnHoldout, err)
	}
	W := len(workloads)
	rows := make([]holdoutWeek, len(weeks))
	inputs := make([]provision.OracleInput, len(prov))
	for k, start := range weeks {
		gk := g
		gk.start = start
		s := summary{Name: provisioned, results: prov[k*W : (k+1)*W]}
		addCarbon(&s)
		orc, err := oracleSummary(o, gk, cluster, s)
		if err != nil {
			return err
		}
		rows[k] = holdoutWeek{Start: start.Format("2006-01-02"), ProvisionKg: *s.CarbonKg, OracleKg: *orc.CarbonKg}
		for i := range W {
			if inputs[k*W+i], _, _, _, err = oracleInput(o, g.series, start, cluster, prov[k*W+i]); err != nil {
				return err
			}
		}
	}
	cfgs = cfgs[:0]
	for k, start := range weeks {
		var train []provision.OracleInput
		for m := range weeks {
			if m != k {
				train = append(train, inputs[m*W:(m+1)*W]...)
				rows[k].LearnedFrom = append(rows[k].LearnedFrom, weeks[m].Format("2006-01-02"))
			}
		}
		l, err := provision.Learn(train, provision.LearnOptions{})
		if err != nil {
			return err
		}
		rows[k].Hold, rows[k].OffAfter = l.Hold.String(), l.OffAfter.String()
		fmt.Fprintf(stderr, "  held out %s: learned Hold %v, OffAfter %v (disagreement %.3f nodes per slot)\n", rows[k].Start, l.Hold, l.OffAfter, l.Disagreement)
		for _, w := range workloads {
			cfgs = append(cfgs, provisionedRun(o, g, cluster, apps, w, start, l.Rule.Planner(planner(power))))
		}
	}
	fmt.Fprintf(stderr, "learn-holdout: %d run(s) of the learned policy\n", len(cfgs))
	learned, err := sim.RunAll(ctx, cfgs, 0)
	if err != nil {
		return fmt.Errorf("learn-holdout: learned runs from %s: %w", o.learnHoldout, err)
	}
	for k := range weeks {
		s := summary{Name: learnedName, results: learned[k*W : (k+1)*W]}
		addCarbon(&s)
		rows[k].LearnedKg, rows[k].LearnedMisses = *s.CarbonKg, *s.DeadlineMisses
		rows[k].LearnedOverOracle = rows[k].LearnedKg/rows[k].OracleKg - 1
	}
	if o.json {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(struct {
			LearnedHoldout []holdoutWeek `json:"learned_holdout"`
		}{rows})
	}
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "held-out start	learned from	hold	off after	learned CO2 (kg)	provision CO2 (kg)	oracle CO2 (kg)	learned vs oracle	deadline misses	")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s	%s	%s	%s	%.3f	%.3f	%.3f	%+.2f%%	%.2f	\n", r.Start, strings.Join(r.LearnedFrom, ","), r.Hold, r.OffAfter,
			r.LearnedKg, r.ProvisionKg, r.OracleKg, 100*r.LearnedOverOracle, r.LearnedMisses)
	}
	return tw.Flush()
}

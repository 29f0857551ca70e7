// Command simulate replays workloads of deep-learning jobs on a simulated
// cluster through goodsched's policies and compares them: the goodput
// policy (Pollux, Sia) against the Tiresias and Optimus baselines, on the
// measured profiles and workloads of the Pollux artifact.
//
// With no flags it replays the eight embedded 160-job Pollux workloads at
// 1.0× load on 16 nodes × 4 T4 with the goodput, tiresias and optimus
// policies, reports progress on stderr, prints a comparison table and writes
// SVG plots (JCT distribution per policy; GPUs in use over time) and a
// per-job CSV per policy to ./simulate-out.
//
//	go run ./examples/simulate
//	go run ./examples/simulate -workload workloads-2.0 -policies goodput,tiresias
//	go run ./examples/simulate -json
//
// Flags:
//
//	-workload FILE|DIR  a workload CSV or a directory of them (Pollux layout:
//	                    name,time,application,num_replicas,batch_size); names
//	                    that do not exist on disk are looked up in the
//	                    embedded data: workloads, workloads-0.5, -1.5, -2.0,
//	                    workloads-realistic, or one file such as
//	                    workloads/workload-6.csv (default "workloads")
//	-philly FILE        build the workload from a Philly-derived trace
//	                    (CSV or .csv.gz) instead; -jobs sets how many jobs
//	-cluster SPEC       accel spec, e.g. "16x4:t4" or
//	                    "6x4:t4,2x8:a100-40gb,3x8:rtx2080ti" (default 16x4:t4)
//	-policies LIST      comma-separated: goodput (per-type models on mixed
//	                    clusters), goodput-blind, tiresias, optimus (with
//	                    oracle), fifo, gavel (max-min fairness, oracle
//	                    throughputs), gavel-blind (the same, heterogeneity-
//	                    blind), goodput-carbon (goodput, with delay-tolerant
//	                    jobs run in clean hours; needs -carbon and -slack to
//	                    act) (default goodput,tiresias,optimus)
//	-interval D         scheduling round, 1s to 24h (default 0: each
//	                    policy's own, 60 s, or 6 minutes for gavel and
//	                    gavel-blind, Gavel's round)
//	-profiles DIRS      extra profile directories (comma-separated), searched
//	                    before the embedded Pollux traces; e.g. Sia's
//	                    per-type traces
//	-interference F     slowdown of distributed jobs sharing a node (default 0)
//	-explore N          goodput jobs may grow to N × the most GPUs they have
//	                    run on (default 4; 2 is the Pollux simulator's rule)
//	-mtbf D             mean time between failures per node (default 0: none)
//	-seed N             seed for failures and Philly sampling (default 1)
//	-out DIR            where plots and per-job CSVs go ("" = none;
//	                    default ./simulate-out, none with -json unless set)
//	-json               print one JSON object instead of the table
//	-cpuprofile FILE    write a CPU profile of the simulation (for go tool pprof)
//	-carbon FILE        grid carbon intensity (any format package carbon reads,
//	                    optionally .gz; "embedded" = California 2022, hourly,
//	                    Electricity Maps, ODbL): every run is charged for the
//	                    energy of its busy and idle devices, and the JSON and
//	                    table gain energy_kwh, carbon_kg and deadline_misses
//	-start TIME         where in the -carbon series the workload starts
//	                    (RFC 3339 or YYYY-MM-DD; default: the series' start)
//	-slack D            each job's deadline is its submission + isolated run
//	                    time + D, and it is delay-tolerant (default 0: none)
//	-pue F              power usage effectiveness (default 1)
//	-carbon-weight W    goodput-carbon's carbon weight in (0, 1] (default 1)
//	-sweep LIST         also run goodput-carbon at each of these carbon weights
//	                    (e.g. 0.25,0.5,0.75,1) and write carbon-tradeoff.svg:
//	                    average JCT against carbon, goodput marked apart
//	-provision          goodput-carbon powers down (suspends or switches off)
//	                    the nodes its jobs' carbon plans do not need (package
//	                    provision; needs -carbon and -slack); other policies
//	                    keep every node on
//	-oracle             add a policy named oracle: goodput-carbon's schedule
//	                    with the offline-optimal node states (provision.Oracle,
//	                    knowing the future; a lower bound for provisioning it;
//	                    one device type, identical nodes)
//	-learn-from LIST    add a policy named learned: goodput-carbon provisioned
//	                    by the Planner with thresholds (Hold, OffAfter) fitted
//	                    to provision.Oracle's node states on goodput-carbon's
//	                    -provision runs from these start times (e.g.
//	                    2022-01-10,2022-04-11,2022-07-11; provision.Learn);
//	                    evaluate on a -start it did not learn from
//	-joint-bound        add a row joint-bound: each job's device time (the
//	                    least goodput or goodput-carbon spent on it) re-timed
//	                    into the cleanest hours of its window at active watts,
//	                    no idle device (location.Oracle, exact): a bound for
//	                    re-planning jobs and nodes together
//	-learn-holdout LIST each start time held out in turn: the learned policy
//	                    fitted on the other starts' -provision runs, against
//	                    the oracle on the held-out one (needs -carbon, -slack;
//	                    -json prints learned_holdout)
//	-topology gb200|FILE  network tiers above the node: "gb200" is 32 NVL72
//	                    racks (576 nodes × 4 GPUs) under 8 IB leaves and a
//	                    spine, with the workloads merged and their GPU counts
//	                    × 4; FILE is a Slurm topology.conf/.yaml or Volcano
//	                    HyperNode YAML over the -cluster's nodes. Gangs keep
//	                    1, 1/1.908 or 1/3.346 of their speed inside a domain
//	                    of the innermost level, the next one, or beyond
//	                    (Gavel's V100 medians); gangs of half the innermost
//	                    domain or more require one. Every policy runs with the
//	                    kueue-bestfit, kai-binpack and default (goodsched's
//	                    least-loss) placers; the JSON adds stranded_gpus_avg
//	                    and required_violations
//	-fleet FILE         replay the workload (one; -philly) across a fleet of
//	                    clusters (JSON: {"clusters": [{"name", "region",
//	                    "cluster"}], "bandwidth_gbps"}; see fleet.go), routed
//	                    and migrated by package fleet, against every job
//	                    staying where it was submitted; -json prints "fleet"
//	-tiers LIST         with -fleet: each job's service tier drawn with these
//	                    shares (premium=0.2,standard=0.5,basic=0.3), replayed
//	                    with tiers enforced (preemptive FIFO by tier) and
//	                    against a baseline by tier priority without
//	                    preemption; -json adds "tiers" and
//	                    "baseline_standard_avg_jct_s"
//	-tenants vc|FILE    multi-tenant comparison of one policy (default goodput)
//	                    on one workload: "vc" makes the trace's 11 largest
//	                    virtual clusters queues (the others share "other")
//	                    with quotas by GPU-time share; FILE is a quotas file
//	                    (JSON, see quotasFile in tenants.go and README.md).
//	                    Runs three modes side by side: static (each tenant
//	                    only its quota), shared (one pool), borrow (quotas
//	                    with borrowing), and prints a per-tenant table; -json
//	                    adds "tenancy"
//	-variability PATH   per-GPU speed variability (PAL, SC'24): a directory
//	                    laid out as PAL's artifact (profiles.json mapping
//	                    classes to aggregated CSVs), one aggregated CSV, or a
//	                    PerfVar table; measured GPUs are mapped onto the
//	                    cluster deterministically. The scheduler starts from
//	                    PAL's binned profile and learns online
//	-locality-penalty F steps of a gang spanning nodes take F times longer
//	                    (default 1: none)
//	-slowdowns FILE     interference episodes, CSV node,start,end,factor
//	                    (seconds from the workload's start)
//	-device-steps       gangs also report each device's own part of the
//	                    step (each worker's compute time), not only the
//	                    gang's step time
//	-placers LIST       run every policy with every placer: default,
//	                    packed-sticky, pm-first, pal (with -topology also
//	                    kueue-bestfit, kai-binpack); names become
//	                    POLICY/PLACER
//	-serve FILE         an inference service beside the training (JSON spec:
//	                    trace, peak_replicas, ...; serve.go, README.md): runs
//	                    -serve-modes and prints serving_modes
//	-serve-modes LIST   alone (the service only), static (a split sized for
//	                    its peak), joint (autoscaled replicas first, training
//	                    takes the rest) (default alone,static,joint)
//
// Exit status 2 means bad input (a one-line message on stderr); 1 means the
// simulation failed.
package main

import (
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"github.com/goodsched/goodsched/accel"
	"github.com/goodsched/goodsched/energy"
	"github.com/goodsched/goodsched/goodput"
	"github.com/goodsched/goodsched/provision"
	"github.com/goodsched/goodsched/scheduler/sim"
	"github.com/goodsched/goodsched/scheduler/sim/polluxdata"
)

func main() {
	os.Exit(run(context.Background(), os.Args[1:], os.Stdout, os.Stderr))
}

type options struct {
	workload, philly, cluster, policies, profiles, out string
	cpuprofile                                         string
	interval, mtbf                                     time.Duration
	interference                                       float64
	seed                                               uint64
	jobs, explore                                      int
	json                                               bool
	carbon, start, sweep                               string
	slack                                              time.Duration
	pue, carbonWeight                                  float64
	// tenants is -tenants: "" (none), "vc" or a quotas file.
	tenants string
	// workers is -workers: "" (only the workload's workers column) or
	// "replicas".
	workers string
	// provision is -provision: goodput-carbon powers idle nodes down.
	provision bool
	// oracle is -oracle: add the oracle row.
	oracle bool
	// learnFrom is -learn-from: the training starts of the learned row;
	// learned the rule fitted on them.
	learnFrom string
	learned   provision.Rule
	// learnHoldout is -learn-holdout: starts each held out in turn.
	learnHoldout string
	// jointBound is -joint-bound: add the joint-bound row.
	jointBound bool
	// topology is -topology: "" (none), "gb200" or a topology file.
	topology string
	// Per-device speed (variability.go) and placers (placers.go).
	variability, slowdowns, placers string
	localityPenalty                 float64
	deviceSteps                     bool
	// fleet is -fleet: a fleet file (fleet.go) or ""; tiers is -tiers.
	fleet, tiers string
	// serve is -serve, a service spec file ("" = none), and serveModes
	// -serve-modes (serve.go).
	serve, serveModes string
}

// errUsage marks bad input: exit status 2.
var errUsage = errors.New("usage")

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var o options
	fl := flag.NewFlagSet("simulate", flag.ContinueOnError)
	fl.SetOutput(io.Discard) // errors are reported below, in one line
	fl.StringVar(&o.workload, "workload", "workloads", "workload CSV or directory (embedded names: workloads, workloads-0.5, workloads-1.5, workloads-2.0, workloads-realistic)")
	fl.StringVar(&o.philly, "philly", "", "Philly-derived trace (CSV or .csv.gz) to build the workload from, instead of -workload")
	fl.IntVar(&o.jobs, "jobs", 10000, "jobs to take from the -philly trace")
	fl.StringVar(&o.cluster, "cluster", "16x4:t4", "cluster spec")
	fl.StringVar(&o.policies, "policies", "goodput,tiresias,optimus", "comma-separated policies: goodput, goodput-blind, tiresias, optimus, fifo, gavel, gavel-blind, goodput-carbon, easyscale, easyscale-homo, dmr")
	fl.Var((*durationFlag)(&o.interval), "interval", "scheduling round, a `duration` (0 = each policy's own: 60s, 6m for gavel and gavel-blind)")
	fl.StringVar(&o.profiles, "profiles", "", "extra profile directories, comma-separated, searched before the embedded Pollux traces")
	fl.Float64Var(&o.interference, "interference", 0, "slowdown of distributed jobs sharing a node, in [0,1)")
	fl.IntVar(&o.explore, "explore", goodput.DefaultExplore, "goodput jobs may grow to this many times the most GPUs they have run on (Pollux: 2)")
	fl.Var((*durationFlag)(&o.mtbf), "mtbf", "mean time between failures per node, a `duration` (0 = none)")
	fl.Uint64Var(&o.seed, "seed", 1, "seed for failures and Philly sampling")
	fl.StringVar(&o.out, "out", "simulate-out", "directory for SVG plots and per-job CSVs (\"\" = none; with -json, none unless set)")
	fl.BoolVar(&o.json, "json", false, "print one JSON object instead of the table")
	fl.StringVar(&o.cpuprofile, "cpuprofile", "", "write a CPU profile of the simulation to this file")
	fl.StringVar(&o.carbon, "carbon", "", "carbon-intensity file (any format package carbon reads, optionally .gz; \"embedded\" = California 2022, ODbL)")
	fl.StringVar(&o.start, "start", "", "time in the -carbon series the workload starts at (RFC 3339 or YYYY-MM-DD; default: the series' start)")
	fl.Var((*durationFlag)(&o.slack), "slack", "deadline = submission + isolated run time + slack, a `duration` such as 24h; jobs become delay-tolerant (0 = no deadlines)")
	fl.Float64Var(&o.pue, "pue", 1, "power usage effectiveness applied to energy and carbon")
	fl.Float64Var(&o.carbonWeight, "carbon-weight", 1, "goodput-carbon's carbon weight, in (0, 1]")
	fl.StringVar(&o.sweep, "sweep", "", "comma-separated carbon weights to run goodput-carbon at; writes carbon-tradeoff.svg")
	fl.StringVar(&o.workers, "workers", "", "replicas: every job without a workers column value keeps W = its num_replicas logical workers (EasyScale), whatever devices it runs on")
	fl.StringVar(&o.topology, "topology", "", "gb200 (32 NVL72 racks, 576 nodes × 4 GPUs, two IB tiers; merged Pollux workloads × 4 GPUs) or a topology file (Slurm topology.conf/.yaml, Volcano HyperNodes): compare the kueue-bestfit, kai-binpack and default placers per policy")
	fl.StringVar(&o.tenants, "tenants", "", "vc (the trace's 11 largest virtual clusters as queues, quotas by GPU-time share) or a quotas file (JSON): run static, shared and borrow side by side")
	fl.BoolVar(&o.provision, "provision", false, "goodput-carbon powers nodes down (suspend, off) that its jobs' carbon plans do not need (package provision), its jobs planned jointly on the cluster's devices (carbonaware.Policy.Joint); other policies keep every node on")
	fl.BoolVar(&o.oracle, "oracle", false, "add a policy named oracle: goodput-carbon's schedule with the offline-optimal node states (provision.Oracle, a lower bound)")
	fl.StringVar(&o.learnFrom, "learn-from", "", "comma-separated start times (e.g. 2022-01-10,2022-04-11,2022-07-11): add a policy named learned, goodput-carbon provisioned with thresholds fitted to the oracle on those weeks (provision.Learn)")
	fl.StringVar(&o.learnHoldout, "learn-holdout", "", "comma-separated start times: for each, goodput-carbon provisioned with thresholds learned (provision.Learn) from the others' -provision runs against the oracle; prints learned_holdout")
	fl.BoolVar(&o.jointBound, "joint-bound", false, "add a row joint-bound: the least device time goodput or goodput-carbon spent on each job, re-timed into the cleanest hours of its window with perfect provisioning (location.Oracle); a bound for jointly re-planning jobs and nodes")
	fl.StringVar(&o.variability, "variability", "", "per-GPU variability measurements: a directory laid out as PAL's artifact (profiles.json + aggregated CSVs), one aggregated CSV, or a PerfVar table")
	fl.Float64Var(&o.localityPenalty, "locality-penalty", 1, "how many times longer the steps of a gang spanning nodes take (1 = none)")
	fl.StringVar(&o.slowdowns, "slowdowns", "", "interference episodes: CSV node,start,end,factor (seconds from the workload's start)")
	fl.BoolVar(&o.deviceSteps, "device-steps", false, "gangs also report each device's own part of the step (each worker's compute time), not only the gang's step time")
	fl.StringVar(&o.placers, "placers", "", "comma-separated placers to run every policy with: default, packed-sticky, pm-first, pal (names become POLICY/PLACER)")
	fl.StringVar(&o.fleet, "fleet", "", "fleet file (JSON: clusters with name, region, cluster spec; bandwidth_gbps): replay the trace across the fleet, routed and migrated, against every job staying where submitted")
	fl.StringVar(&o.tiers, "tiers", "", "with -fleet: service tiers drawn per job, e.g. premium=0.2,standard=0.5,basic=0.3 (JSON tiers[] and baseline_standard_avg_jct_s)")
	fl.StringVar(&o.serve, "serve", "", "inference service spec (JSON: trace, peak_replicas, ...; see serve.go): run the service beside the training workload in each of -serve-modes")
	fl.StringVar(&o.serveModes, "serve-modes", "alone,static,joint", "with -serve: alone (the service only), static (a split sized for its peak), joint (autoscaled, training takes the rest)")
	if err := fl.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(stderr, "usage: simulate [flags]\n\n"+
				"simulate replays workloads of deep-learning training jobs on a simulated\n"+
				"cluster through goodsched's scheduling policies (goodput, Tiresias, Optimus,\n"+
				"FIFO, Gavel) and compares job completion times, makespan and GPU-hours.\n\nflags:\n")
			fl.SetOutput(stderr)
			fl.PrintDefaults()
			return 0
		}
		fmt.Fprintf(stderr, "simulate: %v\n", err)
		return 2
	}
	if fl.NArg() > 0 {
		fmt.Fprintf(stderr, "simulate: unexpected argument %q\n", fl.Arg(0))
		return 2
	}
	outSet := false
	fl.Visit(func(f *flag.Flag) { outSet = outSet || f.Name == "out" })
	if o.json && !outSet {
		o.out = "" // -json is for machines: write no files they did not ask for
	}
	if (o.tenants != "" || o.serve != "") && !policiesSet(fl) {
		o.policies = "goodput" // the tenancy and serving comparisons run one policy
	}
	if o.cpuprofile != "" {
		f, err := os.Create(o.cpuprofile)
		if err != nil {
			fmt.Fprintf(stderr, "simulate: -cpuprofile: %v\n", err)
			return 2
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			fmt.Fprintf(stderr, "simulate: -cpuprofile: %v\n", err)
			return 1
		}
		defer pprof.StopCPUProfile()
	}
	if err := simulate(ctx, o, stdout, stderr); err != nil {
		fmt.Fprintf(stderr, "simulate: %v\n", err)
		if errors.Is(err, errUsage) {
			return 2
		}
		return 1
	}
	return 0
}

// summary is one policy's metrics averaged over the workloads.
type summary struct {
	Name      string  `json:"name"`
	AvgJCT    float64 `json:"avg_jct_s"`
	P50JCT    float64 `json:"p50_jct_s"`
	P99JCT    float64 `json:"p99_jct_s"`
	Makespan  float64 `json:"makespan_s"`
	GPUHours  float64 `json:"gpu_hours"`
	Jobs      float64 `json:"jobs"`
	Completed float64 `json:"completed"`
	Restarts  float64 `json:"restarts"`
	AvgFTF    float64 `json:"avg_ftf"`
	Workloads int     `json:"workloads"`
	// With -carbon only: facility energy, emissions and deadline misses
	// per workload.
	EnergyKWh      *float64 `json:"energy_kwh,omitempty"`
	CarbonKg       *float64 `json:"carbon_kg,omitempty"`
	DeadlineMisses *float64 `json:"deadline_misses,omitempty"`
	// With -topology only: mean over rounds of free GPUs in innermost
	// domains too small for any waiting gang, and assignments breaking
	// their required level, summed over rounds (per workload).
	StrandedGPUsAvg    *float64 `json:"stranded_gpus_avg,omitempty"`
	RequiredViolations *float64 `json:"required_violations,omitempty"`
	busyKg             float64  // of CarbonKg, the busy devices' (table only)
	results            []sim.Result
}

func usage(format string, a ...any) error {
	return fmt.Errorf("%w: %s", errUsage, fmt.Sprintf(format, a...))
}

func simulate(ctx context.Context, o options, stdout, stderr io.Writer) error {
	if o.fleet != "" || o.tiers != "" {
		return simulateFleet(ctx, o, stdout, stderr)
	}
	reg := registry()
	if !(o.carbonWeight > 0 && o.carbonWeight <= 1) {
		return usage("-carbon-weight %v is outside (0, 1]", o.carbonWeight)
	}
	reg["goodput-carbon"] = carbonSpec(o.carbonWeight, o.provision)
	names, err := parsePolicies(o.policies, reg)
	if err != nil {
		return usage("-policies: %v", err)
	}
	grid, err := gridOptions(o, reg, &names)
	if err != nil {
		return err
	}
	if err := checkProvision(o); err != nil {
		return err
	}
	cluster, err := accel.ParseSpec(o.cluster)
	if err != nil {
		return usage("-cluster: %v", err)
	}
	if err := checkOracle(o, cluster, &names); err != nil {
		return err
	}
	if o.learnHoldout != "" && o.learnFrom == "" {
		if _, err := checkLearnable("-learn-holdout", o.learnHoldout, o, grid, cluster); err != nil {
			return err
		}
	}
	if o.jointBound {
		if o.carbon == "" || o.slack <= 0 || len(cluster.Types()) != 1 {
			return usage("-joint-bound needs -carbon, -slack and one device type")
		}
		if !containsName(names, provisioned) {
			names = append(names, provisioned)
		}
	}
	learnFrom, err := checkLearn(o, grid, cluster, reg, &names)
	if err != nil {
		return err
	}
	vary, err := variabilityConfig(o, cluster)
	if err != nil {
		return err
	}
	if o.interval != 0 && (o.interval < time.Second || o.interval > sim.MaxInterval) {
		return usage("-interval %v is outside [1s, %v]", o.interval, sim.MaxInterval)
	}
	if !(o.interference >= 0 && o.interference < 1) {
		return usage("-interference %v is outside [0,1)", o.interference)
	}
	if o.mtbf < 0 || o.jobs < 1 || o.explore < 1 {
		return usage("-mtbf must be ≥ 0, -jobs ≥ 1 and -explore ≥ 1")
	}
	var sources []sim.ProfileSource
	for _, d := range strings.Split(o.profiles, ",") {
		if d = strings.TrimSpace(d); d != "" {
			if st, err := os.Stat(d); err != nil || !st.IsDir() {
				return usage("-profiles: %s is not a directory", d)
			}
			sources = append(sources, sim.ProfileSource{FS: os.DirFS(d), Dir: "."})
		}
	}
	sources = append(sources, sim.ProfileSource{FS: polluxdata.FS, Dir: "traces"})
	apps, err := sim.LoadProfiles(sim.ProfileOptions{}, sources...)
	if err != nil {
		return usage("-profiles: %v", err)
	}
	workloads, err := loadWorkloads(o, apps)
	if err != nil {
		return err
	}
	if workloads, err = withWorkers(o.workers, workloads); err != nil {
		return err
	}
	tr, err := setupTopology(o, &cluster, &workloads)
	if err != nil {
		return err
	}
	if names, err = withPlacers(o.placers, reg, names, tr); err != nil {
		return err
	}
	mixed := len(cluster.Types()) > 1
	if err := checkProfiled(cluster, apps, workloads, o.cluster, stderr); err != nil {
		return err
	}
	if o.serve != "" {
		return simulateServing(ctx, o, names, reg, cluster, apps, workloads, stdout, stderr)
	}
	if o.learnHoldout != "" {
		return simulateHoldout(ctx, o, grid, cluster, apps, workloads, stdout, stderr)
	}
	ten, err := setupTenancy(o, names, workloads, cluster)
	if err != nil {
		return err
	}
	if len(learnFrom) > 0 {
		if o.learned, err = learnRule(ctx, o, grid, learnFrom, cluster, apps, workloads, stderr); err != nil {
			return err
		}
	}

	// One config per (policy, workload); all run in parallel.
	var cfgs []sim.Config
	var labels []string
	var done, rounds atomic.Int64
	total := len(names) * len(workloads)
	for _, n := range names {
		spec := reg[n]
		for _, w := range workloads {
			p, err := spec.build()
			if err != nil {
				return fmt.Errorf("policy %s: %w", n, err)
			}
			cfgs = append(cfgs, sim.Config{
				Cluster: cluster, Jobs: w.Jobs, Apps: apps, Policy: p, Placer: spec.placer,
				Kind: spec.kind, Oracle: spec.oracle, PerType: spec.perType && mixed,
				Interval: o.interval, InterferenceSlowdown: o.interference, Explore: o.explore,
				Faults:   sim.Faults{MTBF: o.mtbf, Seed: o.seed},
				Progress: func(sim.Status) { rounds.Add(1) },
				Carbon:   grid.series, Start: grid.start, Slack: o.slack, Power: energy.PowerModel{PUE: o.pue},
				Provision:   provisionerFor(o, n, energy.PowerModel{PUE: o.pue}),
				Variability: vary,
			})
			if tr != nil {
				cfgs[len(cfgs)-1].Tiers = tr.tiers(len(cfgs) - 1)
			}
			labels = append(labels, n+"/"+w.Name)
		}
	}
	if ten != nil {
		if cfgs, labels, err = ten.addModes(cfgs, labels, reg[names[0]]); err != nil {
			return err
		}
		total = len(cfgs)
	}
	fmt.Fprintf(stderr, "simulating %d workload(s) × %d policies (%s) on %s (%d devices)\n",
		len(workloads), len(names), strings.Join(names, ", "), o.cluster, cluster.Size())
	start := time.Now()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // progress on stderr, every 2 s of wall time
		defer wg.Done()
		t := time.NewTicker(2 * time.Second)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				fmt.Fprintf(stderr, "  %5.1fs  %d/%d runs done, %d rounds simulated\n", time.Since(start).Seconds(), done.Load(), total, rounds.Load())
			}
		}
	}()
	results := make([]sim.Result, len(cfgs))
	var runErr error
	var mu sync.Mutex
	var rwg sync.WaitGroup
	sem := make(chan struct{}, max(1, min(len(cfgs), runtime.GOMAXPROCS(0))))
	for i := range cfgs {
		rwg.Add(1)
		sem <- struct{}{}
		go func() {
			defer rwg.Done()
			defer func() { <-sem }()
			r, err := sim.Run(ctx, cfgs[i])
			mu.Lock()
			defer mu.Unlock()
			if err != nil && runErr == nil {
				runErr = fmt.Errorf("%s: %w", labels[i], err)
			}
			results[i] = r
			done.Add(1)
		}()
	}
	rwg.Wait()
	close(stop)
	wg.Wait()
	if runErr != nil {
		return runErr
	}
	fmt.Fprintf(stderr, "done in %.1fs\n", time.Since(start).Seconds())

	sums := make([]summary, len(names))
	for k, n := range names {
		s := summary{Name: n, Workloads: len(workloads)}
		for w := range workloads {
			r := results[k*len(workloads)+w]
			s.results = append(s.results, r)
			s.AvgJCT += r.AvgJCT.Seconds()
			s.P50JCT += r.P50JCT.Seconds()
			s.P99JCT += r.P99JCT.Seconds()
			s.Makespan += r.Makespan.Seconds()
			s.GPUHours += r.GPUHours
			s.Jobs += float64(len(r.Jobs))
			s.Completed += float64(r.Completed)
			s.Restarts += float64(r.Restarts)
			s.AvgFTF += r.AvgFTF
		}
		f := float64(len(workloads))
		s.AvgJCT, s.P50JCT, s.P99JCT, s.Makespan, s.GPUHours = s.AvgJCT/f, s.P50JCT/f, s.P99JCT/f, s.Makespan/f, s.GPUHours/f
		s.Jobs, s.Completed, s.Restarts, s.AvgFTF = s.Jobs/f, s.Completed/f, s.Restarts/f, s.AvgFTF/f
		if o.carbon != "" {
			addCarbon(&s)
		}
		sums[k] = s
	}
	if tr != nil {
		tr.summarise(sums, len(workloads))
	}
	if o.out != "" {
		if err := writeOutputs(o.out, names, workloads, sums, cluster.Size()); err != nil {
			return err
		}
		fmt.Fprintf(stderr, "wrote plots and per-job CSVs to %s\n", o.out)
	}
	if o.sweep != "" {
		dir := o.out
		if dir == "" {
			dir = "simulate-out"
		}
		if err := plotTradeoff(filepath.Join(dir, "carbon-tradeoff.svg"), sums); err != nil {
			return err
		}
		fmt.Fprintf(stderr, "wrote %s\n", filepath.Join(dir, "carbon-tradeoff.svg"))
	}
	if sums, err = withOracle(o, grid, cluster, sums); err != nil {
		return err
	}
	if sums, err = withJointBound(o, grid, cluster, sums); err != nil {
		return err
	}
	if o.json {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(struct {
			Policies []summary     `json:"policies"`
			Tenancy  []tenancyMode `json:"tenancy,omitempty"`
		}{sums, ten.modes(results)})
	}
	printTable(stdout, sums, len(workloads))
	if ten != nil {
		printTenancy(stdout, ten.modes(results))
	}
	return nil
}

// checkProfiled says up front, in one line, which of the cluster's device
// types no application of the workloads has a profile for: the simulator
// never gives such devices to a job, so they stay idle. When no type is
// covered at all nothing could run, and that is bad input.
func checkProfiled(cluster accel.Cluster, apps map[string]*sim.Application, workloads []sim.Workload, spec string, stderr io.Writer) error {
	used := map[string]*sim.Application{}
	for _, w := range workloads {
		for _, j := range w.Jobs {
			used[j.Application] = apps[j.Application]
		}
	}
	idle := sim.UnprofiledTypes(cluster, used)
	if len(idle) == 0 {
		return nil
	}
	var names []string
	for _, t := range idle {
		names = append(names, fmt.Sprintf("%s (%d devices)", t, cluster.Count(t)))
	}
	if len(idle) == len(cluster.Types()) {
		return usage("-cluster %s: no profile covers %s; add profiles for these types with -profiles", spec, strings.Join(names, ", "))
	}
	fmt.Fprintf(stderr, "simulate: no profile covers %s: those devices stay idle (add profiles with -profiles)\n", strings.Join(names, ", "))
	return nil
}

// loadWorkloads resolves -workload (disk first, then the embedded data)
// or builds the workload from -philly.
func loadWorkloads(o options, apps map[string]*sim.Application) ([]sim.Workload, error) {
	if o.philly != "" {
		f, err := os.Open(o.philly)
		if err != nil {
			return nil, usage("-philly: %v", err)
		}
		defer f.Close()
		var r io.Reader = f
		if strings.HasSuffix(o.philly, ".gz") {
			gz, err := gzip.NewReader(f)
			if err != nil {
				return nil, usage("-philly: %v", err)
			}
			defer gz.Close()
			r = gz
		}
		jobs, err := sim.ReadPhilly(r, apps, sim.PhillyOptions{Jobs: o.jobs, Seed: o.seed})
		if err != nil {
			return nil, usage("-philly: %v", err)
		}
		return []sim.Workload{{Name: "philly", Jobs: jobs}}, nil
	}
	var fsys fs.FS
	name := o.workload
	if _, err := os.Stat(name); err == nil {
		abs, err := filepath.Abs(name)
		if err != nil {
			return nil, usage("-workload: %v", err)
		}
		fsys, name = os.DirFS(filepath.Dir(abs)), filepath.Base(abs)
	} else if _, err := fs.Stat(polluxdata.FS, strings.Trim(name, "/")); err == nil {
		fsys, name = polluxdata.FS, strings.Trim(name, "/")
	} else {
		return nil, usage("-workload: %s is neither a file or directory nor an embedded workload", o.workload)
	}
	ws, err := sim.LoadWorkloads(fsys, name)
	if err != nil {
		return nil, usage("-workload: %v", err)
	}
	for _, w := range ws {
		for _, j := range w.Jobs {
			if apps[j.Application] == nil {
				return nil, usage("-workload %s: job %s uses %q, which has no profile", w.Name, j.Name, j.Application)
			}
		}
	}
	return ws, nil
}

func printTable(w io.Writer, sums []summary, workloads int) {
	best := -1.0
	for _, s := range sums {
		if !strings.HasPrefix(s.Name, "goodput") && (best < 0 || s.AvgJCT < best) {
			best = s.AvgJCT
		}
	}
	fmt.Fprintf(w, "mean over %d workload(s)\n", workloads)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	withCarbon := len(sums) > 0 && sums[0].CarbonKg != nil
	head := "policy\tavg JCT (h)\tp50 (h)\tp99 (h)\tmakespan (h)\tGPU-hours\tcompleted\trestarts\tavg FTF\tvs best baseline\t"
	if withCarbon {
		head += "energy (kWh)\tCO2 (kg)\tof it busy\tdeadline misses\t"
	}
	fmt.Fprintln(tw, head)
	for _, s := range sums {
		vs := "-"
		if best > 0 && s.AvgJCT > 0 {
			vs = fmt.Sprintf("%+.0f%%", 100*(s.AvgJCT/best-1))
		}
		fmt.Fprintf(tw, "%s\t%.2f\t%.2f\t%.2f\t%.1f\t%.0f\t%.0f/%.0f\t%.0f\t%.2f\t%s\t",
			s.Name, s.AvgJCT/3600, s.P50JCT/3600, s.P99JCT/3600, s.Makespan/3600, s.GPUHours, s.Completed, s.Jobs, s.Restarts, s.AvgFTF, vs)
		if withCarbon {
			fmt.Fprintf(tw, "%.1f\t%.2f\t%.2f\t%.2f\t", *s.EnergyKWh, *s.CarbonKg, s.busyKg, *s.DeadlineMisses)
		}
		fmt.Fprintln(tw)
	}
	tw.Flush()
}

// withWorkers applies -workers: "replicas" gives every job without a
// logical worker count W = its requested replicas (copies, the input is
// left alone); "" changes nothing.
func withWorkers(mode string, ws []sim.Workload) ([]sim.Workload, error) {
	switch mode {
	case "":
		return ws, nil
	case "replicas":
	default:
		return nil, usage("-workers %q: want replicas (or nothing)", mode)
	}
	out := make([]sim.Workload, len(ws))
	for i, w := range ws {
		out[i] = sim.Workload{Name: w.Name, Jobs: slices.Clone(w.Jobs)}
		for k := range out[i].Jobs {
			if j := &out[i].Jobs[k]; j.Workers == 0 {
				j.Workers = j.Replicas
			}
		}
	}
	return out, nil
}

// durationFlag is a time.Duration flag whose error says what a bare
// number lacks: "-slack 24" fails with "a duration needs a unit", not
// the flag package's "parse error".
type durationFlag time.Duration

func (d *durationFlag) String() string { return time.Duration(*d).String() }

func (d *durationFlag) Set(s string) error {
	v, err := time.ParseDuration(s)
	if err != nil {
		if _, numErr := strconv.ParseFloat(s, 64); numErr == nil {
			return fmt.Errorf("a duration needs a unit: %sh, %sm or %ss", s, s, s)
		}
		return fmt.Errorf("want a duration such as 24h or 90m")
	}
	*d = durationFlag(v)
	return nil
}

// Command benchmark measures goodsched's key figures on generated
// instances and prints a table (or, with -json, one flat JSON object):
//
//	goodput_fit_us               one goodput.Fit of 8 observations, µs
//	goodput_optimize_ns          one goodput.Model.Optimize, ns
//	placement_gangs_per_s        gangs placed and committed per second on 8,192 devices
//	place_gang512_10k_nodes_p99_ms  p99 of one topology-aware placement (topoplace, least-loss)
//	                             of a 512-device gang requiring one block, 10,000 nodes × 4
//	                             GB200 in NVL72 racks, half the nodes busy, ms (-quick: 1,000
//	                             nodes and 128 devices, same key)
//	network_top1_gain_points     how often netpredict's predicted-best of 8 candidate nodes is
//	                             the truly fastest, minus how often the most-free-GPUs node is,
//	                             in points, on a simulated asymmetric cluster (NICs 25–200
//	                             Gbit/s, rack congestion cycles, drifting CPU load)
//	round_goodput_160x64_ms      one Pollux-policy round, 160 jobs on 64 T4s (16×4), ms
//	round_goodput_2000x8192_ms   one Pollux-policy round, 2,000 jobs on 8,192 devices of 4 types, ms
//	goodput_vs_reference_fitness fast fitness / reference (Pollux GA) fitness, the
//	                             smallest ratio over the comparison instances (≥ 1 is good)
//	goodput_vs_reference_time    fast round time / reference round time on 160×64
//	maxmin_2048x4_ms             Gavel max-min fairness (scheduler/gavel.Solve), 2,048 jobs × 4 types, ms
//	maxmin_gap                   its proven relative gap (bound − objective) / bound
//	maxmin_10000x4_ms            the same solve at 10,000 jobs × 4 types, ms
//	autoscale_1000_services_ms   one tick of 1,000 services' serving.Predictive decisions
//	                             (after ten minutes of ticks), ms for all 1,000
//	provision_1000_nodes_ms      one provision.Planner decision (nodes on, suspended or off)
//	                             for 1,000 nodes of 4 T4 and 2,000 jobs, ms
//
// The planet-scale part (issue 19; -planet=false skips it) adds, each
// measured in the same run, with scheduler.Config{} (the Pollux policy):
//
//	round_goodput_40x64_ms                one round, 40 jobs on 64 T4s (16×4), ms
//	round_goodput_20000x100000_ms         one round, 20,000 jobs on 100,000 devices of 4 types
//	                                      (3,125×8 a100, v100 and h100, 6,250×4 t4), ms
//	round_goodput_steady_20000x100000_ms  the next round: the previous plan as Current, 1 min
//	                                      later, 2% of the jobs finished and as many arrived, on a
//	                                      Scheduler whose last round was the generated one, ms
//	round_goodput_50000x131072_ms         one round, 50,000 jobs on the 2,000×8,192 cluster × 16, ms
//	round_goodput_65536x1_ms              one cold round (no Current) on 65,536 one-T4 nodes (the
//	                                      key names nodes × devices per node): 5 adaptive jobs
//	                                      without MaxReplicas, speedup c/(1+α(c−1)) on c devices,
//	                                      α = 0.0005·(i+1), no cross-node penalty, ms
//	gavel_round_50000_ms                  one Scheduler.Schedule with gavel.NewPolicy (max-min
//	                                      fairness over gavel.Published's classes, Tolerance 0.005,
//	                                      as scheduler/gavel's BenchmarkPolicyRound) and
//	                                      placement.Packer: 50,000 jobs on 1,024×4 v100, 1,536×4
//	                                      p100 and 1,536×4 k80, each round on the previous plan, ms
//	scaling_exponent                      k of time ∝ (jobs + devices)^k, least squares of log
//	                                      time on log(jobs + devices) over 2,000×8,192 (the key
//	                                      above), 10,000×16,384, 20,000×100,000 and 50,000×131,072
//	rss_20000x100000_mib                  peak RSS of the process after the 20,000×100,000 rounds
//	                                      (getrusage maxrss; Linux only), MiB
//	rss_50000x131072_mib                  the same after the 50,000×131,072 rounds, MiB
//
// The fleet part (issue 50; -fleet=false skips it): 5 clusters, each a
// fifth of the generated cluster above (625×8 a100, v100 and h100,
// 1,250×4 t4), and 20,000 jobs waiting at the fleet, routed by
// fleet.Fleet to the clusters' Pollux-policy rounds, at GOMAXPROCS 5:
//
//	fleet_overhead_cpu_ratio              CPU time of the fleet layer alone (fleet.Fleet.Route:
//	                                      validation, routing, the clusters' inputs) over the
//	                                      CPU time of the 5 cluster rounds it feeds, each timed
//	                                      alone (-clock wall where CPU time is not measured)
//	fleet_round_100k_wall_ratio           wall time of fleet.Fleet.Schedule (one goroutine per
//	                                      cluster) over that of its slowest cluster round alone
//	fleet_route_5x20000_ms, fleet_round_5x20000_ms, fleet_slowest_cluster_round_5x20000_ms
//	                                      the parts of those ratios, ms
//	fleet_gomaxprocs, fleet_cores         5, and the machine's CPUs (the wall ratio needs 5)
//
// With -quick the clusters have 64 devices and there are 200 jobs (keys
// fleet_*_5x64_ms).
//
// Its instances come from their own random stream, so the keys above do
// not depend on -planet. Except for 40×64 (-reps), its round times are the
// median of min(-reps, 3) runs, and a round whose warm-up run alone takes
// longer than -budget (60 s) is reported as that one run. The
// "generated" rounds (all but 65536x1) start from the placement of two
// earlier rounds over two thirds of the jobs, as the keys above.
//
// With -quick the instances are smaller (20 jobs on 16 devices, 100 on
// 128, max-min at 256 and 512 jobs; planet: 40×64, the ladder 100×128,
// 200×256 (also the steady round), 400×512, 512 one-GPU nodes, Gavel at
// 500 jobs) and the keys name those sizes: round_goodput_20x16_ms,
// round_goodput_100x128_ms, maxmin_256x4_ms, maxmin_512x4_ms,
// round_goodput_200x256_ms, round_goodput_steady_200x256_ms,
// round_goodput_400x512_ms, round_goodput_512x1_ms, gavel_round_500_ms;
// the other keys are the same (no rss_* keys).
//
// Round times are wall-clock milliseconds (unless -clock cpu) of one
// Scheduler.Schedule at the process's GOMAXPROCS (Go's default unless the
// environment sets it; the program does not; the key gomaxprocs reports
// it), the median of -reps runs after one warm-up run (speedup curves
// memoise their values on first use, as they do across a host's rounds).
// Each run is on a Scheduler that has run one round before it, which
// indexed the cluster: the steady round's generated round, and for every
// other round a round without jobs (a Scheduler keeps the speedups its
// last round evaluated, so a Scheduler that ran the same input before
// would answer from them).
// Every ratio is measured in the same run. Instances are deterministic
// for a given -seed.
//
// With -clock cpu every time above (µs, ns, ms, gangs per second) is the
// process's user+system CPU time instead of wall-clock time (garbage
// collection on other threads included), which a busy machine disturbs
// less; the object then has clock_cpu = 1.
//
// With -parallel every Pollux-policy round searches its starts on two
// goroutines (scheduler.Pollux.Parallel: the same plans, in less wall
// time when GOMAXPROCS ≥ 2; measure it with -clock wall); the object
// then has parallel = 1.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/goodsched/goodsched/accel"
	"github.com/goodsched/goodsched/goodput"
	"github.com/goodsched/goodsched/placement"
	"github.com/goodsched/goodsched/scheduler"
	"github.com/goodsched/goodsched/scheduler/gavel"
	"github.com/goodsched/goodsched/scheduler/genetic"
)

func main() {
	cfg, err := parse(os.Args[1:], os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		os.Exit(0)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchmark:", err)
		os.Exit(2)
	}
	res, err := run(context.Background(), cfg, os.Stderr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchmark:", err)
		os.Exit(1)
	}
	if err := write(os.Stdout, res, cfg.json); err != nil {
		fmt.Fprintln(os.Stderr, "benchmark:", err)
		os.Exit(1)
	}
}

// parse reads the flags; any error is a usage error (exit status 2).
func parse(args []string, stderr io.Writer) (config, error) {
	var cfg config
	fs := flag.NewFlagSet("benchmark", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), "usage: benchmark [flags]\n\n"+
			"benchmark measures goodsched's key speed figures (goodput fit, placement,\n"+
			"scheduling rounds, the fast policy against Pollux's GA, Gavel max-min) on\n"+
			"generated instances and prints a table, or one flat JSON object.\n\nflags:\n")
		fs.PrintDefaults()
	}
	fs.BoolVar(&cfg.json, "json", false, "print one flat JSON object instead of a table")
	fs.Uint64Var(&cfg.seed, "seed", 1, "seed of the generated instances")
	fs.IntVar(&cfg.reps, "reps", 5, "timed repetitions per round figure (median reported)")
	fs.IntVar(&cfg.population, "population", 100, fmt.Sprintf("reference GA population, 2..%d (Pollux: 100)", genetic.MaxPopulation))
	fs.IntVar(&cfg.generations, "generations", 100, "reference GA generations (Pollux: 100)")
	fs.BoolVar(&cfg.quick, "quick", false, "small instances only (a smoke test; keys name the smaller sizes)")
	clockName := fs.String("clock", "wall", "what the times measure: wall (elapsed) or cpu (this process's user+system CPU time; Linux)")
	fs.BoolVar(&cfg.planet, "planet", true, "also measure the planet-scale rounds (20,000×100,000 and up; minutes)")
	fs.BoolVar(&cfg.fleet, "fleet", true, "also measure the fleet rounds (5 clusters × 20,000 devices, 20,000 jobs; minutes)")
	fs.BoolVar(&cfg.parallel, "parallel", false, "search the Pollux-policy rounds' starts on two goroutines (scheduler.Pollux.Parallel)")
	fs.DurationVar(&cfg.budget, "budget", time.Minute, "a planet-scale round whose warm-up alone takes longer is timed once (0 = no limit)")
	if err := fs.Parse(args); err != nil {
		return cfg, err
	}
	switch *clockName {
	case "wall":
	case "cpu":
		if !cpuClockWorks() {
			return cfg, fmt.Errorf("-clock cpu: not measured on this platform")
		}
		cfg.cpu = true
	default:
		return cfg, fmt.Errorf("-clock %q: want wall or cpu", *clockName)
	}
	if cfg.reps < 1 || cfg.population < 2 || cfg.population > genetic.MaxPopulation || cfg.generations < 1 || cfg.generations > 100_000 || cfg.budget < 0 || fs.NArg() > 0 {
		return cfg, fmt.Errorf("want -reps ≥ 1, -population in 2..%d, -generations in 1..100000, -budget ≥ 0, no arguments", genetic.MaxPopulation)
	}
	return cfg, nil
}

type config struct {
	json                    bool
	seed                    uint64
	reps                    int
	population, generations int
	quick                   bool
	cpu                     bool          // -clock cpu: time in process CPU, not wall
	planet                  bool          // measure the planet-scale part
	budget                  time.Duration // planet: warm-up longer than this = timed once (0 = no limit)
	parallel                bool          // Pollux rounds with Parallel
	fleet                   bool          // measure the fleet part
}

// goodput is the Scheduler configuration of the timed Pollux-policy rounds.
func (c config) goodput() scheduler.Config {
	return scheduler.Config{Policy: scheduler.Pollux{Parallel: c.parallel}}
}

// figure is one measured key.
type figure struct {
	key    string
	value  float64
	unit   string
	target string
}

func write(w io.Writer, figs []figure, asJSON bool) error {
	if asJSON {
		m := make(map[string]float64, len(figs))
		for _, f := range figs {
			m[f.key] = round(f.value)
		}
		b, err := json.Marshal(m)
		if err != nil {
			return err
		}
		_, err = fmt.Fprintln(w, string(b))
		return err
	}
	fmt.Fprintf(w, "%-38s %14s  %-8s %-22s %s\n", "key", "value", "unit", "target", "met")
	for _, f := range figs {
		fmt.Fprintf(w, "%-38s %14.4g  %-8s %-22s %s\n", f.key, f.value, f.unit, f.target, f.met())
	}
	return nil
}

// met says whether the value meets its target: "met", "missed", or ""
// for a figure without a target. A target is "≤ X" or "≥ X", followed by
// words that explain it; a value within 1e-9 (relative) of X meets it.
func (f figure) met() string {
	fields := strings.Fields(f.target)
	if len(fields) < 2 {
		return ""
	}
	bound, err := strconv.ParseFloat(fields[1], 64)
	if err != nil {
		return ""
	}
	// A ratio that equals its bound up to rounding (a fitness equal to
	// the reference's) meets it.
	tol := 1e-9 * max(math.Abs(bound), 1)
	ok := false
	switch fields[0] {
	case "≤":
		ok = f.value <= bound+tol
	case "≥":
		ok = f.value >= bound-tol
	default:
		return ""
	}
	if ok {
		return "met"
	}
	return "missed"
}

func round(v float64) float64 {
	if v == 0 || math.IsNaN(v) || math.IsInf(v, 0) {
		return v
	}
	p := math.Pow(10, 4-math.Ceil(math.Log10(math.Abs(v))))
	return math.Round(v*p) / p
}

func run(ctx context.Context, cfg config, log io.Writer) ([]figure, error) {
	var figs []figure
	add := func(key string, v float64, unit, target string) {
		figs = append(figs, figure{key, v, unit, target})
	}
	rng := rand.New(rand.NewPCG(cfg.seed, 11))
	clk := wallClock()
	if cfg.cpu {
		clk = cpuClock
	}

	fmt.Fprintln(log, "goodput: Fit and Optimize …")
	fitUS, optNS, err := goodputFigures(clk, rng, cfg.quick)
	if err != nil {
		return nil, err
	}
	add("goodput_fit_us", fitUS, "µs", "")
	add("goodput_optimize_ns", optNS, "ns", "")

	fmt.Fprintln(log, "placement: gangs per second …")
	gps, err := placementFigure(clk, rng, cfg.quick)
	if err != nil {
		return nil, err
	}
	add("placement_gangs_per_s", gps, "1/s", "")

	fmt.Fprintln(log, "topology: a 512-device gang requiring one block on 10,000 nodes …")
	// Their own random stream: the instances below stay as they were.
	topoRng := rand.New(rand.NewPCG(cfg.seed, 47))
	gangMS, err := topologyFigure(clk, topoRng, cfg.quick)
	if err != nil {
		return nil, err
	}
	add("place_gang512_10k_nodes_p99_ms", gangMS, "ms", "≤ 5")

	fmt.Fprintln(log, "network: telemetry-predicted step times on an asymmetric cluster …")
	gain, _, _, err := networkFigure(topoRng, cfg.quick, false)
	if err != nil {
		return nil, err
	}
	add("network_top1_gain_points", gain, "points", "≥ 30")

	small := shape{groups: []group{{16, 4, "t4"}}, jobs: 160}
	big := shape{groups: []group{{256, 8, "a100"}, {256, 8, "v100"}, {512, 4, "t4"}, {128, 16, "h100"}}, jobs: 2000}
	if cfg.quick {
		small = shape{groups: []group{{4, 4, "t4"}}, jobs: 20}
		big = shape{groups: []group{{8, 8, "a100"}, {16, 4, "t4"}}, jobs: 100}
	}
	fmt.Fprintln(log, "scheduler: Pollux policy round on", small.name(), "…")
	inSmall, err := instance(rng, small)
	if err != nil {
		return nil, err
	}
	fastCfg := cfg.goodput()
	fast, err := scheduler.New(fastCfg)
	if err != nil {
		return nil, err
	}
	smallMS, fastPlan, err := timeRoundBudget(ctx, clk, fastCfg, inSmall, nil, cfg.reps, 0, io.Discard)
	if err != nil {
		return nil, err
	}
	add("round_goodput_"+small.size()+"_ms", smallMS, "ms", "≤ 5")

	fmt.Fprintln(log, "scheduler: Pollux policy round on", big.name(), "…")
	inBig, err := instance(rng, big)
	if err != nil {
		return nil, err
	}
	bigMS, _, err := timeRoundBudget(ctx, clk, fastCfg, inBig, nil, cfg.reps, 0, io.Discard)
	if err != nil {
		return nil, err
	}
	add("round_goodput_"+big.size()+"_ms", bigMS, "ms", "≤ 500")

	// Fast vs reference on the 160×64 instance and on smaller ones.
	ga := genetic.Policy{Population: cfg.population, Generations: cfg.generations, Seed: cfg.seed}
	ref, err := scheduler.New(scheduler.Config{Policy: ga})
	if err != nil {
		return nil, err
	}
	fmt.Fprintln(log, "reference: Pollux GA on", small.name(), "…")
	start := clk()
	refPlan, err := ref.Schedule(ctx, inSmall)
	if err != nil {
		return nil, err
	}
	refMS := float64((clk() - start).Microseconds()) / 1000
	obj := scheduler.Pollux{}
	minRatio := math.Inf(1)
	compare := func(name string, in scheduler.Input, fp, rp scheduler.Plan) error {
		ff, err := obj.Fitness(in, fp)
		if err != nil {
			return err
		}
		fr, err := obj.Fitness(in, rp)
		if err != nil {
			return err
		}
		fmt.Fprintf(log, "  %-22s fitness fast %.5f reference %.5f\n", name, ff, fr)
		minRatio = min(minRatio, ff/fr)
		return nil
	}
	if err := compare(small.name(), inSmall, fastPlan, refPlan); err != nil {
		return nil, err
	}
	others := []shape{
		{groups: []group{{4, 4, "t4"}}, jobs: 8},
		{groups: []group{{4, 4, "t4"}}, jobs: 24},
		{groups: []group{{8, 4, "t4"}}, jobs: 16},
		{groups: []group{{2, 8, "a100"}, {4, 4, "t4"}, {2, 8, "v100"}}, jobs: 12},
		{groups: []group{{2, 8, "a100"}, {4, 4, "t4"}, {2, 8, "v100"}}, jobs: 40},
	}
	for _, sh := range others {
		in, err := instance(rng, sh)
		if err != nil {
			return nil, err
		}
		fp, err := fast.Schedule(ctx, in)
		if err != nil {
			return nil, err
		}
		rp, err := ref.Schedule(ctx, in)
		if err != nil {
			return nil, err
		}
		if err := compare(sh.name(), in, fp, rp); err != nil {
			return nil, err
		}
	}
	add("goodput_vs_reference_fitness", minRatio, "ratio", "≥ 1 on every instance")
	add("goodput_vs_reference_time", smallMS/refMS, "ratio", "")

	sizes := []int{2048, 10000}
	if cfg.quick {
		sizes = []int{256, 512}
	}
	for i, n := range sizes {
		fmt.Fprintf(log, "gavel: max-min fairness, %d jobs × 4 types …\n", n)
		ms, gap, err := maxMinFigure(ctx, clk, rng, n, 4, cfg.reps)
		if err != nil {
			return nil, err
		}
		key := fmt.Sprintf("maxmin_%dx4_ms", n)
		if i == 0 {
			add(key, ms, "ms", "≤ 50")
			add("maxmin_gap", gap, "ratio", "≤ 0.005")
		} else {
			add(key, ms, "ms", "")
		}
	}
	fmt.Fprintln(log, "serving: one autoscaler tick of 1,000 services …")
	autoMS, err := autoscaleFigure(clk, cfg.reps)
	if err != nil {
		return nil, err
	}
	add("autoscale_1000_services_ms", autoMS, "ms", "≤ 1000")
	fmt.Fprintln(log, "provision: one decision for 1,000 nodes and 2,000 jobs …")
	provMS, err := provisionFigure(clk, rng, 1000, 2000, cfg.reps)
	if err != nil {
		return nil, err
	}
	add("provision_1000_nodes_ms", provMS, "ms", "≤ 20")
	if cfg.planet {
		if err := planetFigures(ctx, cfg, clk, planet(cfg.quick, big), bigMS, log, add); err != nil {
			return nil, err
		}
	}
	if cfg.fleet {
		if err := fleetFigures(ctx, cfg, log, add); err != nil {
			return nil, err
		}
	}
	add("gomaxprocs", float64(runtime.GOMAXPROCS(0)), "", "")
	if cfg.cpu {
		add("clock_cpu", 1, "", "")
	}
	if cfg.parallel {
		add("parallel", 1, "", "")
	}
	return figs, nil
}

// maxMinFigure solves heterogeneity-aware max-min fairness on n
// single-device jobs and k types (n/8 devices per type; each job's
// throughput differs per type, and a fifth of the jobs cannot use some
// type). It returns the median solve time in ms over reps solves after a
// warm-up, and the solution's proven gap.
func maxMinFigure(ctx context.Context, clk clock, rng *rand.Rand, n, k, reps int) (ms, gap float64, err error) {
	p := gavel.Problem{Throughput: make([][]float64, n), Devices: make([]int, k)}
	for j := range k {
		p.Devices[j] = max(1, n/8)
	}
	for m := range n {
		row := make([]float64, k)
		base := 0.5 + 10*rng.Float64()
		for j := range k {
			if rng.IntN(5) > 0 || j == m%k {
				row[j] = base * (0.2 + 3*rng.Float64())
			}
		}
		p.Throughput[m] = row
	}
	sol, err := gavel.Solve(ctx, p, gavel.MaxMinFairness{}, nil)
	if err != nil {
		return 0, 0, err
	}
	ms, err = medianMS(clk, reps, nil, func() (err error) {
		sol, err = gavel.Solve(ctx, p, gavel.MaxMinFairness{}, nil)
		return err
	})
	if err != nil {
		return 0, 0, err
	}
	return ms, sol.Gap, nil
}

// after returns a Scheduler of cfg that has run one round: prev, or with
// prev nil a round without jobs on in's cluster (which indexes the
// cluster). A round timed on it is the one a host's Scheduler runs after
// prev: it keeps the cluster's index and prev's speedup evaluations, and
// nothing of an earlier timed round (a Scheduler reused for repetitions
// of one input would answer them from the first one's evaluations).
func after(ctx context.Context, cfg scheduler.Config, in scheduler.Input, prev *scheduler.Input) (*scheduler.Scheduler, error) {
	s, err := scheduler.New(cfg)
	if err != nil {
		return nil, err
	}
	first := scheduler.Input{Cluster: in.Cluster, Now: in.Now}
	if prev != nil {
		first = *prev
	}
	_, err = s.Schedule(ctx, first)
	runtime.GC() // its garbage, as medianMS's comment says
	return s, err
}

// clock reads a monotone time: elapsed or CPU time since some origin.
type clock func() time.Duration

// wallClock reads the elapsed time since it was made.
func wallClock() clock {
	t0 := time.Now()
	return func() time.Duration { return time.Since(t0) }
}

// medianMS runs f reps times (reps ≥ 1), each after prep (not timed; nil
// = none), and returns the median run time of f in milliseconds, or the
// first error.
func medianMS(clk clock, reps int, prep, f func() error) (float64, error) {
	ts := make([]float64, 0, reps)
	// Collect the previous figure's garbage first, as go test -bench does
	// before each benchmark: with -clock cpu, sweeping a large earlier
	// heap in the background would be charged to a small round's time.
	runtime.GC()
	for range reps {
		if prep != nil {
			if err := prep(); err != nil {
				return 0, err
			}
		}
		start := clk()
		if err := f(); err != nil {
			return 0, err
		}
		ts = append(ts, float64((clk()-start).Nanoseconds())/1e6)
	}
	slices.Sort(ts)
	return ts[len(ts)/2], nil
}

// goodputFigures times goodput.Fit on synthetic measurements and
// Model.Optimize on the fitted model.
func goodputFigures(clk clock, rng *rand.Rand, quick bool) (fitUS, optNS float64, err error) {
	truth := randomParams(rng, 1)
	var obs []goodput.Observation
	for _, sh := range [][3]int{{1, 1, 32}, {1, 1, 128}, {1, 2, 128}, {1, 4, 128}, {2, 2, 128}, {2, 8, 128}, {4, 16, 64}, {1, 4, 256}} {
		step := truth.StepSeconds(sh[0], sh[1], sh[2], 0)
		obs = append(obs, goodput.Observation{Nodes: sh[0], Replicas: sh[1], Local: sh[2],
			AccumSeconds: truth.GradSeconds(sh[2]), OptimSeconds: step})
	}
	fits := 200
	if quick {
		fits = 10
	}
	var p goodput.Params
	start := clk()
	for range fits {
		if p, _, err = goodput.Fit(obs, goodput.FitOptions{}); err != nil {
			return 0, 0, err
		}
	}
	fitUS = float64((clk() - start).Nanoseconds()) / 1e3 / float64(fits)
	m := goodput.Model{Params: p, Grad: goodput.GradStats{Sqr: 0.1, Var: 4},
		Limits: goodput.Limits{InitBatch: 128, MaxBatch: 4096, MinLocal: 16, MaxLocal: 256, Accumulation: true}}
	calls := 20000
	if quick {
		calls = 500
	}
	sink := 0
	start = clk()
	for k := range calls {
		replicas := 1 + k%64
		nodes := (replicas + 3) / 4
		sink += m.Optimize(nodes, replicas).Batch
	}
	optNS = float64((clk() - start).Nanoseconds()) / float64(calls)
	if sink < 0 {
		fmt.Println(sink)
	}
	return fitUS, optNS, nil
}

// placementFigure places random gangs on 8,192 devices until 90% full,
// committing each, and returns gangs per second.
func placementFigure(clk clock, rng *rand.Rand, quick bool) (float64, error) {
	groups := []group{{256, 8, "a100"}, {256, 8, "v100"}, {512, 4, "t4"}, {128, 16, "h100"}}
	if quick {
		groups = []group{{16, 8, "a100"}, {16, 4, "t4"}}
	}
	cl := cluster(groups)
	types := cl.Types()
	st, err := placement.NewState(cl, nil)
	if err != nil {
		return 0, err
	}
	total := cl.Size()
	var pl placement.Chooser
	placed, used := 0, 0
	start := clk()
	for k := 0; used < total*9/10 && k < 10*total; k++ {
		n := []int{1, 1, 2, 2, 4, 8, 16}[rng.IntN(7)]
		req := placement.Request{Job: fmt.Sprintf("g%06d", k), Types: []accel.TypeKey{types[rng.IntN(len(types))]}, Count: n}
		a, err := pl.Place(st, req)
		if err != nil {
			continue // does not fit now
		}
		if err := st.Assign(a); err != nil {
			return 0, err
		}
		placed++
		used += n
	}
	sec := (clk() - start).Seconds()
	if placed == 0 || sec <= 0 {
		return 0, fmt.Errorf("no gang placed")
	}
	return float64(placed) / sec, nil
}

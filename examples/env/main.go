// Command env serves the simulator as a step-wise environment for learned
// scheduling policies (package scheduler/sim/env), as JSON lines on stdin
// and stdout, so that an agent in any language can train against it.
//
//	go run ./examples/env                      # serve Pollux's default workloads on 16 × 4 T4
//	python3 examples/env/agent.py              # a stdlib-only agent that plays FIFO through it
//	go run ./examples/env -reference fifo -seed 3   # the simulator's own FIFO on seed 3's episode
//
// Each request line is {"version":1,"op":"reset","seed":N},
// {"version":1,"op":"step","action":{"targets":[{"job":…,"type":…,"count":…}]}}
// or {"version":1,"op":"close"}; each response line carries the
// observation (schema goodsched.env/v1), reward and done, and the
// simulator's result summary when done, or an error with a code
// (version, malformed, bad_action, no_episode, episode) that leaves the
// episode as it was. The package documentation of scheduler/sim/env
// describes the schema and the rewards.
//
// Flags:
//
//	-cluster SPEC     cluster (default 16x4:t4)
//	-workload NAME    workload CSV or directory, or an embedded name
//	                  (default workloads: Pollux's eight); episode seed s
//	                  plays workload s mod their number
//	-jobs N           only the first N jobs of each workload (0 = all)
//	-kind KIND        rigid (default: the workload's counts), elastic or adaptive
//	-reward R         jct (default), goodput or makespan
//	-interval D       scheduling round (default 60s)
//	-mtbf D           mean time between node failures (default none)
//	-reference P      instead of serving, run the simulator itself with
//	                  policy P (fifo or tiresias) on seed -seed's episode
//	                  and print its result summary as one JSON line
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/goodsched/goodsched/accel"
	"github.com/goodsched/goodsched/placement"
	"github.com/goodsched/goodsched/scheduler"
	"github.com/goodsched/goodsched/scheduler/baselines"
	"github.com/goodsched/goodsched/scheduler/sim"
	"github.com/goodsched/goodsched/scheduler/sim/env"
	"github.com/goodsched/goodsched/scheduler/sim/polluxdata"
)

func main() {
	os.Exit(run(context.Background(), os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fl := flag.NewFlagSet("env", flag.ContinueOnError)
	fl.SetOutput(stderr)
	cluster := fl.String("cluster", "16x4:t4", "cluster spec")
	workload := fl.String("workload", "workloads", "workload CSV or directory, or an embedded name (workloads, workloads-0.5, …)")
	jobs := fl.Int("jobs", 0, "only the first N jobs of each workload (0 = all)")
	kind := fl.String("kind", "rigid", "how jobs are presented: rigid, elastic or adaptive")
	reward := fl.String("reward", "jct", "reward: jct, goodput or makespan")
	interval := fl.Duration("interval", 0, "scheduling round (0 = 60s)")
	mtbf := fl.Duration("mtbf", 0, "mean time between node failures (0 = none)")
	reference := fl.String("reference", "", "run the simulator with this policy (fifo, tiresias) on -seed's episode and print its summary")
	seed := fl.Uint64("seed", 0, "with -reference: the episode's seed")
	if err := fl.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	cfg, err := config(*cluster, *workload, *jobs, *kind, *reward, *interval, *mtbf)
	if err != nil {
		fmt.Fprintln(stderr, "env:", err)
		return 2
	}
	if *reference != "" {
		sum, err := referenceRun(ctx, cfg, *reference, *seed)
		if err != nil {
			fmt.Fprintln(stderr, "env:", err)
			return 2
		}
		if err := json.NewEncoder(stdout).Encode(sum); err != nil {
			return 1
		}
		return 0
	}
	e, err := env.New(cfg)
	if err != nil {
		fmt.Fprintln(stderr, "env:", err)
		return 2
	}
	if err := env.Serve(ctx, e, stdin, stdout); err != nil {
		fmt.Fprintln(stderr, "env:", err)
		return 1
	}
	return 0
}

// config builds the environment the flags describe.
func config(spec, workload string, jobs int, kind, reward string, interval, mtbf time.Duration) (env.Config, error) {
	c, err := accel.ParseSpec(spec)
	if err != nil {
		return env.Config{}, fmt.Errorf("-cluster: %w", err)
	}
	k, ok := map[string]scheduler.Kind{"rigid": scheduler.Rigid, "elastic": scheduler.Elastic, "adaptive": scheduler.Adaptive}[kind]
	if !ok {
		return env.Config{}, fmt.Errorf("-kind %q: want rigid, elastic or adaptive", kind)
	}
	r, err := env.ParseReward(reward)
	if err != nil {
		return env.Config{}, fmt.Errorf("-reward: %w", err)
	}
	if jobs < 0 || interval < 0 || mtbf < 0 {
		return env.Config{}, errors.New("-jobs, -interval and -mtbf must be ≥ 0")
	}
	apps, err := sim.LoadProfiles(sim.ProfileOptions{}, sim.ProfileSource{FS: polluxdata.FS, Dir: "traces"})
	if err != nil {
		return env.Config{}, err
	}
	var fsys fs.FS = polluxdata.FS
	name := strings.Trim(workload, "/")
	if _, err := os.Stat(workload); err == nil {
		abs, err := filepath.Abs(workload)
		if err != nil {
			return env.Config{}, fmt.Errorf("-workload: %w", err)
		}
		fsys, name = os.DirFS(filepath.Dir(abs)), filepath.Base(abs)
	}
	ws, err := sim.LoadWorkloads(fsys, name)
	if err != nil {
		return env.Config{}, fmt.Errorf("-workload: %w", err)
	}
	cfg := env.Config{Reward: r, Sim: sim.Config{Cluster: c, Apps: apps, Kind: k, Interval: interval, Faults: sim.Faults{MTBF: mtbf}}}
	if k != scheduler.Adaptive {
		// As examples/simulate runs the rigid and elastic baselines: nodes
		// filled like the Pollux simulator's.
		cfg.Sim.Placer = placement.Packer{}
	}
	for _, w := range ws {
		js := w.Jobs
		if jobs > 0 && jobs < len(js) {
			js = js[:jobs]
		}
		cfg.Workloads = append(cfg.Workloads, js)
	}
	return cfg, nil
}

// referenceRun runs the simulator itself with a built-in policy on the
// episode of seed.
func referenceRun(ctx context.Context, cfg env.Config, policy string, seed uint64) (env.Summary, error) {
	p, ok := map[string]scheduler.Policy{"fifo": baselines.FIFO{}, "tiresias": baselines.Tiresias{}}[policy]
	if !ok {
		return env.Summary{}, fmt.Errorf("-reference %q: want fifo or tiresias", policy)
	}
	sc := cfg.Sim
	sc.Jobs = cfg.Workloads[seed%uint64(len(cfg.Workloads))]
	sc.Faults.Seed = seed
	steps := 0
	sc.Policy = countingPolicy{p, &steps}
	res, err := sim.Run(ctx, sc)
	if err != nil {
		return env.Summary{}, err
	}
	return env.Summarize(res, steps), nil
}

// countingPolicy counts the rounds that ask the policy: the environment's
// steps.
type countingPolicy struct {
	scheduler.Policy
	n *int
}

// Allocate implements scheduler.Policy.
func (c countingPolicy) Allocate(ctx context.Context, r *scheduler.Round) ([]scheduler.Target, error) {
	*c.n++
	return c.Policy.Allocate(ctx, r)
}

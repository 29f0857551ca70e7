package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"time"

	"github.com/goodsched/goodsched/accel"
	"github.com/goodsched/goodsched/placement"
	"github.com/goodsched/goodsched/scheduler"
	"github.com/goodsched/goodsched/scheduler/gavel"
)

// planetReps is the most timed repetitions of a planet-scale round (the
// median of min(-reps, planetReps) is reported).
const planetReps = 3

// planetSizes are the planet-scale part's instances (issue 19). With
// -quick they are small stand-ins, reported under their own sizes.
type planetSizes struct {
	small40         shape   // the small end: 40 jobs on 16×4 T4 (exhaustive polish)
	ladder          []shape // the scaling ladder, smallest first; ladder[0] is the existing big round
	generated       shape   // 20,000 × 100,000: generated and steady rounds
	largest         shape   // 50,000 × 131,072
	wideNodes       int     // one-GPU nodes of the wide cluster (5 jobs)
	gavelJobs       int     // jobs of the Gavel Policy round
	gavelSpec       string  // its cluster (accel.ParseSpec)
	rssGen, rssLarg bool    // report peak RSS after generated / largest
}

func planet(quick bool, big shape) planetSizes {
	four := func(jobs, n8 int) shape { // n8 8-GPU a100, v100 and h100 nodes and 2·n8 4-GPU t4 nodes
		return shape{groups: []group{{n8, 8, "a100"}, {n8, 8, "v100"}, {2 * n8, 4, "t4"}, {n8, 8, "h100"}}, jobs: jobs}
	}
	scaled := func(jobs int, k float64) shape { // the 2,000×8,192 cluster × k
		n := func(base int) int { return int(float64(base) * k) }
		return shape{groups: []group{{n(256), 8, "a100"}, {n(256), 8, "v100"}, {n(512), 4, "t4"}, {n(128), 16, "h100"}}, jobs: jobs}
	}
	if quick {
		return planetSizes{
			small40:   shape{groups: []group{{16, 4, "t4"}}, jobs: 40},
			ladder:    []shape{big},
			generated: scaled(200, 1.0/32),
			largest:   scaled(400, 1.0/16),
			wideNodes: 512, gavelJobs: 500, gavelSpec: "16x4:v100,24x4:p100,24x4:k80",
		}
	}
	return planetSizes{
		small40:   shape{groups: []group{{16, 4, "t4"}}, jobs: 40},
		ladder:    []shape{big, scaled(10000, 2)},
		generated: four(20000, 3125),
		largest:   scaled(50000, 16),
		wideNodes: 65536, gavelJobs: 50000, gavelSpec: "1024x4:v100,1536x4:p100,1536x4:k80",
		rssGen: true, rssLarg: true,
	}
}

// planetFigures measures the planet-scale keys. bigMS is the time of the
// existing round on sz.ladder[0], measured earlier in the same run.
func planetFigures(ctx context.Context, cfg config, clk clock, sz planetSizes, bigMS float64, log io.Writer, add func(key string, v float64, unit, target string)) error {
	rng := rand.New(rand.NewPCG(cfg.seed, 19))
	reps := min(cfg.reps, planetReps)
	def := cfg.goodput()
	roundOn := func(sh shape, warm, reps int) (float64, scheduler.Input, scheduler.Plan, error) {
		fmt.Fprintln(log, "planet: generating", sh.name(), "…")
		in, err := instanceWarm(rng, sh, warm)
		if err != nil {
			return 0, in, scheduler.Plan{}, err
		}
		fmt.Fprintln(log, "planet: Pollux policy round on", sh.name(), "…")
		ms, plan, err := timeRoundBudget(ctx, clk, def, in, nil, reps, cfg.budget, log)
		return ms, in, plan, err
	}

	ms, _, _, err := roundOn(sz.small40, 2, cfg.reps)
	if err != nil {
		return err
	}
	add("round_goodput_"+sz.small40.size()+"_ms", ms, "ms", "≤ 5")

	// The ladder: the existing big round, the rungs below, then generated and largest.
	var xs, ys []float64
	rung := func(sh shape, ms float64) {
		xs = append(xs, math.Log(float64(sh.jobs+sh.devices())))
		ys = append(ys, math.Log(ms))
	}
	rung(sz.ladder[0], bigMS)
	for _, sh := range sz.ladder[1:] {
		ms, _, _, err := roundOn(sh, 2, reps)
		if err != nil {
			return err
		}
		rung(sh, ms)
	}

	ms, in, plan, err := roundOn(sz.generated, 2, reps)
	if err != nil {
		return err
	}
	rung(sz.generated, ms)
	add("round_goodput_"+sz.generated.size()+"_ms", ms, "ms", "≤ 300")
	fmt.Fprintln(log, "planet: steady round on", sz.generated.name(), "…")
	steady, err := steadyInput(rng, in, plan)
	if err != nil {
		return err
	}
	// Each steady round runs on a Scheduler whose previous round was the
	// generated one, as a host's would.
	ms, _, err = timeRoundBudget(ctx, clk, def, steady, &in, reps, cfg.budget, log)
	in, plan = scheduler.Input{}, scheduler.Plan{}
	if err != nil {
		return err
	}
	add("round_goodput_steady_"+sz.generated.size()+"_ms", ms, "ms", "≤ 100")
	if mib, ok := peakRSSMiB(); ok && sz.rssGen {
		add("rss_"+sz.generated.size()+"_mib", mib, "MiB", "≤ 1024")
	}
	steady = scheduler.Input{}

	ms, _, _, err = roundOn(sz.largest, 2, reps)
	if err != nil {
		return err
	}
	rung(sz.largest, ms)
	add("round_goodput_"+sz.largest.size()+"_ms", ms, "ms", "≤ 1000")
	if mib, ok := peakRSSMiB(); ok && sz.rssLarg {
		add("rss_"+sz.largest.size()+"_mib", mib, "MiB", "")
	}
	if k := slope(xs, ys); !math.IsNaN(k) {
		add("scaling_exponent", k, "", "≤ 1.1")
	}

	fmt.Fprintf(log, "planet: Pollux policy round on 5 jobs × %d one-GPU nodes …\n", sz.wideNodes)
	ms, _, err = timeRoundBudget(ctx, clk, def, wideInput(sz.wideNodes), nil, reps, cfg.budget, log)
	if err != nil {
		return err
	}
	add(fmt.Sprintf("round_goodput_%dx1_ms", sz.wideNodes), ms, "ms", "≤ 1000")

	fmt.Fprintf(log, "planet: Gavel Policy round, %d jobs on %s …\n", sz.gavelJobs, sz.gavelSpec)
	ms, err = gavelRound(ctx, clk, cfg.seed, sz.gavelJobs, sz.gavelSpec, reps, cfg.budget, log)
	if err != nil {
		return err
	}
	add(fmt.Sprintf("gavel_round_%d_ms", sz.gavelJobs), ms, "ms", "≤ 250")
	return nil
}

// wideInput is issue 19's wide cluster: nodes one-T4 nodes and five
// adaptive jobs without an upper bound (MaxReplicas 0), job i's speedup
// on c devices c / (1 + α(c − 1)) with α = 0.0005·(i+1) and no penalty
// for spreading over nodes, so that each job could use thousands of
// nodes; no current placement (a cold round).
func wideInput(nodes int) scheduler.Input {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	in := scheduler.Input{Cluster: cluster([]group{{nodes, 1, "t4"}}), Now: now}
	for i := range 5 {
		in.Jobs = append(in.Jobs, scheduler.Job{
			ID:          fmt.Sprintf("wide-%d", i),
			Submitted:   now.Add(-time.Duration(600*(i+1)) * time.Second),
			Kind:        scheduler.Adaptive,
			Speedup:     amdahl(0.0005 * float64(i+1)),
			MinReplicas: 1,
			Weight:      1,
		})
	}
	return in
}

// amdahl is the speedup c / (1 + α(c − 1)) on c devices of any type and
// any number of nodes (goodput.Speedup).
type amdahl float64

// Speedup implements goodput.Speedup.
func (a amdahl) Speedup(_ string, _, replicas int) float64 {
	if replicas <= 0 {
		return 0
	}
	c := float64(replicas)
	return c / (1 + float64(a)*(c-1))
}

// steadyInput is the round after in: the previous plan as Current, 1 min
// later, 2% of the jobs finished and as many new ones arrived (4% of the
// jobs change).
func steadyInput(rng *rand.Rand, in scheduler.Input, plan scheduler.Plan) (scheduler.Input, error) {
	n := len(in.Jobs)
	churn := max(1, n/50)
	gone := make(map[string]bool, churn)
	for _, k := range rng.Perm(n)[:churn] {
		gone[in.Jobs[k].ID] = true
	}
	next := scheduler.Input{Cluster: in.Cluster, Now: in.Now.Add(time.Minute)}
	for _, j := range in.Jobs {
		if !gone[j.ID] {
			next.Jobs = append(next.Jobs, j)
		}
	}
	for _, a := range plan.Assignments() {
		if !gone[a.Job] {
			next.Current = append(next.Current, a)
		}
	}
	types := in.Cluster.Types()
	for i := range churn {
		j, err := randomJob(rng, n+i, types, next.Now)
		if err != nil {
			return next, err
		}
		next.Jobs = append(next.Jobs, j)
	}
	return next, nil
}

// gavelRound times Scheduler.Schedule with Gavel's Policy (max-min
// fairness over the published throughput table, Settings.Tolerance
// 0.005, as scheduler/gavel's BenchmarkPolicyRound) and placement.Packer:
// n jobs of the table's classes (scale 1 with probability 0.7, else 2, 4
// or 8) on the cluster spec. Each round runs on the previous round's
// plan, 6 minutes later; the first round (no current placement) is the
// warm-up, and the median of the next reps rounds is returned.
func gavelRound(ctx context.Context, clk clock, seed uint64, n int, spec string, reps int, budget time.Duration, log io.Writer) (float64, error) {
	tab, err := gavel.Published()
	if err != nil {
		return 0, err
	}
	cl, err := accel.ParseSpec(spec)
	if err != nil {
		return 0, err
	}
	rng := rand.New(rand.NewPCG(seed, 23))
	classes := tab.Classes()
	classOf := make(map[string]string, n)
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	in := scheduler.Input{Cluster: cl, Now: now}
	for len(in.Jobs) < n {
		class := classes[rng.IntN(len(classes))]
		scale := []int{1, 1, 1, 1, 1, 1, 1, 2, 4, 8}[rng.IntN(10)]
		if v, ok := tab.Lookup(class, scale, "v100-16gb"); !ok || v == 0 {
			continue
		}
		id := fmt.Sprintf("g%05d", len(in.Jobs))
		classOf[id] = class
		in.Jobs = append(in.Jobs, scheduler.Job{ID: id, Requested: scale, Weight: 1,
			Submitted: now.Add(-time.Duration(rng.IntN(3600)) * time.Second)})
	}
	pol, err := gavel.NewPolicy(gavel.Config{Throughput: tab.Throughput(func(j *scheduler.Job) string { return classOf[j.ID] }),
		Settings: gavel.Settings{Tolerance: 0.005}})
	if err != nil {
		return 0, err
	}
	s, err := scheduler.New(scheduler.Config{Policy: pol, Placer: placement.Packer{}})
	if err != nil {
		return 0, err
	}
	var cur []placement.Assignment
	step := func() error {
		in.Current = cur
		plan, err := s.Schedule(ctx, in)
		if err != nil {
			return err
		}
		cur = plan.Assignments()
		in.Now = in.Now.Add(6 * time.Minute)
		return nil
	}
	start := clk()
	if err := step(); err != nil {
		return 0, err
	}
	if first := clk() - start; budget > 0 && first > budget {
		fmt.Fprintf(log, "  warm-up round took %v > -budget %v: reported once\n", first, budget)
		return float64(first.Nanoseconds()) / 1e6, nil
	}
	ms, err := medianMS(clk, reps, nil, step)
	fmt.Fprintf(log, "  %.4g ms (median of %d)\n", ms, reps)
	return ms, err
}

// timeRoundBudget runs one warm-up round and reps timed rounds of in,
// each on a Scheduler of cfg that has run only prev before (see after),
// and returns the median in milliseconds and the plan; when the warm-up
// round alone takes longer than budget (> 0) its time is returned
// (measured once).
func timeRoundBudget(ctx context.Context, clk clock, cfg scheduler.Config, in scheduler.Input, prev *scheduler.Input, reps int, budget time.Duration, log io.Writer) (float64, scheduler.Plan, error) {
	s, err := after(ctx, cfg, in, prev)
	if err != nil {
		return 0, scheduler.Plan{}, err
	}
	start := clk()
	plan, err := s.Schedule(ctx, in)
	if err != nil {
		return 0, plan, err
	}
	if first := clk() - start; budget > 0 && first > budget {
		fmt.Fprintf(log, "  warm-up round took %v > -budget %v: reported once\n", first, budget)
		return float64(first.Nanoseconds()) / 1e6, plan, nil
	}
	ms, err := medianMS(clk, reps, func() (err error) {
		s, err = after(ctx, cfg, in, prev)
		return err
	}, func() error {
		_, err := s.Schedule(ctx, in)
		return err
	})
	fmt.Fprintf(log, "  %.4g ms (median of %d)\n", ms, reps)
	return ms, plan, err
}

// slope is the least-squares slope of ys on xs (NaN with fewer than two
// distinct xs).
func slope(xs, ys []float64) float64 {
	var mx, my float64
	for i := range xs {
		mx += xs[i]
		my += ys[i]
	}
	mx /= float64(len(xs))
	my /= float64(len(ys))
	var sxy, sxx float64
	for i := range xs {
		sxy += (xs[i] - mx) * (ys[i] - my)
		sxx += (xs[i] - mx) * (xs[i] - mx)
	}
	if sxx == 0 {
		return math.NaN()
	}
	return sxy / sxx
}

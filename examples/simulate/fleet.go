package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/goodsched/goodsched/accel"
	"github.com/goodsched/goodsched/fleet"
	"github.com/goodsched/goodsched/placement"
	"github.com/goodsched/goodsched/scheduler"
	"github.com/goodsched/goodsched/scheduler/baselines"
	"github.com/goodsched/goodsched/scheduler/gavel"
	"github.com/goodsched/goodsched/scheduler/sim"
	"github.com/goodsched/goodsched/scheduler/sim/polluxdata"
	"github.com/goodsched/goodsched/scheduler/tiers"
)

// The fleet simulation (-fleet FILE). One trace (a -philly trace or a
// -workload) is replayed across a fleet of clusters twice, on the same
// ground truth: once through fleet.Fleet (routing and cost-aware
// migration), once with every job staying on the cluster it was submitted
// to (fleet.Config.Stay). Each cluster runs the FIFO policy (it never
// preempts; a job that does not fit waits while later ones backfill).
//
// Ground truth. A job's model (from the trace, as sim.ReadPhilly maps
// GPU-hours to models) is a class of Gavel's published throughput matrix
// (scheduler/gavel.Published: steps per second at 1, 2, 4 and 8 devices of
// v100, p100 and k80; beyond 8 devices, linear from 8): cifar10 ResNet-18,
// imagenet ResNet-50, bert Transformer, deepspeech2 the LSTM LM, yolov3
// CycleGAN, ncf Recommendation. Other device types run at the p100's
// throughput scaled by their FP32 peak (fp32TFLOPS). A job's work is its
// trace run time at its trace GPU count on p100s (Philly's GPUs were
// Pascal), so that a job alone on p100s finishes in its trace time. Each
// job checkpoints every 30 minutes of running (its size from the model's
// parameters and optimizer state, fleetCheckpoint); a restore or first
// start costs 30 s plus reading the checkpoint at 2 GB/s, a save the same
// writing. A migration stalls the job for the checkpoint, the transfer at
// the fleet's bandwidth and the restore, and rolls its progress back to its
// last checkpoint: the whole cost the fleet predicted is charged.
//
// What the fleet is told: each job's speed per type (the ground truth, as
// a host with Gavel-style profiles has) and, as its remaining work, the
// work it has done so far (a job is predicted to run as long again as it
// has: nothing of the trace's future is given).

// fleetFile is -fleet's JSON.
type fleetFile struct {
	Clusters []struct {
		Name    string `json:"name"`
		Region  string `json:"region"`
		Cluster string `json:"cluster"`
	} `json:"clusters"`
	// BandwidthGbps is between any two clusters (0 = fleet's default).
	BandwidthGbps float64 `json:"bandwidth_gbps"`
	// Links overrides it per pair.
	Links []struct {
		From string  `json:"from"`
		To   string  `json:"to"`
		Gbps float64 `json:"gbps"`
	} `json:"links"`
}

// fleetResult is the JSON's "fleet" object.
type fleetResult struct {
	Clusters         []fleetClusterResult `json:"clusters"`
	Jobs             int                  `json:"jobs"`
	Completed        int                  `json:"completed"`
	StayCompleted    int                  `json:"stay_completed"`
	AvgJCT           float64              `json:"avg_jct_s"`
	StayAvgJCT       float64              `json:"stay_avg_jct_s"`
	Improvement      float64              `json:"improvement"`
	Migrations       int                  `json:"migrations"`
	MigrationsPerJob float64              `json:"migrations_per_job"`
	MigrationCostS   float64              `json:"migration_cost_s"`
	Routed           int                  `json:"routed"`
	Clamped          int                  `json:"clamped"`
	Rounds           int                  `json:"rounds"`
}

// fleetClusterResult is one cluster's part: the jobs that finished on it.
type fleetClusterResult struct {
	Name       string  `json:"name"`
	Region     string  `json:"region"`
	Devices    int     `json:"devices"`
	Submitted  int     `json:"submitted"`
	Completed  int     `json:"completed"`
	AvgJCT     float64 `json:"avg_jct_s"`
	GPUHours   float64 `json:"gpu_hours"`
	StayAvgJCT float64 `json:"stay_avg_jct_s"`
	StayDone   int     `json:"stay_completed"`
}

// modelClass maps the simulator's models to Gavel's classes.
var modelClass = map[string]string{
	"cifar10":     "ResNet-18 (batch size 64)",
	"imagenet":    "ResNet-50 (batch size 64)",
	"bert":        "Transformer (batch size 64)",
	"deepspeech2": "LM (batch size 20)",
	"yolov3":      "CycleGAN",
	"ncf":         "Recommendation (batch size 2048)",
}

// fleetCheckpoint is each model's checkpoint in bytes: parameters and
// optimizer state in fp32 (SGD with momentum ×2, Adam ×3).
var fleetCheckpoint = map[string]int64{
	"cifar10":     11_700_000 * 4 * 2,
	"imagenet":    25_600_000 * 4 * 2,
	"bert":        110_000_000 * 4 * 3,
	"deepspeech2": 38_000_000 * 4 * 3,
	"yolov3":      62_000_000 * 4 * 2,
	"ncf":         31_000_000 * 4 * 3,
}

// fp32TFLOPS is the peak FP32 rate of device types that Gavel's matrix
// lacks, and of p100, the reference they are scaled from.
var fp32TFLOPS = map[accel.TypeKey]float64{
	"p100": 9.3, "t4": 8.1, "a100-40gb": 19.5, "a100-80gb": 19.5, "h100-80gb": 67, "h200-141gb": 67,
	"a10": 31.2, "l4": 30.3, "rtx2080ti": 13.4, "v100-32gb": 15.7, "p40": 11.8,
}

const (
	ckptInterval  = 30 * time.Minute
	ckptBandwidth = 2e9 // bytes per second to and from storage
	startup       = 30 * time.Second
)

// speedTable gives a class's throughput on n devices of a type. It is
// safe for concurrent use (the replays and the fleet's cluster rounds
// share it).
type speedTable struct {
	t     *gavel.Table
	mu    sync.RWMutex
	cache map[speedKey]float64
}

type speedKey struct {
	class string
	n     int
	typ   accel.TypeKey
}

func (s *speedTable) steps(class string, n int, typ accel.TypeKey) float64 {
	k := speedKey{class, n, typ}
	s.mu.RLock()
	v, ok := s.cache[k]
	s.mu.RUnlock()
	if ok {
		return v
	}
	scale := 1
	for _, c := range []int{8, 4, 2} {
		if n >= c {
			if _, ok := s.t.Lookup(class, c, "p100"); ok {
				scale = c
				break
			}
		}
	}
	v, ok = s.t.Lookup(class, scale, typ)
	if !ok {
		if f := fp32TFLOPS[typ]; f > 0 {
			p, _ := s.t.Lookup(class, scale, "p100")
			v = p * f / fp32TFLOPS["p100"]
		}
	}
	v *= float64(n) / float64(scale)
	s.mu.Lock()
	s.cache[k] = v
	s.mu.Unlock()
	return v
}

// fleetSpeedup is a job's Speedup for the fleet and the clusters: its
// ground-truth throughput over that of one device of its fastest type in
// the fleet.
type fleetSpeedup struct {
	st    *speedTable
	class string
	base  float64
}

func (f fleetSpeedup) Speedup(typ string, _, replicas int) float64 {
	return f.st.steps(f.class, replicas, accel.TypeKey(typ)) / f.base
}

// fjob is the simulator's state of one job.
type fjob struct {
	spec     sim.JobSpec
	class    string
	n        int
	types    []accel.TypeKey
	speedup  fleetSpeedup
	ckpt     fleet.Checkpoint
	submit   float64
	work     float64 // steps
	done     float64
	ckptDone float64
	lastCkpt float64 // sim seconds of the last checkpoint (or start)
	stall    float64
	pending  float64 // stall owed at the next start
	home     string
	cluster  string
	assign   placement.Assignment
	typ      accel.TypeKey
	attained float64 // device-seconds
	started  bool
	finished bool
	finish   float64
	moves    int
	// Tiers (-tiers): the job's tier and, once started, its clock hours
	// (from its first start): the device-seconds it held in the current
	// one and how many fell below its tier's share.
	tier       tiers.Tier
	hourStart  float64
	hourUsed   float64
	hoursBelow int
	preempts   int
	shrinks    int
}

// fleetRun is one replay (the fleet, or everyone staying).
type fleetRun struct {
	jobs       []*fjob
	migrations int
	routed     int
	costS      float64
	rounds     int
	gpuSec     map[string]float64
}

func simulateFleet(ctx context.Context, o options, stdout, stderr io.Writer) error {
	if o.fleet == "" {
		return usage("-tiers needs -fleet")
	}
	raw, err := os.ReadFile(o.fleet)
	if err != nil {
		return usage("-fleet: %v", err)
	}
	var ff fleetFile
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&ff); err != nil {
		return usage("-fleet %s: %v", o.fleet, err)
	}
	if len(ff.Clusters) == 0 {
		return usage("-fleet %s: no clusters", o.fleet)
	}
	var clusters []fleet.Cluster
	names := map[string]bool{}
	for i, c := range ff.Clusters {
		if c.Name == "" || names[c.Name] {
			return usage("-fleet %s: clusters[%d]: empty or duplicate name %q", o.fleet, i, c.Name)
		}
		names[c.Name] = true
		cl, err := accel.ParseSpec(c.Cluster)
		if err != nil {
			return usage("-fleet %s: clusters[%d] (%s): %v", o.fleet, i, c.Name, err)
		}
		clusters = append(clusters, fleet.Cluster{Name: c.Name, Region: c.Region, Cluster: cl})
	}
	cfg := fleet.Config{BandwidthGbps: ff.BandwidthGbps}
	for i, l := range ff.Links {
		if !names[l.From] || !names[l.To] {
			return usage("-fleet %s: links[%d]: %s–%s names a cluster the fleet lacks", o.fleet, i, l.From, l.To)
		}
		cfg.Links = append(cfg.Links, fleet.Link{From: l.From, To: l.To, Gbps: l.Gbps})
	}
	if _, err := fleet.New(cfg); err != nil {
		return usage("-fleet %s: %v", o.fleet, err)
	}
	apps, err := sim.LoadProfiles(sim.ProfileOptions{}, sim.ProfileSource{FS: polluxdata.FS, Dir: "traces"})
	if err != nil {
		return err
	}
	workloads, err := loadWorkloads(o, apps)
	if err != nil {
		return err
	}
	if len(workloads) != 1 {
		return usage("-fleet replays one workload; -workload %s has %d (name one file, or use -philly)", o.workload, len(workloads))
	}
	table, err := gavel.Published()
	if err != nil {
		return err
	}
	st := &speedTable{t: table, cache: map[speedKey]float64{}}
	interval := o.interval
	if interval == 0 {
		interval = 5 * time.Minute
	}
	if interval < time.Second || interval > sim.MaxInterval {
		return usage("-interval %v is outside [1s, %v]", interval, sim.MaxInterval)
	}
	modes := []replayMode{{name: "fleet", policy: baselines.FIFO{}}, {name: "stay", stay: true, policy: baselines.FIFO{}}}
	if o.tiers != "" {
		drawn, err := drawTiers(o.tiers, len(workloads[0].Jobs), o.seed)
		if err != nil {
			return err
		}
		modes = append(modes,
			replayMode{name: "tiers", policy: tierFill{}, tiers: drawn, enforce: true},
			replayMode{name: "baseline", policy: baselines.FIFO{}, tiers: drawn})
	}
	fmt.Fprintf(stderr, "fleet: %d jobs on %d clusters, rounds of %v; runs in parallel: %s\n", len(workloads[0].Jobs), len(clusters), interval, modeNames(modes))
	type out struct {
		r   *fleetRun
		err error
	}
	res := make([]out, len(modes))
	done := make(chan int)
	for k, m := range modes {
		go func() {
			r, err := replayFleet(ctx, cfg, m, clusters, workloads[0].Jobs, st, interval, stderr)
			res[k] = out{r, err}
			done <- k
		}()
	}
	for range modes {
		<-done
	}
	for k, r := range res {
		if r.err != nil {
			return fmt.Errorf("%s: %w", modes[k].name, r.err)
		}
	}
	fr := summarizeFleet(clusters, res[0].r, res[1].r)
	var tierRes []tierResult
	var baseline *float64
	if o.tiers != "" {
		tierRes = summarizeTiers(res[2].r)
		b := avgJCTOf(res[3].r, tiers.Standard)
		baseline = &b
	}
	if o.json {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(struct {
			Fleet            fleetResult  `json:"fleet"`
			Tiers            []tierResult `json:"tiers,omitempty"`
			BaselineStandard *float64     `json:"baseline_standard_avg_jct_s,omitempty"`
		}{fr, tierRes, baseline})
	}
	printFleet(stdout, fr)
	if o.tiers != "" {
		printTiers(stdout, tierRes, *baseline)
	}
	return nil
}

// replayMode is one replay of the trace.
type replayMode struct {
	name   string
	stay   bool
	policy scheduler.Policy
	// tiers, when set, are the jobs' tiers (by workload index): every
	// job's Priority is its tier's rank; with enforce its Job.Tier is set
	// too, so that the scheduler and the fleet enforce it.
	tiers   []tiers.Tier
	enforce bool
}

func modeNames(ms []replayMode) string {
	var s []string
	for _, m := range ms {
		s = append(s, m.name)
	}
	return strings.Join(s, ", ")
}

// tierResult is one entry of the JSON's "tiers".
type tierResult struct {
	Tier                tiers.Tier `json:"tier"`
	Jobs                int        `json:"jobs"`
	Completed           int        `json:"completed"`
	Preemptions         int        `json:"preemptions"`
	Shrinks             int        `json:"shrinks"`
	HoursBelowGuarantee int        `json:"hours_below_guarantee"`
	AvgJCT              float64    `json:"avg_jct_s"`
}

// drawTiers parses -tiers ("premium=0.2,standard=0.5,basic=0.3": shares
// summing to 1) and draws each job's tier from them with the seed.
func drawTiers(spec string, n int, seed uint64) ([]tiers.Tier, error) {
	var names []tiers.Tier
	var shares []float64
	sum := 0.0
	for _, part := range strings.Split(spec, ",") {
		key, val, ok := strings.Cut(strings.TrimSpace(part), "=")
		t, err := tiers.Parse(key)
		if err != nil || t == tiers.None {
			if err == nil {
				err = fmt.Errorf("%w: empty name", tiers.ErrUnknown)
			}
			return nil, usage("-tiers %q: %v", spec, err)
		}
		v, perr := strconv.ParseFloat(strings.TrimSpace(val), 64)
		if !ok || perr != nil || !(v >= 0 && v <= 1) || slices.Contains(names, t) {
			return nil, usage("-tiers %q: want tier=share with shares in [0, 1], each tier once", spec)
		}
		names, shares = append(names, t), append(shares, v)
		sum += v
	}
	if math.Abs(sum-1) > 1e-6 {
		return nil, usage("-tiers %q: shares sum to %v, want 1", spec, sum)
	}
	rng := rand.New(rand.NewPCG(seed, 50))
	out := make([]tiers.Tier, n)
	for i := range out {
		x, k := rng.Float64(), 0
		for k < len(shares)-1 && x >= shares[k] {
			x -= shares[k]
			k++
		}
		out[i] = names[k]
	}
	return out, nil
}

// tierShare is the share of its requested device-time a started job of
// the tier is guaranteed in every hour.
func tierShare(t tiers.Tier) float64 {
	return t.Share()
}

// tierPriority is the Priority a tier gives its jobs.
func tierPriority(t tiers.Tier) int {
	switch t {
	case tiers.Premium:
		return 3
	case tiers.Standard:
		return 2
	case tiers.Basic:
		return 1
	}
	return 0
}

func summarizeTiers(r *fleetRun) []tierResult {
	var out []tierResult
	for _, t := range []tiers.Tier{tiers.Premium, tiers.Standard, tiers.Basic} {
		tr := tierResult{Tier: t}
		for _, j := range r.jobs {
			if j.tier != t {
				continue
			}
			tr.Jobs++
			tr.Preemptions += j.preempts
			tr.Shrinks += j.shrinks
			tr.HoursBelowGuarantee += j.hoursBelow
			if j.finished {
				tr.Completed++
			}
		}
		tr.AvgJCT = avgJCTOf(r, t)
		out = append(out, tr)
	}
	return out
}

// avgJCTOf is the average JCT of the run's finished jobs of tier t.
func avgJCTOf(r *fleetRun, t tiers.Tier) float64 {
	s, n := 0.0, 0
	for _, j := range r.jobs {
		if j.finished && j.tier == t {
			s += j.finish - j.submit
			n++
		}
	}
	if n == 0 {
		return 0
	}
	return s / float64(n)
}

func printTiers(w io.Writer, ts []tierResult, baseline float64) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "tier	jobs	completed	preemptions	shrinks	hours below guarantee	avg JCT (h)	")
	for _, t := range ts {
		fmt.Fprintf(tw, "%s	%d	%d	%d	%d	%d	%.2f	\n", t.Tier, t.Jobs, t.Completed, t.Preemptions, t.Shrinks, t.HoursBelowGuarantee, t.AvgJCT/3600)
	}
	tw.Flush()
	fmt.Fprintf(w, "baseline (priority by tier, no preemption, no tiers enforced): standard avg JCT %.2f h\n", baseline/3600)
}

// newFleetJobs builds the jobs' ground truth, their home clusters (round-
// robin over the clusters by virtual cluster, in order of first
// appearance; by job order without one) and their count, clamped to the
// most devices of one type a cluster has.
func newFleetJobs(specs []sim.JobSpec, clusters []fleet.Cluster, st *speedTable) ([]*fjob, int, error) {
	types := map[accel.TypeKey]int{}
	for _, c := range clusters {
		for t, n := range c.Cluster.Counts() {
			types[t] = max(types[t], n)
		}
	}
	largest := slices.Max(slices.Collect(maps.Values(types)))
	vcs := map[string]int{}
	clamped := 0
	var jobs []*fjob
	for i, s := range specs {
		class, ok := modelClass[s.Application]
		if !ok {
			return nil, 0, usage("-fleet: job %s: model %q has no throughput class", s.Name, s.Application)
		}
		j := &fjob{spec: s, class: class, n: max(s.Replicas, 1), submit: s.Submit.Seconds()}
		if j.n > largest {
			j.n, clamped = largest, clamped+1
		}
		base := 0.0
		for _, t := range slices.Sorted(maps.Keys(types)) {
			if v := st.steps(class, 1, t); v > 0 {
				j.types = append(j.types, t)
				base = max(base, v)
			}
		}
		if base == 0 {
			return nil, 0, usage("-fleet: job %s (%s) can run on none of the fleet's types", s.Name, class)
		}
		j.speedup = fleetSpeedup{st: st, class: class, base: base}
		dur := s.TraceDuration.Seconds()
		if dur <= 0 {
			dur = 3600
		}
		j.work = dur * st.steps(class, max(s.Replicas, 1), "p100")
		size := fleetCheckpoint[s.Application]
		io := time.Duration(float64(size) / ckptBandwidth * float64(time.Second))
		j.ckpt = fleet.Checkpoint{SizeBytes: size, Interval: ckptInterval, Save: startup + io, Restore: startup + io}
		k := i
		if s.Queue != "" {
			v, ok := vcs[s.Queue]
			if !ok {
				v = len(vcs)
				vcs[s.Queue] = v
			}
			k = v
		}
		j.home = clusters[k%len(clusters)].Name
		jobs = append(jobs, j)
	}
	return jobs, clamped, nil
}

var errFleetLost = errors.New("fleet simulation lost a job")

// replayFleet replays the jobs through a fleet built from cfg.
func replayFleet(ctx context.Context, cfg fleet.Config, mode replayMode, clusters []fleet.Cluster, specs []sim.JobSpec, st *speedTable, interval time.Duration, stderr io.Writer) (*fleetRun, error) {
	cfg.Stay = mode.stay
	cfg.NewScheduler = func(string) (*scheduler.Scheduler, error) {
		return scheduler.New(scheduler.Config{Policy: mode.policy})
	}
	f, err := fleet.New(cfg)
	if err != nil {
		return nil, err
	}
	jobs, _, err := newFleetJobs(specs, clusters, st)
	if err != nil {
		return nil, err
	}
	for i, j := range jobs {
		if mode.tiers != nil {
			j.tier = mode.tiers[i]
		}
	}
	run := &fleetRun{jobs: jobs, gpuSec: map[string]float64{}}
	start := time.Date(2021, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(s float64) time.Time { return start.Add(time.Duration(s * float64(time.Second))) }
	dt := interval.Seconds()
	next, finished := 0, 0
	var live []*fjob
	for now := 0.0; finished < len(jobs); now += dt {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if now > 120*86400 {
			break // horizon: unfinished jobs are reported, not lost
		}
		for next < len(jobs) && jobs[next].submit <= now {
			j := jobs[next]
			j.cluster = j.home
			live = append(live, j)
			next++
		}
		if len(live) == 0 {
			now = math.Floor(jobs[next].submit/dt)*dt - dt
			continue
		}
		in := fleet.Input{Clusters: clusters, Now: at(now), Jobs: make([]fleet.Job, len(live))}
		for i, j := range live {
			ck := j.ckpt
			ck.Last = at(j.lastCkpt)
			rem := 0.0
			if j.done > 0 {
				rem = j.done / (j.speedup.base)
			}
			in.Jobs[i] = fleet.Job{Job: scheduler.Job{ID: j.spec.Name, Submitted: at(j.submit), Requested: j.n, Kind: scheduler.Rigid,
				Types: j.types, Speedup: j.speedup, Attained: time.Duration(j.attained * float64(time.Second)), RemainingWork: rem, Restarts: j.moves,
				Priority: tierPriority(j.tier)},
				Cluster: j.cluster, Assignment: j.assign, Checkpoint: ck}
			if mode.enforce {
				in.Jobs[i].Tier = j.tier
			}
		}
		plan, err := f.Schedule(ctx, in)
		if err != nil {
			return nil, fmt.Errorf("round at %v: %w", time.Duration(now*float64(time.Second)), err)
		}
		run.rounds++
		if len(plan.Jobs) != len(live) {
			return nil, fmt.Errorf("%w: %d decisions for %d jobs", errFleetLost, len(plan.Jobs), len(live))
		}
		held := map[string]bool{}
		for _, j := range live {
			d, ok := plan.Decision(j.spec.Name)
			if !ok {
				return nil, fmt.Errorf("%w: %s has no decision", errFleetLost, j.spec.Name)
			}
			applyFleet(run, j, d, now)
			for _, dev := range j.assign.Devices {
				if key := j.cluster + "/" + dev; held[key] {
					return nil, fmt.Errorf("%w: device %s held twice", errFleetLost, key)
				} else {
					held[key] = true
				}
			}
		}
		// Advance the clock.
		keep := live[:0]
		for _, j := range live {
			n := float64(len(j.assign.Devices))
			if j.started {
				j.hourUsed += dt * n
			}
			if len(j.assign.Devices) > 0 {
				run.gpuSec[j.cluster] += dt * float64(len(j.assign.Devices))
				j.attained += dt * float64(len(j.assign.Devices))
				eff := max(dt-j.stall, 0)
				j.stall = max(j.stall-dt, 0)
				rate := st.steps(j.class, len(j.assign.Devices), j.typ)
				if rate > 0 && j.done+eff*rate >= j.work {
					j.finished, j.finish = true, now+(dt-eff)+(j.work-j.done)/rate
					j.done = j.work
					finished++
					// The last, partial hour: what it held until it finished.
					j.hourUsed -= (now + dt - j.finish) * n
					if el := j.finish - j.hourStart; el > 0 && j.hourUsed < tierShare(j.tier)*float64(j.n)*el-1e-6 {
						j.hoursBelow++
					}
					continue
				}
				j.done += eff * rate
				if now+dt-j.lastCkpt >= ckptInterval.Seconds() {
					j.ckptDone, j.lastCkpt = j.done, now+dt
				}
			}
			if j.started && now+dt >= j.hourStart+3600-1e-6 {
				if j.hourUsed < tierShare(j.tier)*float64(j.n)*3600-1e-6 {
					j.hoursBelow++
				}
				j.hourStart, j.hourUsed = now+dt, 0
			}
			keep = append(keep, j)
		}
		live = keep
		if run.rounds%2000 == 0 {
			fmt.Fprintf(stderr, "  %s: day %.1f, %d/%d jobs done, %d live\n", mode.name, now/86400, finished, len(jobs), len(live))
		}
	}
	if n := finished + len(live) + len(jobs) - next; n != len(jobs) {
		return nil, fmt.Errorf("%w: %d finished + %d live + %d to arrive ≠ %d", errFleetLost, finished, len(live), len(jobs)-next, len(jobs))
	}
	return run, nil
}

// applyFleet applies one job's fleet decision at time now.
func applyFleet(run *fleetRun, j *fjob, d fleet.Decision, now float64) {
	wasRunning := len(j.assign.Devices) > 0
	rollback := func() {
		if !j.ckpt.OnDemand {
			j.done = j.ckptDone
		}
	}
	switch d.Move {
	case fleet.Migrate:
		run.migrations++
		j.moves++
		run.costS += d.Cost.Seconds()
		// The rollback to the last checkpoint charges the lost work; the
		// stall at the next start charges the rest of the cost.
		lost := 0.0
		if wasRunning && !j.ckpt.OnDemand {
			lost = min(now-j.lastCkpt, j.ckpt.Interval.Seconds())
			rollback()
		}
		j.pending += max(d.Cost.Seconds()-lost, 0)
	case fleet.Route:
		run.routed++
	}
	j.cluster = d.To
	newAssign := d.Cluster.Assignment
	if d.Cluster.To == 0 {
		newAssign = placement.Assignment{}
	}
	running := len(newAssign.Devices) > 0
	switch {
	case wasRunning && (!running || d.Move == fleet.Migrate):
		j.preempts++
	case wasRunning && len(newAssign.Devices) < len(j.assign.Devices):
		j.shrinks++
	}
	switch {
	case wasRunning && !running && d.Move != fleet.Migrate:
		// Preempted in place: back to the checkpoint; save now, restore
		// at the next start.
		rollback()
		j.pending += (j.ckpt.Save + j.ckpt.Restore).Seconds()
	case wasRunning && running && d.Move != fleet.Migrate && !slices.Equal(newAssign.Devices, j.assign.Devices):
		rollback()
		j.stall += (j.ckpt.Save + j.ckpt.Restore).Seconds()
		j.lastCkpt, j.ckptDone = now, j.done
	}
	if running && (!wasRunning || d.Move == fleet.Migrate) {
		if !j.started {
			j.stall += startup.Seconds()
			j.started = true
			j.hourStart, j.hourUsed = now, 0
		}
		j.stall += j.pending
		j.pending = 0
		j.lastCkpt, j.ckptDone = now, j.done
	}
	j.assign = newAssign
	j.typ = d.Cluster.Type
}

func summarizeFleet(clusters []fleet.Cluster, fl, stay *fleetRun) fleetResult {
	fr := fleetResult{Jobs: len(fl.jobs), Migrations: fl.migrations, MigrationCostS: fl.costS, Routed: fl.routed, Rounds: fl.rounds}
	per := map[string]*fleetClusterResult{}
	for _, c := range clusters {
		fr.Clusters = append(fr.Clusters, fleetClusterResult{Name: c.Name, Region: c.Region, Devices: c.Cluster.Size(), GPUHours: fl.gpuSec[c.Name] / 3600})
	}
	for i := range fr.Clusters {
		per[fr.Clusters[i].Name] = &fr.Clusters[i]
	}
	avg := func(r *fleetRun, each func(j *fjob)) (float64, int) {
		s, n := 0.0, 0
		for _, j := range r.jobs {
			if j.finished {
				s += j.finish - j.submit
				n++
				each(j)
			}
		}
		if n == 0 {
			return 0, 0
		}
		return s / float64(n), n
	}
	fr.AvgJCT, fr.Completed = avg(fl, func(j *fjob) {
		c := per[j.cluster]
		c.Completed++
		c.AvgJCT += j.finish - j.submit
	})
	fr.StayAvgJCT, fr.StayCompleted = avg(stay, func(j *fjob) {
		c := per[j.home]
		c.StayDone++
		c.StayAvgJCT += j.finish - j.submit
	})
	for _, j := range fl.jobs {
		per[j.home].Submitted++
	}
	for i := range fr.Clusters {
		c := &fr.Clusters[i]
		if c.Completed > 0 {
			c.AvgJCT /= float64(c.Completed)
		}
		if c.StayDone > 0 {
			c.StayAvgJCT /= float64(c.StayDone)
		}
	}
	for _, j := range fl.jobs {
		if j.n < j.spec.Replicas {
			fr.Clamped++
		}
	}
	if fr.Jobs > 0 {
		fr.MigrationsPerJob = float64(fr.Migrations) / float64(fr.Jobs)
	}
	if fr.StayAvgJCT > 0 {
		fr.Improvement = 1 - fr.AvgJCT/fr.StayAvgJCT
	}
	return fr
}

func printFleet(w io.Writer, fr fleetResult) {
	fmt.Fprintf(w, "fleet: %d jobs, %d completed (staying: %d); avg JCT %.2f h vs %.2f h staying (%+.1f%%); %.3f migrations per job (%.0f s charged), %d routed\n",
		fr.Jobs, fr.Completed, fr.StayCompleted, fr.AvgJCT/3600, fr.StayAvgJCT/3600, -100*fr.Improvement, fr.MigrationsPerJob, fr.MigrationCostS, fr.Routed)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "cluster\tregion\tdevices\tsubmitted\tfinished here\tavg JCT (h)\tGPU-hours\tstaying: avg JCT (h)\t")
	for _, c := range fr.Clusters {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%.2f\t%.0f\t%.2f\t\n", c.Name, c.Region, c.Devices, c.Submitted, c.Completed, c.AvgJCT/3600, c.GPUHours, c.StayAvgJCT/3600)
	}
	tw.Flush()
}

package main

// -serve: an inference service and elastic training on one cluster.
//
// The service (spec file, serveSpec) replays an LLM inference trace through
// its replicas (package serving/sim, token level); the training workload
// runs through the chosen policy (scheduler/sim). Modes (-serve-modes):
//
//   - static: a split sized for the service's peak: peak_replicas replicas
//     all along, training on the rest of the cluster.
//   - joint: the service's autoscaler decides its replicas; their devices
//     are taken first each round (sim.Service: the policy sees the service
//     as a pinned job and the jobs it preempts are placed again on what is
//     left), and training gets every other device. Training gives devices
//     back at round starts, so a scale-up waits for the next round
//     (serving/sim Config.GrantEvery) before its start-up: the autoscaler
//     plans for the start-up lag only, and its headroom absorbs the wait
//     (the serving attainment of joint against alone measures it).
//   - alone: the service by itself, autoscaled, GPUs granted at once; no
//     training.
//
// The trace, rate-scaled so peak_replicas replicas just meet the SLO at
// its peak (serving/sim.Calibrate), repeats back to back (serving.Trace.
// Repeat, a period of its length rounded up to the minute) over 1.25 × the
// longest static-mode training run; past that, the service holds
// peak_replicas.

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/goodsched/goodsched/accel"
	"github.com/goodsched/goodsched/energy"
	"github.com/goodsched/goodsched/scheduler/sim"
	"github.com/goodsched/goodsched/serving"
	"github.com/goodsched/goodsched/serving/servingdata"
	servesim "github.com/goodsched/goodsched/serving/sim"
)

// serveSpec is the -serve file (JSON). Only trace and peak_replicas are
// required.
type serveSpec struct {
	// Name is the service's name (default "chat").
	Name string `json:"name"`
	// Trace is an Azure LLM inference trace CSV (a path relative to the
	// spec file's folder, or absolute), or "embedded": the Azure
	// conversation trace 2023 (serving/servingdata, CC BY 4.0).
	Trace string `json:"trace"`
	// PeakReplicas is the rate scaling's target: the trace is scaled so
	// that this many replicas just meet the SLO in its busiest minute.
	PeakReplicas int `json:"peak_replicas"`
	// Startup is a replica's start-up lag (default "60s").
	Startup string `json:"startup"`
	// TTFTP90 and TPOTP90 are the SLO (defaults "1s" and "50ms").
	TTFTP90 string `json:"ttft_p90"`
	TPOTP90 string `json:"tpot_p90"`
	// Autoscaler is kpa, dynamo or goodsched (default goodsched).
	Autoscaler string `json:"autoscaler"`
	// MaxReplicas is the most replicas the autoscaler may hold, from
	// peak_replicas (the service never takes more than the split sized
	// for its peak) to the default, all the replicas the cluster holds.
	MaxReplicas int `json:"max_replicas"`
	// KPATarget is KPA's per-replica concurrency target (default: the
	// load test's concurrency per replica at peak).
	KPATarget float64 `json:"kpa_target"`
	// GPUType is the cluster type the replicas run on (default: the
	// cluster's only type). The replica's speed is always the serving
	// ground truth, Llama-2-70B on four H100s (Splitwise): the cluster
	// only counts its devices.
	GPUType accel.TypeKey `json:"gpu_type"`
	// Seed seeds the rate scaling (default 1).
	Seed uint64 `json:"seed"`
}

// servingMode is one -serve-modes entry of the JSON output.
type servingMode struct {
	Mode                string   `json:"mode"`
	SLOAttainment       float64  `json:"slo_attainment"`
	ServingGPUHours     float64  `json:"serving_gpu_hours"`
	ServingPeakReplicas int      `json:"serving_peak_replicas"`
	TrainingAvgJCT      *float64 `json:"training_avg_jct_s,omitempty"`
	TrainingMakespan    *float64 `json:"training_makespan_s,omitempty"`
	TrainingGPUHours    *float64 `json:"training_gpu_hours,omitempty"`
	TrainingCompleted   *float64 `json:"training_completed,omitempty"`
	TrainingRestarts    *float64 `json:"training_restarts,omitempty"`
}

// servingRun describes the shared setup in the JSON output.
type servingRun struct {
	Service      string  `json:"service"`
	Trace        string  `json:"trace"`
	Scale        float64 `json:"scale"`
	PeakReplicas int     `json:"peak_replicas"`
	GPUsPerRep   int     `json:"gpus_per_replica"`
	Autoscaler   string  `json:"autoscaler"`
	Hours        float64 `json:"serving_hours"`
	Policy       string  `json:"policy"`
	Workloads    int     `json:"workloads"`
}

var serveModeNames = []string{"alone", "static", "joint"}

// parseServeModes reads -serve-modes.
func parseServeModes(v string) ([]string, error) {
	var modes []string
	for _, m := range strings.Split(v, ",") {
		m = strings.TrimSpace(m)
		if m == "" {
			continue
		}
		if !slices.Contains(serveModeNames, m) {
			return nil, usage("-serve-modes: unknown mode %q (known: %s)", m, strings.Join(serveModeNames, ", "))
		}
		if !slices.Contains(modes, m) {
			modes = append(modes, m)
		}
	}
	if len(modes) == 0 {
		return nil, usage("-serve-modes: no modes given")
	}
	return modes, nil
}

// readServeSpec reads and checks the -serve file; the service it returns
// has every default filled in.
func readServeSpec(path string, cluster accel.Cluster) (serveSpec, serving.Service, serving.Trace, error) {
	var spec serveSpec
	data, err := os.ReadFile(path)
	if err != nil {
		return spec, serving.Service{}, serving.Trace{}, usage("-serve: %v", err)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&spec); err != nil {
		return spec, serving.Service{}, serving.Trace{}, usage("-serve %s: %v", path, err)
	}
	bad := func(format string, a ...any) error {
		return usage("-serve %s: %s", path, fmt.Sprintf(format, a...))
	}
	if spec.Trace == "" {
		return spec, serving.Service{}, serving.Trace{}, bad("trace is missing (a CSV path or \"embedded\")")
	}
	if spec.PeakReplicas < 1 {
		return spec, serving.Service{}, serving.Trace{}, bad("peak_replicas %d: need at least 1", spec.PeakReplicas)
	}
	spec.Name = cmp.Or(spec.Name, "chat")
	spec.Autoscaler = cmp.Or(spec.Autoscaler, "goodsched")
	if !slices.Contains([]string{"kpa", "dynamo", "goodsched"}, spec.Autoscaler) {
		return spec, serving.Service{}, serving.Trace{}, bad("autoscaler %q: want kpa, dynamo or goodsched", spec.Autoscaler)
	}
	if spec.KPATarget < 0 || math.IsNaN(spec.KPATarget) {
		return spec, serving.Service{}, serving.Trace{}, bad("kpa_target %v is negative", spec.KPATarget)
	}
	if spec.Seed == 0 {
		spec.Seed = 1
	}
	durs := map[string]*string{"startup": &spec.Startup, "ttft_p90": &spec.TTFTP90, "tpot_p90": &spec.TPOTP90}
	defaults := map[string]string{"startup": "60s", "ttft_p90": "1s", "tpot_p90": "50ms"}
	parsed := map[string]time.Duration{}
	for _, k := range []string{"startup", "ttft_p90", "tpot_p90"} {
		v := cmp.Or(*durs[k], defaults[k])
		d, err := time.ParseDuration(v)
		if err != nil {
			return spec, serving.Service{}, serving.Trace{}, bad("%s %q: want a duration such as 60s", k, v)
		}
		*durs[k], parsed[k] = v, d
	}
	if spec.GPUType == "" {
		if ts := cluster.Types(); len(ts) == 1 {
			spec.GPUType = ts[0]
		} else {
			return spec, serving.Service{}, serving.Trace{}, bad("gpu_type is needed on a cluster of several types (%v)", ts)
		}
	}
	engine := servesim.Llama2_70B_H100()
	svc := serving.Service{
		Name: spec.Name, Model: engine.Model, GPUType: spec.GPUType, GPUsPerReplica: engine.GPUs,
		SLO: serving.SLO{TTFTP90: parsed["ttft_p90"], TPOTP90: parsed["tpot_p90"]}, Startup: parsed["startup"],
	}
	if err := svc.Validate(); err != nil {
		return spec, svc, serving.Trace{}, bad("%v", err)
	}
	// The service may grow up to the cluster's devices of its type, in
	// whole replicas on one node each.
	perNode := 0
	for _, n := range cluster.Nodes {
		k := 0
		for _, d := range n.Devices {
			if d.Type == svc.GPUType {
				k++
			}
		}
		perNode += k / svc.GPUs()
	}
	if spec.PeakReplicas > perNode {
		return spec, svc, serving.Trace{}, bad("peak_replicas %d of %d %s devices each: the cluster holds %d such replicas", spec.PeakReplicas, svc.GPUs(), svc.GPUType, perNode)
	}
	if spec.MaxReplicas == 0 {
		spec.MaxReplicas = perNode
	}
	if spec.MaxReplicas < spec.PeakReplicas || spec.MaxReplicas > perNode {
		return spec, svc, serving.Trace{}, bad("max_replicas %d is outside [peak_replicas %d, %d (the cluster)]", spec.MaxReplicas, spec.PeakReplicas, perNode)
	}
	svc.MaxReplicas = spec.MaxReplicas
	var trace serving.Trace
	if spec.Trace == "embedded" {
		trace, err = servingdata.Conversation()
	} else {
		p := spec.Trace
		if !filepath.IsAbs(p) {
			p = filepath.Join(filepath.Dir(path), p)
		}
		f, ferr := os.Open(p)
		if ferr != nil {
			return spec, svc, trace, bad("trace: %v", ferr)
		}
		trace, err = serving.ReadAzureTrace(f)
		f.Close()
	}
	if err != nil {
		return spec, svc, trace, bad("trace %s: %v", spec.Trace, err)
	}
	if len(trace.Requests) == 0 {
		return spec, svc, trace, bad("trace %s has no requests", spec.Trace)
	}
	return spec, svc, trace, nil
}

// simulateServing runs -serve: the modes of -serve-modes, the training
// side with policy spec on every workload, and prints serving_modes.
func simulateServing(ctx context.Context, o options, policies []string, reg map[string]policySpec, cluster accel.Cluster, apps map[string]*sim.Application,
	workloads []sim.Workload, stdout, stderr io.Writer) error {
	if o.tenants != "" || o.carbon != "" || o.sweep != "" || o.mtbf > 0 || o.provision || o.oracle || o.topology != "" ||
		o.placers != "" || o.variability != "" || o.slowdowns != "" {
		return usage("-serve cannot be combined with -tenants, -carbon, -sweep, -mtbf, -provision, -oracle, -topology, -placers, -variability or -slowdowns")
	}
	if len(policies) != 1 {
		return usage("-serve runs one training policy; -policies gives %d", len(policies))
	}
	policy, spec := policies[0], reg[policies[0]]
	modes, err := parseServeModes(o.serveModes)
	if err != nil {
		return err
	}
	ss, svc, trace, err := readServeSpec(o.serve, cluster)
	if err != nil {
		return err
	}
	interval := o.interval
	if interval == 0 {
		interval = time.Minute
	}
	if interval%(2*time.Second) != 0 {
		return usage("-interval %v: with -serve it must be a multiple of 2s, the autoscaler's tick", interval)
	}
	engine := servesim.Llama2_70B_H100()
	base := servesim.Config{Trace: trace, Service: svc, Engine: engine}
	fmt.Fprintf(stderr, "serve: load test of %d replicas...\n", ss.PeakReplicas)
	cal, err := servesim.Calibrate(ctx, base, ss.PeakReplicas, ss.Seed)
	if err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	scaled, err := trace.Scale(cal.Scale, ss.Seed)
	if err != nil {
		return err
	}
	kpaTarget := ss.KPATarget
	if kpaTarget == 0 {
		kpaTarget = cal.ConcurrencyPerReplica
	}

	// Training in the static split first: its longest run sets how long
	// the service is simulated.
	peakDevices := ss.PeakReplicas * svc.GPUs()
	staticSvc := sim.Service{Name: svc.Name, Type: svc.GPUType, GPUsPerReplica: svc.GPUs(),
		Replicas: func(time.Duration) int { return ss.PeakReplicas }}
	training := func(s sim.Service) ([]sim.Result, error) {
		cfgs := make([]sim.Config, len(workloads))
		for i, w := range workloads {
			p, err := spec.build()
			if err != nil {
				return nil, fmt.Errorf("policy %s: %w", policy, err)
			}
			cfgs[i] = sim.Config{
				Cluster: cluster, Jobs: w.Jobs, Apps: apps, Policy: p, Placer: spec.placer,
				Kind: spec.kind, Oracle: spec.oracle, PerType: spec.perType && len(cluster.Types()) > 1,
				Interval: interval, InterferenceSlowdown: o.interference, Explore: o.explore,
				Power: energy.PowerModel{PUE: o.pue}, Services: []sim.Service{s},
			}
		}
		return parallel(len(cfgs), func(i int) (sim.Result, error) {
			r, err := sim.Run(ctx, cfgs[i])
			if err != nil {
				return r, fmt.Errorf("%s: %w", workloads[i].Name, err)
			}
			return r, nil
		})
	}
	wantTraining := slices.Contains(modes, "static") || slices.Contains(modes, "joint")
	var static []sim.Result
	longest := scaled.Duration()
	if wantTraining {
		fmt.Fprintf(stderr, "serve: training (%s, %d workload(s)) beside a static split of %d devices...\n", policy, len(workloads), peakDevices)
		if static, err = training(staticSvc); err != nil {
			return err
		}
		for _, r := range static {
			for _, j := range r.Jobs {
				longest = max(longest, j.Finish)
			}
		}
	}
	period := (scaled.Duration()/time.Minute + 1) * time.Minute
	copies := int(math.Ceil(1.25 * float64(longest) / float64(period)))
	long, err := scaled.Repeat(max(1, copies), period)
	if err != nil {
		return err
	}
	run := servingRun{Service: svc.Name, Trace: ss.Trace, Scale: round3(cal.Scale), PeakReplicas: ss.PeakReplicas,
		GPUsPerRep: svc.GPUs(), Autoscaler: ss.Autoscaler, Hours: round3(float64(copies) * period.Hours()), Policy: policy, Workloads: len(workloads)}
	if !wantTraining {
		run.Policy, run.Workloads = "", 0
	}
	fmt.Fprintf(stderr, "serve: rate ×%.3f, %d requests over %.1f h; serving %s...\n", cal.Scale, len(long.Requests), run.Hours, strings.Join(modes, ", "))

	// The service in every mode, in parallel.
	serveCfg := func(mode string) (servesim.Config, error) {
		c := base
		c.Trace = long
		c.InitialReplicas = ss.PeakReplicas
		if mode == "static" {
			c.Service.MinReplicas, c.Service.MaxReplicas = ss.PeakReplicas, ss.PeakReplicas
			return c, nil
		}
		c.Hold = time.Minute
		if mode == "joint" {
			c.GrantEvery = interval
		}
		c.Profile = serving.NewProfile()
		for _, r := range servesim.Sweep(engine) {
			if err := c.Profile.Observe(r); err != nil {
				return c, err
			}
		}
		switch ss.Autoscaler {
		case "kpa":
			c.Autoscaler = &serving.KPA{Service: svc, TargetConcurrency: kpaTarget}
		case "dynamo":
			c.Autoscaler = &serving.Dynamo{Service: svc, Profile: c.Profile}
		default:
			c.Autoscaler = &serving.Predictive{Service: svc, Profile: c.Profile}
		}
		return c, nil
	}
	served, err := parallel(len(modes), func(i int) (servesim.Result, error) {
		c, err := serveCfg(modes[i])
		if err != nil {
			return servesim.Result{}, err
		}
		r, err := servesim.Run(ctx, c)
		if err != nil {
			return r, fmt.Errorf("serving (%s): %w", modes[i], err)
		}
		return r, nil
	})
	if err != nil {
		return err
	}

	out := make([]servingMode, len(modes))
	for i, m := range modes {
		r := served[i]
		out[i] = servingMode{Mode: m, SLOAttainment: round4(r.SLOAttainment), ServingGPUHours: round3(r.GPUHours), ServingPeakReplicas: r.PeakReplicas}
		fmt.Fprintf(stderr, "serve: %-6s serving attainment %.4f, %.1f GPU-hours, peak %d replicas\n", m, r.SLOAttainment, r.GPUHours, r.PeakReplicas)
		var res []sim.Result
		switch m {
		case "static":
			res = static
		case "joint":
			end := long.Duration()
			joint := staticSvc
			joint.Replicas = func(now time.Duration) int {
				if now >= end {
					return ss.PeakReplicas
				}
				return r.MaxHeld(now, now+interval)
			}
			fmt.Fprintf(stderr, "serve: training beside the autoscaled service...\n")
			if res, err = training(joint); err != nil {
				return err
			}
		default:
			continue
		}
		var jct, makespan, gpuh, done, restarts float64
		short := 0
		for _, t := range res {
			jct += t.AvgJCT.Seconds()
			makespan += t.Makespan.Seconds()
			gpuh += t.GPUHours
			done += float64(t.Completed)
			restarts += float64(t.Restarts)
			short += t.ServiceShortfall
		}
		if short > 0 {
			return fmt.Errorf("serve: %s: the service found no room for %d replica-rounds", m, short)
		}
		n := float64(len(res))
		jct, makespan, gpuh, done, restarts = round3(jct/n), round3(makespan/n), round3(gpuh/n), done/n, restarts/n
		out[i].TrainingAvgJCT, out[i].TrainingMakespan, out[i].TrainingGPUHours = &jct, &makespan, &gpuh
		out[i].TrainingCompleted, out[i].TrainingRestarts = &done, &restarts
	}
	if o.json {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(struct {
			Serve        servingRun    `json:"serve"`
			ServingModes []servingMode `json:"serving_modes"`
		}{run, out})
	}
	fmt.Fprintf(stdout, "service %s: %s at rate ×%.3f (peak %d replicas of %d GPUs), %s autoscaler, %.1f h; training: %s on %d workload(s), %s\n",
		run.Service, run.Trace, run.Scale, run.PeakReplicas, run.GPUsPerRep, run.Autoscaler, run.Hours, policy, len(workloads), o.cluster)
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "mode\tSLO attainment\tserving GPU-h\tpeak replicas\ttraining avg JCT (h)\tmakespan (h)\ttraining GPU-h\tcompleted\t")
	for _, m := range out {
		if m.TrainingAvgJCT == nil {
			fmt.Fprintf(tw, "%s\t%.4f\t%.1f\t%d\t-\t-\t-\t-\t\n", m.Mode, m.SLOAttainment, m.ServingGPUHours, m.ServingPeakReplicas)
			continue
		}
		fmt.Fprintf(tw, "%s\t%.4f\t%.1f\t%d\t%.2f\t%.1f\t%.0f\t%.0f\t\n", m.Mode, m.SLOAttainment, m.ServingGPUHours, m.ServingPeakReplicas,
			*m.TrainingAvgJCT/3600, *m.TrainingMakespan/3600, *m.TrainingGPUHours, *m.TrainingCompleted)
	}
	return tw.Flush()
}

// parallel runs f(0..n-1) on up to GOMAXPROCS goroutines and returns the
// results in order, or the first error by index.
func parallel[T any](n int, f func(int) (T, error)) ([]T, error) {
	out := make([]T, n)
	errs := make([]error, n)
	sem := make(chan struct{}, max(1, runtime.GOMAXPROCS(0)))
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			out[i], errs[i] = f(i)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

func round3(v float64) float64 { return math.Round(v*1e3) / 1e3 }
func round4(v float64) float64 { return math.Round(v*1e4) / 1e4 }

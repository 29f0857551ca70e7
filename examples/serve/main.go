// Command serve replays an LLM inference trace through a service's
// replicas under several autoscalers and compares SLO attainment and GPU
// time.
//
//	go run ./examples/serve -trace FILE -peak-replicas N -startup DUR \
//	    -autoscalers kpa,dynamo,goodsched -json
//
// The trace (default: the embedded Azure LLM inference conversation trace,
// serving/servingdata) is rate-scaled so that a fixed fleet of
// -peak-replicas replicas just meets the SLO in every 1-minute window
// (sim.Calibrate, a load test on the ground truth); that load test also
// gives KPA's per-replica concurrency target (-kpa-target overrides it).
// The service is Llama-2-70B on four H100s per replica (Splitwise's
// measurements, serving/sim.Llama2_70B_H100), SLO p90 TTFT ≤ -ttft and p90
// TPOT ≤ -tpot. Every autoscaler starts from the same replicas and, except
// KPA, learns the replica's speed only from Reports: a pre-deployment
// sweep, then every iteration.
//
// Output (-json): {"scale", "kpa_target", "autoscalers": [{"name",
// "slo_attainment", "gpu_hours", "peak_replicas", "violating_windows"}]};
// -windows adds each window, -plot DIR writes replicas.svg and tpot.svg.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/goodsched/goodsched/serving"
	"github.com/goodsched/goodsched/serving/servingdata"
	"github.com/goodsched/goodsched/serving/sim"
)

type config struct {
	trace       string
	peak        int
	startup     time.Duration
	autoscalers []string
	ttft, tpot  time.Duration
	kpaTarget   float64
	seed        uint64
	json        bool
	windows     bool
	plotDir     string
}

type autoscalerResult struct {
	Name             string       `json:"name"`
	SLOAttainment    float64      `json:"slo_attainment"`
	GPUHours         float64      `json:"gpu_hours"`
	PeakReplicas     int          `json:"peak_replicas"`
	ViolatingWindows int          `json:"violating_windows"`
	Windows          []sim.Window `json:"windows,omitempty"`
	windows          []sim.Window
}

type output struct {
	Trace       string             `json:"trace"`
	Requests    int                `json:"requests"`
	Scale       float64            `json:"scale"`
	KPATarget   float64            `json:"kpa_target"`
	Startup     string             `json:"startup"`
	Autoscalers []autoscalerResult `json:"autoscalers"`
}

func main() {
	cfg, err := parse(os.Args[1:], os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		os.Exit(0)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "serve:", err)
		os.Exit(2)
	}
	out, err := run(context.Background(), cfg, os.Stderr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "serve:", err)
		os.Exit(1)
	}
	if err := write(os.Stdout, out, cfg.json); err != nil {
		fmt.Fprintln(os.Stderr, "serve:", err)
		os.Exit(1)
	}
}

var known = []string{"kpa", "dynamo", "goodsched"}

func parse(args []string, stderr io.Writer) (config, error) {
	var cfg config
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&cfg.trace, "trace", "", "Azure LLM inference trace CSV (default: the embedded conversation trace)")
	fs.IntVar(&cfg.peak, "peak-replicas", 16, "rate-scale the trace so this many replicas just meet the SLO at peak")
	fs.DurationVar(&cfg.startup, "startup", time.Minute, "replica start-up time")
	list := fs.String("autoscalers", strings.Join(known, ","), "comma-separated autoscalers: "+strings.Join(known, ", "))
	fs.DurationVar(&cfg.ttft, "ttft", time.Second, "SLO: p90 time to first token")
	fs.DurationVar(&cfg.tpot, "tpot", 50*time.Millisecond, "SLO: p90 time per output token")
	fs.Float64Var(&cfg.kpaTarget, "kpa-target", 0, "KPA per-replica concurrency target (0: the load test's concurrency per replica)")
	fs.Uint64Var(&cfg.seed, "seed", 1, "seed of the rate scaling")
	fs.BoolVar(&cfg.json, "json", false, "print JSON")
	fs.BoolVar(&cfg.windows, "windows", false, "include every window in the JSON")
	fs.StringVar(&cfg.plotDir, "plot", "", "write replicas.svg and tpot.svg to this folder")
	if err := fs.Parse(args); err != nil {
		return cfg, err
	}
	if fs.NArg() > 0 {
		return cfg, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if cfg.peak < 1 {
		return cfg, fmt.Errorf("-peak-replicas %d: need at least 1", cfg.peak)
	}
	if cfg.startup < 0 {
		return cfg, fmt.Errorf("-startup %v is negative", cfg.startup)
	}
	if cfg.kpaTarget < 0 || math.IsNaN(cfg.kpaTarget) {
		return cfg, fmt.Errorf("-kpa-target %v is negative", cfg.kpaTarget)
	}
	for _, name := range strings.Split(*list, ",") {
		name = strings.TrimSpace(name)
		if !slices.Contains(known, name) {
			return cfg, fmt.Errorf("-autoscalers: unknown %q (known: %s)", name, strings.Join(known, ", "))
		}
		cfg.autoscalers = append(cfg.autoscalers, name)
	}
	return cfg, nil
}

func run(ctx context.Context, cfg config, progress io.Writer) (output, error) {
	out := output{Trace: "embedded Azure LLM inference trace 2023, conversation", Startup: cfg.startup.String()}
	var trace serving.Trace
	var err error
	if cfg.trace == "" {
		trace, err = servingdata.Conversation()
	} else {
		out.Trace = cfg.trace
		f, ferr := os.Open(cfg.trace)
		if ferr != nil {
			return out, ferr
		}
		trace, err = serving.ReadAzureTrace(f)
		f.Close()
	}
	if err != nil {
		return out, err
	}
	engine := sim.Llama2_70B_H100()
	svc := serving.Service{
		Name: "chat", Model: engine.Model, GPUType: engine.Type, GPUsPerReplica: engine.GPUs,
		SLO: serving.SLO{TTFTP90: cfg.ttft, TPOTP90: cfg.tpot}, Startup: cfg.startup,
		MaxReplicas: 4 * cfg.peak, // the cluster's GPUs: no autoscaler may hold more
	}
	if err := svc.Validate(); err != nil {
		return out, err
	}
	base := sim.Config{Trace: trace, Service: svc, Engine: engine}
	fmt.Fprintf(progress, "serve: load test of %d replicas...\n", cfg.peak)
	cal, err := sim.Calibrate(ctx, base, cfg.peak, cfg.seed)
	if err != nil {
		return out, err
	}
	out.Scale = round(cal.Scale, 3)
	out.KPATarget = cfg.kpaTarget
	if out.KPATarget == 0 {
		out.KPATarget = round(cal.ConcurrencyPerReplica, 2)
	}
	scaled, err := trace.Scale(cal.Scale, cfg.seed)
	if err != nil {
		return out, err
	}
	out.Requests = len(scaled.Requests)
	// Every autoscaler starts with the replicas the first minutes' rate
	// needs in proportion to the peak's.
	initial := initialReplicas(scaled, cfg.peak)
	fmt.Fprintf(progress, "serve: rate ×%.3f (%d requests), KPA target %.2f, %d initial replicas\n", cal.Scale, len(scaled.Requests), out.KPATarget, initial)
	for _, name := range cfg.autoscalers {
		profile := serving.NewProfile()
		for _, r := range sim.Sweep(engine) {
			if err := profile.Observe(r); err != nil {
				return out, err
			}
		}
		var a serving.Autoscaler
		switch name {
		case "kpa":
			a = &serving.KPA{Service: svc, TargetConcurrency: out.KPATarget}
		case "dynamo":
			a = &serving.Dynamo{Service: svc, Profile: profile}
		case "goodsched":
			a = &serving.Predictive{Service: svc, Profile: profile}
		}
		c := base
		c.Trace, c.Autoscaler, c.Profile, c.InitialReplicas = scaled, a, profile, initial
		c.Hold = time.Minute
		res, err := sim.Run(ctx, c)
		if err != nil {
			return out, fmt.Errorf("%s: %w", name, err)
		}
		r := autoscalerResult{Name: name, SLOAttainment: round(res.SLOAttainment, 4), GPUHours: round(res.GPUHours, 2), PeakReplicas: res.PeakReplicas}
		for _, w := range res.Windows {
			if !w.Met {
				r.ViolatingWindows++
			}
		}
		r.windows = res.Windows
		if cfg.windows {
			r.Windows = res.Windows
		}
		fmt.Fprintf(progress, "serve: %-9s attainment %.4f  GPU-hours %.2f  peak %d replicas\n", name, res.SLOAttainment, res.GPUHours, res.PeakReplicas)
		out.Autoscalers = append(out.Autoscalers, r)
	}
	if cfg.plotDir != "" {
		if err := writePlots(cfg.plotDir, out, cfg.tpot.Seconds()*1000); err != nil {
			return out, err
		}
	}
	return out, nil
}

// initialReplicas is peak × (arrivals of the busiest of the first five
// minutes / arrivals of the busiest minute), rounded up.
func initialReplicas(t serving.Trace, peak int) int {
	counts := map[int]int{}
	busiest := 0
	for _, r := range t.Requests {
		m := int(r.Arrival / time.Minute)
		counts[m]++
		busiest = max(busiest, counts[m])
	}
	first := 0
	for m := range 5 {
		first = max(first, counts[m])
	}
	return max(1, int(math.Ceil(float64(peak)*float64(first)/float64(busiest))))
}

func round(v float64, digits int) float64 {
	p := math.Pow(10, float64(digits))
	return math.Round(v*p) / p
}

func write(w io.Writer, out output, asJSON bool) error {
	if asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(out)
	}
	fmt.Fprintf(w, "trace %s, %d requests (rate ×%.3f), start-up %s, KPA target %.2f\n", out.Trace, out.Requests, out.Scale, out.Startup, out.KPATarget)
	fmt.Fprintf(w, "%-10s %14s %10s %6s %10s\n", "autoscaler", "slo_attainment", "gpu_hours", "peak", "violating")
	for _, a := range out.Autoscalers {
		fmt.Fprintf(w, "%-10s %14.4f %10.2f %6d %10d\n", a.Name, a.SLOAttainment, a.GPUHours, a.PeakReplicas, a.ViolatingWindows)
	}
	return nil
}

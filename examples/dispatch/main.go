// Command dispatch simulates duplication-aware dispatch: N workers under
// Poisson arrivals with heavy-tailed per-copy service times, at loads from
// 10% to 95%, every decision taken by the real scheduler/dispatch
// Dispatcher on a virtual clock. It prints p50/p99/p99.9 latency per policy
// and load, writes an SVG of p99 against load, and with -json prints
// {"results":[{"policy","service","load","p50_ms","p99_ms","p999_ms",...}]}.
//
// Load is the offered primary work only: arrival rate × mean service time ÷
// workers. Duplicates, and the partial work of cancelled copies, come on
// top (see the utilization column).
//
// With -faulty it runs the faulty-work scenario instead (Abdulazeez et al.,
// IEEE EDGE 2017): part of the work is bad, scanning costs worker time, and
// the robust scan rule is compared with scan-all and scan-none at each load
// for -arrivals arrivals. It prints each policy's queue-length trend and
// scans per bad task caught, writes an SVG of queue length over time, and
// with -json prints {"faulty":[{"policy","load","queue_slope",
// "scans_per_bad_caught",...}]}.
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/goodsched/goodsched/scheduler/dispatch"
)

type options struct {
	workers  int
	tasks    int
	seed     uint64
	loads    []float64
	policies []dispatch.Policy
	services []Service
	choice   dispatch.Choice
	svg      string
	json     bool
	tied     bool
	faulty   bool
	arrivals int
	// tty: stderr is a terminal, so progress may redraw one line with \r;
	// otherwise (a log, a pipe, CI) each service gets one plain line.
	tty bool
}

func parse(args []string, stderr io.Writer) (options, error) {
	fs := flag.NewFlagSet("dispatch", flag.ContinueOnError)
	fs.SetOutput(io.Discard) // errors become one line in main; -h prints usage below
	o := options{}
	fs.IntVar(&o.workers, "workers", 16, "number of workers")
	fs.IntVar(&o.tasks, "tasks", 100000, "measured tasks per (policy, load, service) point; 10% more before and after")
	fs.Uint64Var(&o.seed, "seed", 1, "random seed (arrivals, service times, power-of-two choice)")
	loads := fs.String("loads", "0.1,0.2,0.3,0.5,0.7,0.8,0.9,0.95", "comma-separated primary loads in (0, 1)")
	pols := fs.String("policies", "none,naive,das,hedged,budgeted", "comma-separated policies")
	svcs := fs.String("service", "stragglers,pareto", "comma-separated service distributions: stragglers (1 ms, 1 copy in 20 10 ms), pareto (shape 2.1, mean 1 ms)")
	choice := fs.String("choice", "least-loaded", "placement: least-loaded, power-of-two or round-robin")
	fs.StringVar(&o.svg, "svg", "dispatch_p99.svg", "SVG file for p99 against load (empty: none; with -json, none unless set)")
	fs.BoolVar(&o.json, "json", false, "print JSON instead of a table")
	fs.BoolVar(&o.tied, "purge-on-start", false, "also purge a queued sibling when a copy starts (tied requests)")
	fs.BoolVar(&o.faulty, "faulty", false, "run the faulty-work scenario (robust, scan-all and scan-none scanning) instead; -loads defaults to 0.3,0.8 and -svg to dispatch_faulty.svg")
	fs.IntVar(&o.arrivals, "arrivals", 1000000, "arrivals per (scan policy, load) point of the -faulty scenario")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(stderr, "usage: dispatch [flags]\n\n"+
				"dispatch simulates duplication-aware dispatch (DAS, hedged and budgeted\n"+
				"duplicates) on a virtual clock and prints p50/p99/p99.9 latency per policy,\n"+
				"service-time distribution and load.\n\nflags:\n")
			fs.SetOutput(stderr)
			fs.PrintDefaults()
		}
		return o, err
	}
	svgSet, loadsSet := false, false
	fs.Visit(func(f *flag.Flag) {
		svgSet = svgSet || f.Name == "svg"
		loadsSet = loadsSet || f.Name == "loads"
	})
	if o.faulty && !svgSet {
		o.svg = "dispatch_faulty.svg"
	}
	if o.faulty && !loadsSet {
		*loads = "0.3,0.8"
	}
	if o.json && !svgSet {
		o.svg = "" // -json is for machines: write no file they did not ask for
	}
	if o.arrivals < 1000 || o.arrivals > 1<<26 {
		return o, fmt.Errorf("-arrivals %d: want 1000..%d", o.arrivals, 1<<26)
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if o.workers < 2 || o.workers > 1<<16 {
		return o, fmt.Errorf("-workers %d: want 2..65536", o.workers)
	}
	if o.tasks < 1000 || o.tasks > 1<<26 {
		return o, fmt.Errorf("-tasks %d: want 1000..%d", o.tasks, 1<<26)
	}
	for _, f := range strings.Split(*loads, ",") {
		v, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
		if err != nil || !(v > 0 && v < 1) {
			return o, fmt.Errorf("-loads: %q is not a load in (0, 1)", f)
		}
		o.loads = append(o.loads, v)
	}
	for _, f := range strings.Split(*pols, ",") {
		p, err := dispatch.ParsePolicy(strings.TrimSpace(f))
		if err != nil {
			return o, fmt.Errorf("-policies: %w", err)
		}
		o.policies = append(o.policies, p)
	}
	for _, f := range strings.Split(*svcs, ",") {
		switch strings.TrimSpace(f) {
		case "stragglers":
			o.services = append(o.services, stragglers())
		case "pareto":
			o.services = append(o.services, pareto())
		default:
			return o, fmt.Errorf("-service: %q (want stragglers or pareto)", f)
		}
	}
	c, err := dispatch.ParseChoice(*choice)
	if err != nil {
		return o, fmt.Errorf("-choice: %w", err)
	}
	o.choice = c
	return o, nil
}

func main() {
	o, err := parse(os.Args[1:], os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		os.Exit(0)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "dispatch:", err)
		os.Exit(2)
	}
	if fi, err := os.Stderr.Stat(); err == nil && fi.Mode()&os.ModeCharDevice != 0 {
		o.tty = true
	}
	if err := run(o, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "dispatch:", err)
		os.Exit(1)
	}
}

func run(o options, stdout, stderr io.Writer) error {
	if o.faulty {
		return runFaulty(o, stdout, stderr)
	}
	var results []SimResult
	n := len(o.services) * len(o.loads) * len(o.policies)
	for _, svc := range o.services {
		if !o.tty {
			fmt.Fprintf(stderr, "dispatch: [%d/%d] %s: %d loads × %d policies …\n", len(results)+1, n, svc.Name, len(o.loads), len(o.policies))
		}
		for _, load := range o.loads {
			for _, pol := range o.policies {
				if o.tty {
					fmt.Fprintf(stderr, "\r[%d/%d] %s load %.2f %-8s", len(results)+1, n, svc.Name, load, pol)
				}
				r, err := Simulate(SimConfig{Workers: o.workers, Load: load, Policy: pol, Choice: o.choice, Service: svc, Tasks: o.tasks, Seed: o.seed, PurgeOnStart: o.tied})
				if err != nil {
					return fmt.Errorf("%s load %.2f %s: %w", svc.Name, load, pol, err)
				}
				results = append(results, r)
			}
		}
	}
	if o.tty {
		fmt.Fprintln(stderr)
	}
	if o.svg != "" {
		if err := plotP99(o.svg, o, results); err != nil {
			return err
		}
		fmt.Fprintf(stderr, "dispatch: wrote %s\n", displayPath(o.svg))
	}
	if o.json {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", " ")
		return enc.Encode(struct {
			Results []SimResult `json:"results"`
		}{results})
	}
	return printTable(stdout, o, results)
}

func printTable(w io.Writer, o options, results []SimResult) error {
	tied := ""
	if o.tied {
		tied = ", purge on start"
	}
	fmt.Fprintf(w, "%d workers, %s placement%s, %d measured tasks per point; load = primary work only (arrival rate × mean service ÷ workers)\n",
		o.workers, o.choice, tied, o.tasks)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "service\tload\tpolicy\tp50 ms\tp99 ms\tp99.9 ms\tp99/none\tutil\tdups/task\t")
	none := map[[2]string]float64{}
	for _, r := range results {
		if r.Policy == dispatch.PolicyNone.String() {
			none[[2]string{r.Service, strconv.FormatFloat(r.Load, 'f', 3, 64)}] = r.P99Ms
		}
	}
	for _, r := range results {
		ratio := "-"
		if b, ok := none[[2]string{r.Service, strconv.FormatFloat(r.Load, 'f', 3, 64)}]; ok && b > 0 {
			ratio = strconv.FormatFloat(r.P99Ms/b, 'f', 2, 64)
		}
		fmt.Fprintf(tw, "%s\t%.0f%%\t%s\t%.2f\t%.2f\t%.2f\t%s\t%.2f\t%.2f\t\n",
			r.Service, 100*r.Load, r.Policy, r.P50Ms, r.P99Ms, r.P999Ms, ratio, r.Utilization, r.DupPerTask)
	}
	return tw.Flush()
}

// runFaulty runs the faulty-work scenario: every scan policy at every load.
func runFaulty(o options, stdout, stderr io.Writer) error {
	var results []FaultyResult
	n := len(o.loads) * len(dispatch.ScanPolicies())
	for _, load := range o.loads {
		for _, p := range []dispatch.ScanPolicy{dispatch.ScanRobust, dispatch.ScanAll, dispatch.ScanNone} {
			fmt.Fprintf(stderr, "dispatch: [%d/%d] faulty load %.2f %s: %d arrivals …\n", len(results)+1, n, load, p, o.arrivals)
			r, err := SimulateFaulty(FaultyConfig{Workers: o.workers, Load: load, Scan: p, Choice: o.choice, Arrivals: o.arrivals, Seed: o.seed, Samples: 500})
			if err != nil {
				return fmt.Errorf("faulty load %.2f %s: %w", load, p, err)
			}
			results = append(results, r)
		}
	}
	if o.svg != "" {
		if err := plotQueues(o.svg, o, results); err != nil {
			return err
		}
		fmt.Fprintf(stderr, "dispatch: wrote %s\n", displayPath(o.svg))
	}
	if o.json {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", " ")
		return enc.Encode(struct {
			Faulty []FaultyResult `json:"faulty"`
		}{results})
	}
	fmt.Fprintf(stdout, "%d workers, %s placement, %d arrivals per point; a task runs %v on average (exponential), a scan takes %v,\n"+
		"%.0f%% of tasks are bad with probability %.2f and the rest with %.2f, and a bad task run unscanned costs its worker %v more.\n"+
		"load = arrival rate × mean run time ÷ workers; predicted = the stability condition's load under the policy (bounded iff < 1)\n",
		o.workers, o.choice, o.arrivals, faultyMeanWork, faultyScanCost, 100*faultyRiskyFrac, faultyRiskyP, faultySafeP, faultyRecovery)
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "load\tpolicy\tpredicted\tqueue slope /1e6 arrivals\tmean queue\tfinal queue\tbad\tscans\tcaught\tran bad\tscans/caught\t")
	for _, r := range results {
		per := "-"
		if r.ScansPerBadCaught != nil {
			per = strconv.FormatFloat(*r.ScansPerBadCaught, 'f', 2, 64)
		}
		fmt.Fprintf(tw, "%.0f%%\t%s\t%.3f\t%.0f\t%.1f\t%d\t%d\t%d\t%d\t%d\t%s\t\n",
			100*r.Load, r.Policy, r.PredictedLoad, r.QueueSlope, r.MeanQueue, r.FinalQueue, r.Bad, r.Scans, r.BadCaught, r.BadRun, per)
	}
	return tw.Flush()
}

// displayPath is path as a user finds it: absolute when it can be made so.
func displayPath(path string) string {
	if abs, err := filepath.Abs(path); err == nil {
		return abs
	}
	return path
}

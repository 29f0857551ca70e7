// Command gavel solves one of Gavel's allocation policies on a throughput
// matrix of your own: which fraction of its time each job should spend on
// each accelerator type, by the solver behind scheduler/gavel.
//
//	go run ./examples/gavel
//	go run ./examples/gavel -problem my.json -objective cost -json
//
// A problem is one JSON object:
//
//	{"types": ["v100", "p100", "k80"], "capacity": [36, 36, 36],
//	 "cost_per_hour": [2.48, 1.46, 0.45],
//	 "jobs": [{"id": "j0", "throughput": [4.39, 2.62, 0.62], "scale": 1,
//	           "priority": 1, "steps_left": 20000, "elapsed_s": 0,
//	           "isolated_s": 0, "slo_s": 0}]}
//
// throughput is steps per second of the job's whole gang of scale devices
// on each type, in the order of types (0 = cannot run there); scale is
// the gang size (default 1) and priority the job's weight (default 1,
// Gavel's priority_weight). steps_left and elapsed_s are needed by ftf and
// makespan; isolated_s is Gavel's cumulative isolated time (ftf, default
// 0); slo_s is a deadline for cost (0 = none); cost_per_hour prices one
// device of each type (cost; default all 1).
//
// Flags:
//
//	-problem FILE   the problem (default: a small embedded example, six jobs
//	                from Gavel's throughput matrix on 4+4+4 devices)
//	-objective O    max-min (default), max-min-blind, water-filling, ftf,
//	                makespan or cost
//	-json           print {"objective", "bound", "types", "allocation"}:
//	                the objective reached, the solver's proven bound, the
//	                types, and per job (in input order) its time fraction on
//	                each type, as the solver returns it
//
// Devices used per type are Σ scale × fraction. Exit status 2 means bad
// input (one line on stderr); 1 means no allocation exists (for example
// SLOs the cluster cannot meet).
package main

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/goodsched/goodsched/scheduler/gavel"
)

//go:embed example.json
var exampleProblem []byte

func main() {
	os.Exit(run(context.Background(), os.Args[1:], os.Stdout, os.Stderr))
}

// problemFile is the JSON input.
type problemFile struct {
	Types       []string  `json:"types"`
	Capacity    []int     `json:"capacity"`
	CostPerHour []float64 `json:"cost_per_hour"`
	Jobs        []jobRow  `json:"jobs"`
}

type jobRow struct {
	ID         string    `json:"id"`
	Throughput []float64 `json:"throughput"`
	Scale      int       `json:"scale"`
	Priority   float64   `json:"priority"`
	StepsLeft  *float64  `json:"steps_left"`
	ElapsedS   float64   `json:"elapsed_s"`
	IsolatedS  float64   `json:"isolated_s"`
	SLOS       float64   `json:"slo_s"`
}

// output is what -json prints.
type output struct {
	Objective  float64     `json:"objective"`
	Bound      float64     `json:"bound"`
	Types      []string    `json:"types"`
	Allocation [][]float64 `json:"allocation"`
}

var errUsage = errors.New("usage")

func usage(format string, a ...any) error {
	return fmt.Errorf("%w: %s", errUsage, fmt.Sprintf(format, a...))
}

var objectives = []string{"max-min", "max-min-blind", "water-filling", "ftf", "makespan", "cost"}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fl := flag.NewFlagSet("gavel", flag.ContinueOnError)
	fl.SetOutput(io.Discard)
	file := fl.String("problem", "", "problem JSON file (default: the embedded example)")
	objName := fl.String("objective", "max-min", "policy: "+strings.Join(objectives, ", "))
	asJSON := fl.Bool("json", false, `print {"objective", "bound", "types", "allocation"}`)
	if err := fl.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(stderr, "usage: gavel [flags]\n\n"+
				"gavel solves one of Gavel's allocation policies on a throughput matrix:\n"+
				"which fraction of its time each job spends on each accelerator type.\n"+
				"A problem is one JSON object (go doc ./examples/gavel describes it).\n\nflags:\n")
			fl.SetOutput(stderr)
			fl.PrintDefaults()
			return 0
		}
		fmt.Fprintf(stderr, "gavel: %v\n", err)
		return 2
	}
	if fl.NArg() > 0 {
		fmt.Fprintf(stderr, "gavel: unexpected argument %q\n", fl.Arg(0))
		return 2
	}
	if err := solve(ctx, *file, *objName, *asJSON, stdout); err != nil {
		fmt.Fprintf(stderr, "gavel: %s\n", strings.ReplaceAll(err.Error(), "\n", " "))
		if errors.Is(err, errUsage) {
			return 2
		}
		return 1
	}
	return 0
}

func solve(ctx context.Context, file, objName string, asJSON bool, stdout io.Writer) error {
	data := exampleProblem
	if file != "" {
		var err error
		if data, err = os.ReadFile(file); err != nil {
			return usage("-problem: %v", err)
		}
	}
	var pf problemFile
	dec := json.NewDecoder(strings.NewReader(string(data)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&pf); err != nil {
		return usage("-problem: %v", err)
	}
	p, err := pf.problem()
	if err != nil {
		return usage("-problem: %v", err)
	}
	obj, err := pf.objective(objName, &p)
	if err != nil {
		return err
	}
	sol, err := gavel.Solve(ctx, p, obj, nil)
	switch {
	case errors.Is(err, gavel.ErrInfeasible):
		return err
	case err != nil:
		return usage("-problem: %v", err)
	}
	if asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(output{Objective: sol.Objective, Bound: sol.Bound, Types: pf.Types, Allocation: sol.X})
	}
	printTable(stdout, pf, p, obj, sol)
	return nil
}

// problem checks the file's shape and builds the solver's Problem; the
// solver's own validation reports bad numbers.
func (pf *problemFile) problem() (gavel.Problem, error) {
	k := len(pf.Types)
	if k == 0 {
		return gavel.Problem{}, errors.New(`"types" is empty`)
	}
	if len(pf.Capacity) != k {
		return gavel.Problem{}, fmt.Errorf(`"capacity" has %d entries for %d types`, len(pf.Capacity), k)
	}
	if pf.CostPerHour != nil && len(pf.CostPerHour) != k {
		return gavel.Problem{}, fmt.Errorf(`"cost_per_hour" has %d entries for %d types`, len(pf.CostPerHour), k)
	}
	if len(pf.Jobs) == 0 {
		return gavel.Problem{}, errors.New(`"jobs" is empty`)
	}
	p := gavel.Problem{Devices: pf.Capacity}
	seen := map[string]bool{}
	steps := 0
	for i, j := range pf.Jobs {
		name := j.ID
		if name == "" {
			return gavel.Problem{}, fmt.Errorf("jobs[%d]: empty id", i)
		}
		if seen[name] {
			return gavel.Problem{}, fmt.Errorf("jobs[%d]: duplicate id %q", i, name)
		}
		seen[name] = true
		if len(j.Throughput) != k {
			return gavel.Problem{}, fmt.Errorf("job %s: %d throughputs for %d types", name, len(j.Throughput), k)
		}
		if j.Scale < 0 || j.Priority < 0 || !finite(j.Priority, j.ElapsedS, j.IsolatedS, j.SLOS) ||
			j.ElapsedS < 0 || j.IsolatedS < 0 || j.SLOS < 0 {
			return gavel.Problem{}, fmt.Errorf("job %s: scale, priority, elapsed_s, isolated_s and slo_s must be finite and ≥ 0", name)
		}
		s, w := max(j.Scale, 1), j.Priority
		if w == 0 {
			w = 1
		}
		p.Throughput = append(p.Throughput, j.Throughput)
		p.Scale = append(p.Scale, s)
		p.Weight = append(p.Weight, w)
		left := 0.0
		if j.StepsLeft != nil {
			left = *j.StepsLeft
			steps++
		}
		p.StepsLeft = append(p.StepsLeft, left)
		p.Elapsed = append(p.Elapsed, seconds(j.ElapsedS))
	}
	if steps == 0 {
		p.StepsLeft = nil
	} else if steps < len(pf.Jobs) {
		return gavel.Problem{}, errors.New("steps_left is given for some jobs and not others")
	}
	return p, nil
}

// objective maps -objective to the solver's Objective, with the
// per-objective inputs it needs.
func (pf *problemFile) objective(name string, p *gavel.Problem) (gavel.Objective, error) {
	need := func() error {
		if p.StepsLeft == nil {
			return usage("-objective %s needs steps_left (and elapsed_s) for every job", name)
		}
		return nil
	}
	switch name {
	case "max-min":
		return gavel.MaxMinFairness{}, nil
	case "max-min-blind":
		return gavel.MaxMinFairness{HeterogeneityBlind: true}, nil
	case "water-filling":
		return gavel.MaxMinFairness{WaterFilling: true}, nil
	case "makespan":
		return gavel.MinMakespan{}, need()
	case "ftf":
		iso := make([]time.Duration, len(pf.Jobs))
		for i, j := range pf.Jobs {
			iso[i] = seconds(j.IsolatedS)
		}
		return gavel.FinishTimeFairness{IsolatedElapsed: iso}, need()
	case "cost":
		cost := pf.CostPerHour
		if cost == nil {
			cost = make([]float64, len(pf.Types))
			for j := range cost {
				cost[j] = 1
			}
		}
		o := gavel.MaxThroughputPerCost{CostPerHour: cost}
		for i, j := range pf.Jobs {
			if j.SLOS > 0 {
				if err := need(); err != nil {
					return nil, usage("job %s: slo_s needs steps_left for every job", j.ID)
				}
				if o.SLO == nil {
					o.SLO = make([]time.Duration, len(pf.Jobs))
				}
				o.SLO[i] = seconds(j.SLOS)
			}
		}
		return o, nil
	}
	return nil, usage("-objective %q (want one of %s)", name, strings.Join(objectives, ", "))
}

func printTable(w io.Writer, pf problemFile, p gavel.Problem, obj gavel.Objective, sol gavel.Solution) {
	fmt.Fprintf(w, "%s: objective %.6g, proven bound %.6g (gap %.2g)\n", obj.Name(), sol.Objective, sol.Bound, sol.Gap)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprint(tw, "job\tscale\t")
	for _, t := range pf.Types {
		fmt.Fprintf(tw, "%s\t", t)
	}
	fmt.Fprintln(tw, "steps/s\t")
	thr := p.EffectiveThroughput(sol.X)
	use := make([]float64, len(pf.Types))
	for m, j := range pf.Jobs {
		fmt.Fprintf(tw, "%s\t%d\t", j.ID, p.Scale[m])
		for t, x := range sol.X[m] {
			fmt.Fprintf(tw, "%.3f\t", x)
			use[t] += float64(p.Scale[m]) * x
		}
		fmt.Fprintf(tw, "%.4g\t\n", thr[m])
	}
	fmt.Fprint(tw, "devices used\t\t")
	for t, u := range use {
		fmt.Fprintf(tw, "%.2f/%d\t", u, pf.Capacity[t])
	}
	fmt.Fprintln(tw, "\t")
	tw.Flush()
}

func seconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

func finite(v ...float64) bool {
	for _, x := range v {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return false
		}
	}
	return true
}

// Command carbonplan plans one elastic job over a real year of carbon
// intensity and compares the marginal planner of CarbonScaler with the
// usual baselines.
//
// The job does -work of work (measured as time at the maximum scale) within
// -deadline of its start. For each of -weeks weekly starts it plans:
//
//   - carbon-agnostic: run at the maximum scale from the start;
//   - suspend-resume: the maximum scale in the cleanest slots (Let's Wait
//     Awhile);
//   - best static scale: suspend-resume at the best single scale;
//   - energy-only elastic: the same planner on a flat forecast, which
//     minimises energy rather than carbon, charged at the true intensity;
//   - the marginal planner (carbon.Schedule): scale per slot by marginal work
//     per gram;
//   - with -verify, the exact optimum by dynamic programming and the LP
//     lower bound;
//   - with -error e, the planner re-planning every slot from a forecast
//     with Gaussian error σ = e × mean (Let's Wait Awhile's model).
//
// It prints the carbon of each, averaged over the weeks, and the savings,
// and writes an SVG of the intensity and the chosen scale over the first
// start's deadline window (none with -json unless -svg is given). Intensity defaults to the embedded Electricity Maps California 2022
// series (ODbL); the profile to CarbonScaler's nbody10k (MIT).
//
//	go run ./examples/carbonplan
//	go run ./examples/carbonplan -weeks 52 -json
//	go run ./examples/carbonplan -intensity carbon/carbondata/electricitymaps_NO_2022_hourly.csv.gz -weeks 52
package main

import (
	"bytes"
	"context"
	"embed"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/goodsched/goodsched/carbon"
	"github.com/goodsched/goodsched/carbon/carbondata"
)

//go:embed data/carbonscaler_profile_nbody10k.csv
var embedded embed.FS

type options struct {
	intensity, profile string
	basis              carbon.Basis
	fill               carbon.Fill
	zone               string
	work, deadline     time.Duration
	slot               time.Duration
	start              string
	weeks              int
	minScale, maxScale int
	pue                float64
	verify             bool
	forecastError      float64
	seed               uint64
	resolution         int
	json               bool
	svg                string
}

// usageError is bad input: exit status 2.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func parse(args []string, stderr io.Writer) (options, error) {
	var o options
	fs := flag.NewFlagSet("carbonplan", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), "usage: carbonplan [flags]\n\n"+
			"carbonplan plans one elastic, delay-tolerant job over a year of grid carbon\n"+
			"intensity (CarbonScaler's marginal planner) and compares its emissions with\n"+
			"carbon-agnostic, suspend-resume, best-static-scale and energy-only baselines.\n\nflags:\n")
		fs.PrintDefaults()
	}
	var basis, fill string
	fs.StringVar(&o.intensity, "intensity", "", "intensity file, optionally .gz: Electricity Maps portal or legacy CSV, two-column CSV (time,value), WattTime CSV/JSON, Carbon Aware SDK JSON (default: embedded California 2022, ODbL)")
	fs.StringVar(&o.profile, "profile", "", "CarbonScaler profile CSV nodes,throughput,power (default: embedded nbody10k, MIT)")
	fs.StringVar(&basis, "basis", "direct", "column of an Electricity Maps portal CSV: direct or lca")
	fs.StringVar(&fill, "fill", "error", "gaps in the intensity: error, hold or linear")
	fs.StringVar(&o.zone, "zone", "", "zone to read from a file with several")
	fs.DurationVar(&o.work, "work", 24*time.Hour, "work, as time at the maximum scale")
	fs.DurationVar(&o.deadline, "deadline", 72*time.Hour, "deadline after each start")
	fs.DurationVar(&o.slot, "slot", time.Hour, "slot length (the intensity is resampled to it)")
	fs.StringVar(&o.start, "start", "", "first start, RFC 3339 (default: the series' first time)")
	fs.IntVar(&o.weeks, "weeks", 1, "number of weekly starts")
	fs.IntVar(&o.minScale, "min", 1, "minimum scale while running")
	fs.IntVar(&o.maxScale, "max", 0, "maximum scale (default: the profile's)")
	fs.Float64Var(&o.pue, "pue", 1, "power usage effectiveness")
	fs.BoolVar(&o.verify, "verify", false, "also compute the exact optimum (DP) and the LP lower bound")
	fs.Float64Var(&o.forecastError, "error", 0, "also re-plan every slot with a noisy forecast: Gaussian error σ = e × mean (Let's Wait Awhile), e.g. 0.05")
	fs.Uint64Var(&o.seed, "seed", 1, "seed of the forecast noise for -error")
	fs.IntVar(&o.resolution, "resolution", 4000, "work quanta for -verify's DP, 10..1000000")
	fs.BoolVar(&o.json, "json", false, "print JSON")
	fs.StringVar(&o.svg, "svg", "carbonplan.svg", "SVG (or .png) of intensity and scale over the first start's deadline window (empty: none; with -json, none unless set)")
	if err := fs.Parse(args); err != nil {
		return o, usageError{err.Error()}
	}
	svgSet := false
	fs.Visit(func(f *flag.Flag) { svgSet = svgSet || f.Name == "svg" })
	if o.json && !svgSet {
		o.svg = "" // -json is for machines: write no file they did not ask for
	}
	if fs.NArg() > 0 {
		return o, usageError{fmt.Sprintf("unexpected argument %q", fs.Arg(0))}
	}
	switch strings.ToLower(basis) {
	case "direct":
		o.basis = carbon.Direct
	case "lca", "life-cycle", "lifecycle":
		o.basis = carbon.LifeCycle
	default:
		return o, usageError{fmt.Sprintf("-basis %q: want direct or lca", basis)}
	}
	switch strings.ToLower(fill) {
	case "error":
		o.fill = carbon.FillError
	case "hold":
		o.fill = carbon.FillHold
	case "linear":
		o.fill = carbon.FillLinear
	default:
		return o, usageError{fmt.Sprintf("-fill %q: want error, hold or linear", fill)}
	}
	switch {
	case o.work <= 0:
		return o, usageError{"-work must be positive"}
	case o.deadline < o.work:
		return o, usageError{fmt.Sprintf("-deadline %v is shorter than -work %v at maximum scale", o.deadline, o.work)}
	case o.slot <= 0:
		return o, usageError{"-slot must be positive"}
	case o.weeks < 1:
		return o, usageError{"-weeks must be at least 1"}
	case o.minScale < 1 || o.maxScale < 0:
		return o, usageError{"-min must be at least 1 and -max not negative"}
	case !(o.pue >= 1) || math.IsInf(o.pue, 1):
		return o, usageError{"-pue must be finite and at least 1"}
	case !(o.forecastError >= 0) || o.forecastError > 10:
		return o, usageError{"-error must be between 0 and 10"}
	case o.resolution < 10 || o.resolution > 1_000_000:
		return o, usageError{"-resolution must be between 10 and 1000000"}
	}
	return o, nil
}

func load(o options) (carbon.Series, carbon.Curve, error) {
	var f io.ReadCloser
	var err error
	name := o.intensity
	if name == "" {
		name = "embedded Electricity Maps US-CAL-CISO 2022"
		f, err = carbondata.FS.Open(carbondata.California2022)
	} else {
		f, err = os.Open(o.intensity)
	}
	if err != nil {
		return carbon.Series{}, carbon.Curve{}, usageError{fmt.Sprintf("-intensity: %v", err)}
	}
	defer f.Close()
	s, err := carbon.Read(f, carbon.ReadOptions{Basis: o.basis, Zone: o.zone, Grid: carbon.GridOptions{Fill: o.fill}})
	if err != nil {
		msg := fmt.Sprintf("-intensity %s: %v", name, err)
		if o.fill == carbon.FillError && (errors.Is(err, carbon.ErrGap) || errors.Is(err, carbon.ErrIrregular)) {
			msg += " (fill gaps with -fill hold or -fill linear)"
		}
		return carbon.Series{}, carbon.Curve{}, usageError{msg}
	}
	if s.Unit == carbon.LbsPerMWh {
		if s, err = s.Convert(carbon.GPerKWh); err != nil {
			return carbon.Series{}, carbon.Curve{}, err
		}
	}
	if s.Step != o.slot {
		// Trim to whole slots before averaging down.
		if o.slot > s.Step && o.slot%s.Step == 0 {
			k := int(o.slot / s.Step)
			s.Values = s.Values[:len(s.Values)/k*k]
			if s.Estimated != nil {
				s.Estimated = s.Estimated[:len(s.Values)]
			}
		}
		if s, err = s.Resample(o.slot); err != nil {
			return carbon.Series{}, carbon.Curve{}, usageError{fmt.Sprintf("-slot %v: %v", o.slot, err)}
		}
	}
	var pb []byte
	if o.profile == "" {
		pb, _ = embedded.ReadFile("data/carbonscaler_profile_nbody10k.csv")
	} else if pb, err = os.ReadFile(o.profile); err != nil {
		return carbon.Series{}, carbon.Curve{}, usageError{fmt.Sprintf("-profile: %v", err)}
	}
	c, err := carbon.ReadProfile(bytes.NewReader(pb))
	if err != nil {
		return carbon.Series{}, carbon.Curve{}, usageError{fmt.Sprintf("-profile: %v", err)}
	}
	return s, c, nil
}

// week is the result of one weekly start.
type week struct {
	Start          time.Time `json:"start"`
	AgnosticG      float64   `json:"agnostic_g"`
	SuspendResumeG float64   `json:"suspend_resume_g"`
	StaticG        float64   `json:"static_g"`
	StaticScale    int       `json:"static_scale"`
	PlannerG       float64   `json:"planner_g"`
	PlannerMethod  string    `json:"planner_method"`
	EnergyOnlyG    float64   `json:"energy_only_g"`
	OptimalG       *float64  `json:"optimal_g,omitempty"`
	LowerBoundG    *float64  `json:"lower_bound_g,omitempty"`
	NoisyG         *float64  `json:"planner_noisy_forecast_g,omitempty"`

	plan, agnostic carbon.Plan
}

// report is the -json output: grams averaged over the weeks.
type report struct {
	Zone                   string   `json:"zone"`
	Source                 string   `json:"source"`
	Weeks                  int      `json:"weeks"`
	AgnosticG              float64  `json:"agnostic_g"`
	SuspendResumeG         float64  `json:"suspend_resume_g"`
	StaticG                float64  `json:"static_g"`
	PlannerG               float64  `json:"planner_g"`
	OptimalG               *float64 `json:"optimal_g"`
	LowerBoundG            *float64 `json:"lower_bound_g,omitempty"`
	NoisyG                 *float64 `json:"planner_noisy_forecast_g,omitempty"`
	SavingsVsAgnostic      float64  `json:"savings_vs_agnostic"`
	SavingsVsSuspendResume float64  `json:"savings_vs_suspend_resume"`
	SavingsVsStatic        float64  `json:"savings_vs_static"`
	EnergyOnlyG            float64  `json:"energy_only_g"`
	SavingsVsEnergyOnly    float64  `json:"savings_vs_energy_only"`
	IntensityMean          float64  `json:"intensity_mean_g_per_kwh"`
	IntensityCV            float64  `json:"intensity_cv"`
	PerWeek                []week   `json:"per_week,omitempty"`
}

func planWeek(s carbon.Series, c carbon.Curve, o options, start time.Time) (week, error) {
	w := week{Start: start}
	maxS := o.maxScale
	if maxS == 0 {
		maxS = c.MaxScale()
	}
	if maxS > c.MaxScale() || o.minScale > maxS {
		return w, usageError{fmt.Sprintf("-min %d / -max %d outside the profile's 1..%d", o.minScale, o.maxScale, c.MaxScale())}
	}
	work := c.WorkPerSecond[maxS] * o.work.Seconds()
	deadline := start.Add(o.deadline)
	f, err := s.Slice(start, deadline)
	if err != nil {
		return w, err
	}
	opts := carbon.ScheduleOptions{MinScale: o.minScale, MaxScale: maxS, PUE: o.pue}
	if w.agnostic, err = carbon.ScheduleNow(f, c, maxS, work, deadline, opts); err != nil {
		return w, err
	}
	sr, err := carbon.ScheduleLowest(f, c, maxS, work, deadline, opts)
	if err != nil {
		return w, err
	}
	st, k, err := carbon.ScheduleStatic(f, c, work, deadline, opts)
	if err != nil {
		return w, err
	}
	if w.plan, err = carbon.Schedule(f, c, work, deadline, opts); err != nil {
		return w, err
	}
	w.AgnosticG, w.SuspendResumeG, w.StaticG, w.StaticScale = w.agnostic.CarbonG, sr.CarbonG, st.CarbonG, k
	// Energy-only: the same planner on a flat forecast (it minimises
	// energy, not carbon), charged with the true intensity. The planner's
	// savings over it are what carbon awareness adds to elastic scaling.
	flat, mean := f, f.Mean()
	flat.Values = make([]float64, len(f.Values))
	for i := range flat.Values {
		flat.Values[i] = mean
	}
	eo, err := carbon.Schedule(flat, c, work, deadline, opts)
	if err != nil {
		return w, err
	}
	acc, err := carbon.Emissions(eo.Intervals(), f, carbon.AccountOptions{PUE: o.pue})
	if err != nil {
		return w, err
	}
	w.EnergyOnlyG = acc.OperationalG
	w.PlannerG, w.PlannerMethod = w.plan.CarbonG, w.plan.Method.String()
	if o.verify {
		v := opts
		v.Method, v.Resolution = carbon.DP, o.resolution
		dp, err := carbon.Schedule(f, c, work, deadline, v)
		if err != nil {
			return w, err
		}
		best := math.Min(dp.CarbonG, w.plan.CarbonG)
		lb, err := carbon.LowerBound(f, c, work, deadline, opts)
		if err != nil {
			return w, err
		}
		w.OptimalG, w.LowerBoundG = &best, &lb
	}
	if o.forecastError > 0 {
		// Re-plan at every slot from the remaining work with a noisy
		// forecast; carbon is charged at the true intensity.
		truth, err := carbon.NewPerfect(s)
		if err != nil {
			return w, err
		}
		rp := &carbon.Replanner{
			Forecaster: &carbon.Noisy{Base: truth, Error: o.forecastError, Seed: o.seed},
			Zone:       s.Zone, Curve: c, Deadline: deadline, Options: opts,
		}
		got, err := carbon.Simulate(context.Background(), f, rp, work)
		if err != nil {
			return w, err
		}
		w.NoisyG = &got.CarbonG
	}
	return w, nil
}

func run(args []string, stdout, stderr io.Writer) error {
	o, err := parse(args, stderr)
	if err != nil {
		return err
	}
	s, c, err := load(o)
	if err != nil {
		return err
	}
	start := s.Start
	if o.start != "" {
		if start, err = time.Parse(time.RFC3339, o.start); err != nil {
			return usageError{fmt.Sprintf("-start: %v", err)}
		}
	}
	var weeks []week
	for i := range o.weeks {
		ws := start.Add(time.Duration(i) * 7 * 24 * time.Hour)
		if ws.Add(o.deadline).After(s.End()) || ws.Before(s.Start) {
			if i == 0 {
				return usageError{fmt.Sprintf("start %v + deadline %v is outside the series [%v, %v)", ws, o.deadline, s.Start, s.End())}
			}
			fmt.Fprintf(stderr, "carbonplan: the series ends at %v; stopping after %d weeks\n", s.End(), i)
			break
		}
		w, err := planWeek(s, c, o, ws)
		if err != nil {
			var ue usageError
			if errors.As(err, &ue) || errors.Is(err, carbon.ErrInfeasible) || errors.Is(err, carbon.ErrInvalid) {
				// Options the planner refuses are bad flags too.
				return usageError{err.Error()}
			}
			return err
		}
		weeks = append(weeks, w)
		if o.weeks > 4 && (i+1)%10 == 0 {
			fmt.Fprintf(stderr, "carbonplan: %d/%d weeks\n", i+1, o.weeks)
		}
	}
	r := summarize(s, weeks, o.verify)
	if o.svg != "" {
		maxS := o.maxScale
		if maxS == 0 {
			maxS = c.MaxScale()
		}
		if err := plotWeek(o.svg, s, weeks[0], maxS); err != nil {
			return fmt.Errorf("svg: %w", err)
		}
		fmt.Fprintf(stderr, "carbonplan: wrote %s\n", displayPath(o.svg))
	}
	if o.json {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(r)
	}
	printText(stdout, r, o, c, weeks)
	return nil
}

func summarize(s carbon.Series, weeks []week, verify bool) report {
	r := report{Zone: s.Zone, Source: s.Source, Weeks: len(weeks)}
	var opt, lb, noisy float64
	for _, w := range weeks {
		r.AgnosticG += w.AgnosticG
		r.SuspendResumeG += w.SuspendResumeG
		r.StaticG += w.StaticG
		r.PlannerG += w.PlannerG
		r.EnergyOnlyG += w.EnergyOnlyG
		if verify {
			opt += *w.OptimalG
			lb += *w.LowerBoundG
		}
		if w.NoisyG != nil {
			noisy += *w.NoisyG
		}
	}
	n := float64(len(weeks))
	r.AgnosticG /= n
	r.SuspendResumeG /= n
	r.StaticG /= n
	r.PlannerG /= n
	r.EnergyOnlyG /= n
	r.SavingsVsEnergyOnly = 1 - r.PlannerG/r.EnergyOnlyG
	r.IntensityMean = s.Mean()
	var sq float64
	for _, v := range s.Values {
		sq += (v - r.IntensityMean) * (v - r.IntensityMean)
	}
	if r.IntensityMean > 0 {
		r.IntensityCV = math.Sqrt(sq/float64(len(s.Values))) / r.IntensityMean
	}
	if verify {
		opt, lb = opt/n, lb/n
		r.OptimalG, r.LowerBoundG = &opt, &lb
	}
	if weeks[0].NoisyG != nil {
		noisy /= n
		r.NoisyG = &noisy
	}
	r.SavingsVsAgnostic = 1 - r.PlannerG/r.AgnosticG
	r.SavingsVsSuspendResume = 1 - r.PlannerG/r.SuspendResumeG
	r.SavingsVsStatic = 1 - r.PlannerG/r.StaticG
	if len(weeks) <= 4 {
		r.PerWeek = weeks
	}
	return r
}

func printText(w io.Writer, r report, o options, c carbon.Curve, weeks []week) {
	fmt.Fprintf(w, "zone %s (%s), %d weekly start(s) from %s; job: %v at max scale within %v, slots of %v, PUE %.2f\n",
		r.Zone, r.Source, r.Weeks, weeks[0].Start.Format(time.RFC3339), o.work, o.deadline, o.slot, o.pue)
	fmt.Fprintf(w, "profile: %d scales, max %.4g work/s at %.4g W\n", c.MaxScale(), c.WorkPerSecond[c.MaxScale()], c.Watts[c.MaxScale()])
	fmt.Fprintf(w, "  %-22s %12s\n", "policy", "g CO2eq/job")
	fmt.Fprintf(w, "  %-22s %12.1f\n", "carbon-agnostic", r.AgnosticG)
	fmt.Fprintf(w, "  %-22s %12.1f\n", "suspend-resume", r.SuspendResumeG)
	fmt.Fprintf(w, "  %-22s %12.1f\n", "best static scale", r.StaticG)
	fmt.Fprintf(w, "  %-22s %12.1f\n", "energy-only elastic", r.EnergyOnlyG)
	fmt.Fprintf(w, "  %-22s %12.1f\n", "marginal planner", r.PlannerG)
	if r.OptimalG != nil {
		fmt.Fprintf(w, "  %-22s %12.1f  (LP lower bound %.1f; planner gap %.3f%%)\n", "exact optimum (DP)", *r.OptimalG, *r.LowerBoundG, 100*(r.PlannerG / *r.OptimalG - 1))
	}
	if r.NoisyG != nil {
		fmt.Fprintf(w, "  %-22s %12.1f  (re-planned every slot, forecast error %.0f%% of the mean, seed %d)\n", "planner, noisy", *r.NoisyG, 100*o.forecastError, o.seed)
	}
	fmt.Fprintf(w, "savings of the planner: %.1f%% vs carbon-agnostic, %.1f%% vs suspend-resume, %.1f%% vs best static scale, %.1f%% vs energy-only elastic\n",
		100*r.SavingsVsAgnostic, 100*r.SavingsVsSuspendResume, 100*r.SavingsVsStatic, 100*r.SavingsVsEnergyOnly)
	fmt.Fprintf(w, "intensity: mean %.1f g/kWh, coefficient of variation %.2f; grams saved per job vs carbon-agnostic: %.1f\n",
		r.IntensityMean, r.IntensityCV, r.AgnosticG-r.PlannerG)
	if len(weeks) == 1 {
		fmt.Fprintf(w, "first start's scales: %v\n", weeks[0].plan.Scales())
	}
}

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		if errors.Is(err, flag.ErrHelp) || strings.Contains(err.Error(), flag.ErrHelp.Error()) {
			os.Exit(0)
		}
		fmt.Fprintf(os.Stderr, "carbonplan: %v\n", err)
		var ue usageError
		if errors.As(err, &ue) {
			os.Exit(2)
		}
		os.Exit(1)
	}
}

// displayPath is path as a user finds it: absolute when it can be made so.
func displayPath(path string) string {
	if abs, err := filepath.Abs(path); err == nil {
		return abs
	}
	return path
}

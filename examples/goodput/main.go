// Command goodput fits a goodput model to a measured model profile and
// shows how well it predicts shapes the fit never saw.
//
// It reads a profile directory in Pollux's layout (placements.csv,
// scalability.csv, validation-M.csv; default: the embedded CIFAR-10
// profile from the Pollux artifact) or, with -type NAME, Sia's layout
// (placements-NAME.csv, scalability-NAME.csv). It fits on the placements
// file only (≤ 4 nodes, ≤ 16 GPUs in Pollux's data), evaluates the
// predicted step time on every scalability row (larger shapes), and prints
// the parameters, the error per shape, and the best batch plan and speedup
// per GPU count.
//
//	go run ./examples/goodput
//	go run ./examples/goodput -profile scheduler/sim/polluxdata/traces/yolov3 -form allreduce -json  # another Pollux profile (shipped)
//	go run ./examples/goodput -profile artifacts/sia-simulator/traces/cifar10 -type dgx            # Sia layout (not shipped)
package main

import (
	"cmp"
	"embed"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"math"
	"os"
	"regexp"
	"slices"
	"strconv"

	"github.com/goodsched/goodsched/goodput"
)

//go:embed profile/*.csv
var embedded embed.FS

type shapeErr struct {
	Nodes      int     `json:"nodes"`
	Replicas   int     `json:"replicas"`
	Points     int     `json:"points"`
	MedianErr  float64 `json:"median_rel_err"`
	MaxErr     float64 `json:"max_rel_err"`
	MeanSigned float64 `json:"mean_signed_err"`
}

type speedupRow struct {
	Nodes    int     `json:"nodes"`
	Replicas int     `json:"replicas"`
	Batch    int     `json:"batch"`
	Local    int     `json:"local"`
	Accum    int     `json:"accum"`
	Goodput  float64 `json:"goodput"`
	Speedup  float64 `json:"speedup"`
}

type report struct {
	Profile      string            `json:"profile"`
	Form         string            `json:"form"`
	FitPoints    int               `json:"fit_points"`
	FitRows      int               `json:"fit_rows"`
	EvalPoints   int               `json:"eval_points"`
	MedianRelErr float64           `json:"median_rel_err"`
	P90RelErr    float64           `json:"p90_rel_err"`
	FitMedianErr float64           `json:"fit_median_rel_err"`
	Params       goodput.Params    `json:"params"`
	Fit          fitInfo           `json:"fit"`
	Limits       goodput.Limits    `json:"limits"`
	Grad         goodput.GradStats `json:"grad"`
	Shapes       []shapeErr        `json:"shapes"`
	Speedup      []speedupRow      `json:"speedup"`
}

type fitInfo struct {
	Status      string   `json:"status"`
	Loss        float64  `json:"loss"`
	GradNorm    float64  `json:"grad_norm"`
	Starts      int      `json:"starts"`
	Evaluations int      `json:"evaluations"`
	Pinned      []string `json:"pinned,omitempty"`
}

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "goodput:", err)
		os.Exit(2)
	}
}

func run(args []string, out io.Writer) error { return runIO(args, out, os.Stderr) }

// runIO is run with -h's text going to errw.
func runIO(args []string, out, errw io.Writer) error {
	fset := flag.NewFlagSet("goodput", flag.ContinueOnError)
	fset.SetOutput(io.Discard)
	profile := fset.String("profile", "", "profile directory (Pollux layout; default: embedded cifar10)")
	typ := fset.String("type", "", "read Sia's placements-TYPE.csv and scalability-TYPE.csv")
	formName := fset.String("form", "default", "sync model: pollux, allreduce or default")
	asJSON := fset.Bool("json", false, "print one JSON object")
	starts := fset.Int("starts", 1, fmt.Sprintf("fit starts, 1..%d (1 = data-derived start only)", goodput.MaxStarts))
	perNode := fset.Int("gpus-per-node", 0, "GPUs per node for the speedup table (0: the most in the placements)")
	initBatch := fset.Int("init-batch", 0, "initial batch M0 (0: smallest validation-M, else smallest local batch)")
	maxBatch := fset.Int("max-batch", 0, "max batch (0: largest validation-M, else largest local × 16)")
	if err := fset.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(errw, "usage: goodput [flags]\n\n"+
				"goodput fits Pollux's goodput model to a measured model profile (placements\n"+
				"file only), checks its step-time predictions on larger unseen shapes, and\n"+
				"prints the parameters, the error per shape, batch plans and speedups.\n\nflags:\n")
			fset.SetOutput(errw)
			fset.PrintDefaults()
			return nil
		}
		return err
	}
	if fset.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q", fset.Arg(0))
	}
	form, err := goodput.ParseForm(*formName)
	if err != nil {
		return err
	}
	if *starts < 1 || *starts > goodput.MaxStarts || *perNode < 0 || *initBatch < 0 || *maxBatch < 0 {
		return fmt.Errorf("-starts must be in 1..%d; -gpus-per-node, -init-batch, -max-batch ≥ 0", goodput.MaxStarts)
	}
	var fsys fs.FS
	name := *profile
	if name == "" {
		sub, _ := fs.Sub(embedded, "profile")
		fsys, name = sub, "embedded:cifar10"
	} else {
		fsys = os.DirFS(name)
	}
	plName, scName := "placements.csv", "scalability.csv"
	if *typ != "" {
		plName, scName = "placements-"+*typ+".csv", "scalability-"+*typ+".csv"
	}
	fitRows, err := readWith(fsys, plName, goodput.ReadPlacements)
	if err != nil {
		return err
	}
	evalRows, err := readWith(fsys, scName, goodput.ReadScalability)
	if err != nil {
		return err
	}
	if len(fitRows) == 0 || len(evalRows) == 0 {
		return errors.New("empty placements or scalability file")
	}
	limits, grad, err := deriveLimits(fsys, *typ == "", fitRows, *initBatch, *maxBatch)
	if err != nil {
		return err
	}

	// Fit through an Estimator, which averages rows of the same
	// (nodes, replicas, local) as Pollux's agent does.
	est, err := goodput.NewEstimator(goodput.EstimatorConfig{Limits: limits, Fit: goodput.FitOptions{Form: form, Starts: *starts}})
	if err != nil {
		return err
	}
	for i, r := range fitRows {
		if err := est.Observe(*typ, r.Observation()); err != nil {
			return fmt.Errorf("%s row %d: %w", plName, i+1, err)
		}
	}
	if err := est.ObserveGrad(grad); err != nil {
		return err
	}
	obs := est.Observations(*typ)
	params, res, err := goodput.Fit(obs, goodput.FitOptions{Form: form, Starts: *starts})
	if err != nil {
		return err
	}
	model := goodput.Model{Params: params, Grad: grad, Limits: limits}

	rep := report{Profile: name, Form: form.String(), FitPoints: len(obs), FitRows: len(fitRows), EvalPoints: len(evalRows),
		Params: params, Limits: limits, Grad: grad,
		Fit: fitInfo{Status: res.Status.String(), Loss: res.Loss, GradNorm: res.GradNorm, Starts: res.Starts, Evaluations: res.Evaluations, Pinned: res.Pinned}}
	var all, fitErrs []float64
	for _, r := range fitRows {
		fitErrs = append(fitErrs, relErr(params.StepSeconds(r.Nodes, r.Replicas, r.Local, 0), r.StepSeconds))
	}
	byShape := map[[2]int][]float64{}
	signed := map[[2]int]float64{}
	for _, r := range evalRows {
		pred := params.StepSeconds(r.Nodes, r.Replicas, r.Local, 0)
		e := relErr(pred, r.StepSeconds)
		all = append(all, e)
		k := [2]int{r.Nodes, r.Replicas}
		byShape[k] = append(byShape[k], e)
		signed[k] += (pred - r.StepSeconds) / r.StepSeconds
	}
	rep.MedianRelErr, rep.P90RelErr = quantile(all, 0.5), quantile(all, 0.9)
	rep.FitMedianErr = quantile(fitErrs, 0.5)
	keys := slices.SortedFunc(maps.Keys(byShape), func(a, b [2]int) int { return cmp.Or(cmp.Compare(a[0], b[0]), cmp.Compare(a[1], b[1])) })
	for _, k := range keys {
		es := byShape[k]
		rep.Shapes = append(rep.Shapes, shapeErr{Nodes: k[0], Replicas: k[1], Points: len(es),
			MedianErr: quantile(es, 0.5), MaxErr: slices.Max(es), MeanSigned: signed[k] / float64(len(es))})
	}

	// Speedup per GPU count, packing GPUs onto as few nodes as possible.
	g := *perNode
	if g == 0 {
		for _, r := range fitRows {
			for _, c := range r.Placement {
				g = max(g, int(c-'0'))
			}
		}
		g = max(g, 1)
	}
	curve, err := goodput.NewCurve(map[string]goodput.CurveModel{goodput.AnyType: {Model: model}}, goodput.CurveOptions{})
	if err != nil {
		return err
	}
	for _, k := range []int{1, 2, 4, 8, 12, 16, 24, 32, 48, 64} {
		if k > limits.MaxUsefulReplicas() {
			break
		}
		n := (k + g - 1) / g
		p := curve.BatchPlan(goodput.AnyType, n, k)
		rep.Speedup = append(rep.Speedup, speedupRow{Nodes: n, Replicas: k, Batch: p.Batch, Local: p.Local, Accum: p.Accum,
			Goodput: p.Goodput, Speedup: curve.Speedup(goodput.AnyType, n, k)})
	}

	if *asJSON {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}
	printText(out, rep)
	return nil
}

func printText(w io.Writer, r report) {
	p := r.Params
	fmt.Fprintf(w, "profile %s, form %s: fit on %d configurations (%d rows), evaluated on %d unseen rows\n",
		r.Profile, r.Form, r.FitPoints, r.FitRows, r.EvalPoints)
	fmt.Fprintf(w, "fit: %s, loss %.4f, |grad| %.2g, %d start(s), %d evaluations\n", r.Fit.Status, r.Fit.Loss, r.Fit.GradNorm, r.Fit.Starts, r.Fit.Evaluations)
	fmt.Fprintf(w, "params: αc %.4g βc %.4g  αr %.4g βr %.4g  αn %.4g βn %.4g  αt %.4g βt %.4g δt %.4g  γ %.3f\n",
		p.AlphaC, p.BetaC, p.AlphaR, p.BetaR, p.AlphaN, p.BetaN, p.AlphaT, p.BetaT, p.DeltaT, p.Gamma)
	fmt.Fprintf(w, "limits: M0 %d, max batch %d, local [%d, %d]; grad sqr %.4g var %.4g\n",
		r.Limits.InitBatch, r.Limits.MaxBatch, r.Limits.MinLocal, r.Limits.MaxLocal, r.Grad.Sqr, r.Grad.Var)
	fmt.Fprintf(w, "step-time error on unseen shapes: median %.1f%%, p90 %.1f%% (in-sample median %.1f%%)\n",
		100*r.MedianRelErr, 100*r.P90RelErr, 100*r.FitMedianErr)
	fmt.Fprintln(w, "\nnodes replicas points median%  max%  mean-signed%")
	for _, s := range r.Shapes {
		fmt.Fprintf(w, "%5d %8d %6d %7.1f %5.1f %+12.1f\n", s.Nodes, s.Replicas, s.Points, 100*s.MedianErr, 100*s.MaxErr, 100*s.MeanSigned)
	}
	fmt.Fprintln(w, "\nnodes replicas  batch local accum  goodput/s  speedup")
	for _, s := range r.Speedup {
		fmt.Fprintf(w, "%5d %8d %6d %5d %5d %10.1f %8.2f\n", s.Nodes, s.Replicas, s.Batch, s.Local, s.Accum, s.Goodput, s.Speedup)
	}
}

func readWith[T any](fsys fs.FS, name string, read func(io.Reader) ([]T, error)) ([]T, error) {
	f, err := fsys.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	rows, err := read(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return rows, nil
}

var validationName = regexp.MustCompile(`^validation-([0-9]+)\.csv$`)

// deriveLimits takes M0 and the max batch from the validation files
// (Pollux layout) and the per-GPU bounds from the placements; the gradient
// statistics come from the middle epoch of the M0 run.
func deriveLimits(fsys fs.FS, pollux bool, rows []goodput.ProfileRow, m0, maxB int) (goodput.Limits, goodput.GradStats, error) {
	var grad goodput.GradStats
	lo, hi := math.MaxInt, 0
	for _, r := range rows {
		lo, hi = min(lo, r.Local), max(hi, r.Local)
	}
	var batches []int
	if pollux {
		ents, err := fs.ReadDir(fsys, ".")
		if err != nil {
			return goodput.Limits{}, grad, err
		}
		for _, e := range ents {
			if m := validationName.FindStringSubmatch(e.Name()); m != nil {
				if b, err := strconv.Atoi(m[1]); err == nil && b > 0 {
					batches = append(batches, b)
				}
			}
		}
		slices.Sort(batches)
	}
	if m0 == 0 {
		m0 = lo
		if len(batches) > 0 {
			m0 = batches[0]
		}
	}
	if maxB == 0 {
		maxB = hi * 16
		if len(batches) > 0 {
			maxB = batches[len(batches)-1]
		}
	}
	if len(batches) > 0 && slices.Contains(batches, m0) {
		vr, err := readWith(fsys, fmt.Sprintf("validation-%d.csv", m0), goodput.ReadValidation)
		if err != nil {
			return goodput.Limits{}, grad, err
		}
		if len(vr) > 0 {
			grad = vr[len(vr)/2].Grad
		}
	}
	l := goodput.Limits{InitBatch: m0, MaxBatch: maxB, MinLocal: lo, MaxLocal: hi, Accumulation: true}
	return l, grad, l.Validate()
}

func relErr(pred, meas float64) float64 { return math.Abs(pred-meas) / meas }

// quantile is the q-quantile by linear interpolation of the sorted values.
func quantile(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	pos := q * float64(len(s)-1)
	i := int(pos)
	if i+1 >= len(s) {
		return s[len(s)-1]
	}
	return s[i] + (pos-float64(i))*(s[i+1]-s[i])
}

package goodput

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
)

// synthetic returns observations of p on every shape up to maxNodes nodes
// of 4 GPUs, at the given per-GPU batches, with ±2% deterministic noise
// (noise-free data puts the optimum of Pollux's RMS objective on a kink).
func synthetic(p Params, maxNodes int, locals []int) []Observation {
	var obs []Observation
	i := 0
	noise := func() float64 {
		i++
		return 1 + 0.02*math.Sin(float64(i)*12.9898)
	}
	for n := 1; n <= maxNodes; n++ {
		for k := n; k <= 4*n; k++ {
			for _, m := range locals {
				obs = append(obs, Observation{Nodes: n, Replicas: k, Local: m,
					AccumSeconds: p.GradSeconds(m) * noise(), OptimSeconds: p.StepSeconds(n, k, m, 0) * noise()})
			}
		}
	}
	return obs
}

func TestFitRecoversSynthetic(t *testing.T) {
	truth := map[Form]Params{
		FormPollux:    {Form: FormPollux, AlphaC: 0.05, BetaC: 0.002, AlphaR: 0.02, BetaR: 0.004, AlphaN: 0.3, BetaN: 0.02, Gamma: 1.8},
		FormAllReduce: {Form: FormAllReduce, AlphaC: 0.05, BetaC: 0.002, AlphaR: 0.02, BetaR: 0.004, AlphaN: 0.3, BetaN: 0.05, AlphaT: 0.2, BetaT: 0.05, DeltaT: 0.03, Gamma: 1.8},
	}
	for form, p := range truth {
		t.Run(form.String(), func(t *testing.T) {
			obs := synthetic(p, 4, []int{8, 32, 128})
			got, res, err := Fit(obs, FitOptions{Form: form})
			if err != nil {
				t.Fatal(err)
			}
			if got.Form != form {
				t.Errorf("Form = %v", got.Form)
			}
			// Predictions, in sample and on larger shapes, match the truth.
			for _, s := range [][2]int{{1, 1}, {1, 4}, {2, 8}, {4, 16}, {8, 32}, {16, 64}} {
				want, pred := p.StepSeconds(s[0], s[1], 64, 0), got.StepSeconds(s[0], s[1], 64, 0)
				if math.Abs(pred-want)/want > 0.03 {
					t.Errorf("shape %v: predicted %.4f s, true %.4f s (params %+v, %+v)", s, pred, want, got, res)
				}
			}
			if res.Status == FitLineSearchStopped && res.GradNorm > 1e-3 {
				t.Errorf("fit stopped far from an optimum: %+v", res)
			}
		})
	}
}

func TestFitPriors(t *testing.T) {
	p := testParams
	oneGPU := []Observation{
		{Nodes: 1, Replicas: 1, Local: 64, AccumSeconds: 0.1, OptimSeconds: 0.101},
		{Nodes: 1, Replicas: 1, Local: 64, AccumSeconds: 0.12, OptimSeconds: 0.121},
	}
	got, res, err := Fit(oneGPU, FitOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// One batch size: AlphaC = mean(accum)/2.
	if !near(got.AlphaC, 0.055, 1e-12) {
		t.Errorf("AlphaC = %v, want 0.055", got.AlphaC)
	}
	// No multi-GPU sample: sync at the bound, inter-node ≥ 1.1× intra-node.
	if got.AlphaR != MinCoef || got.BetaR != MinCoef || got.AlphaN < 1.1*got.AlphaR || got.BetaN < 1.1*got.BetaR {
		t.Errorf("sync params %+v", got)
	}
	for _, name := range []string{"AlphaC", "AlphaR", "BetaR", "AlphaN", "BetaN"} {
		if !slices.Contains(res.Pinned, name) {
			t.Errorf("Pinned = %v, want %s", res.Pinned, name)
		}
	}
	// The model then scales perfectly: 4 replicas are 4× as fast.
	m := Model{Params: got, Limits: Limits{InitBatch: 64}}
	if s := m.Throughput(1, 4, 64, 0) / m.Throughput(1, 1, 64, 0); !near(s, 4, 1e-6) {
		t.Errorf("prior speedup on 4 GPUs = %v, want 4", s)
	}

	// Single node, up to 2 replicas: BetaR pinned, inter-node from intra.
	twoGPU := synthetic(p, 1, []int{32, 64})
	twoGPU = slices.DeleteFunc(twoGPU, func(o Observation) bool { return o.Replicas > 2 })
	got, res, err = Fit(twoGPU, FitOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.BetaR != MinCoef || got.AlphaR <= MinCoef || got.AlphaN < 1.1*got.AlphaR {
		t.Errorf("two-GPU fit %+v (%v)", got, res.Pinned)
	}

	// FormAllReduce without 3-node samples: no tree; it equals the ring.
	twoNodes := synthetic(p, 2, []int{32, 64})
	got, _, err = Fit(twoNodes, FitOptions{Form: FormAllReduce})
	if err != nil {
		t.Fatal(err)
	}
	if got.AlphaT != 0 || got.BetaT != 0 || got.DeltaT != 0 {
		t.Errorf("tree params without 3-node samples: %+v", got)
	}
	if a, b := got.SyncSeconds(8, 32), got.AlphaN+got.BetaN*30; !near(a, b, 1e-12) {
		t.Errorf("no-tree sync = %v, want ring %v", a, b)
	}
}

func TestFitRejectsInvalid(t *testing.T) {
	good := synthetic(testParams, 2, []int{32})
	tests := []struct {
		name  string
		edit  func(*Observation)
		field string
	}{
		{"NaN accum", func(o *Observation) { o.AccumSeconds = math.NaN() }, "AccumSeconds"},
		{"Inf optim", func(o *Observation) { o.OptimSeconds = math.Inf(1) }, "OptimSeconds"},
		{"zero accum", func(o *Observation) { o.AccumSeconds = 0 }, "AccumSeconds"},
		{"negative optim", func(o *Observation) { o.OptimSeconds = -1 }, "OptimSeconds"},
		{"no nodes", func(o *Observation) { o.Nodes = 0 }, "Nodes"},
		{"replicas below nodes", func(o *Observation) { o.Replicas = 0 }, "Replicas"},
		{"zero local", func(o *Observation) { o.Local = 0 }, "Local"},
	}
	for _, tc := range tests {
		obs := slices.Clone(good)
		tc.edit(&obs[3])
		_, _, err := Fit(obs, FitOptions{})
		if !errors.Is(err, ErrInvalidObservation) || !strings.Contains(err.Error(), "observation 3") || !strings.Contains(err.Error(), tc.field) {
			t.Errorf("%s: err = %v", tc.name, err)
		}
	}
	if _, _, err := Fit(nil, FitOptions{}); !errors.Is(err, ErrNoObservations) {
		t.Errorf("empty: %v", err)
	}
	for i, o := range []FitOptions{{Form: 9}, {Starts: -1}, {GradientThreshold: math.NaN()}, {Init: &Params{}}} {
		if _, _, err := Fit(good, o); err == nil {
			t.Errorf("options %d accepted", i)
		}
	}
}

func TestFitDeterministic(t *testing.T) {
	obs := every(aggregate(readProfile(t, "bert", "placements.csv")), 3)
	for _, form := range []Form{FormPollux, FormAllReduce} {
		a, ra, _ := Fit(obs, FitOptions{Form: form, Starts: 3})
		b, rb, _ := Fit(obs, FitOptions{Form: form, Starts: 3})
		if a != b || ra.Loss != rb.Loss {
			t.Errorf("%v: fits differ: %+v vs %+v", form, a, b)
		}
		if ra.Starts != 3 {
			t.Errorf("Starts = %d", ra.Starts)
		}
	}
}

// TestFitExtrapolation fits each Pollux profile's placements (≤ 4 nodes)
// and checks the median relative step-time error on its scalability
// shapes (6–16 nodes) stays at the measured level for both forms.
func TestFitExtrapolation(t *testing.T) {
	// Measured medians: Pollux form 6.2–21.1%, FormAllReduce 5.0–8.2%.
	limit := map[Form]float64{FormPollux: 0.22, FormAllReduce: 0.085}
	for _, model := range models {
		obs := aggregate(readProfile(t, model, "placements.csv"))
		eval := readProfile(t, model, "scalability.csv")
		for _, form := range []Form{FormPollux, FormAllReduce} {
			t.Run(fmt.Sprintf("%s/%s", model, form), func(t *testing.T) {
				p, res, err := Fit(obs, FitOptions{Form: form})
				if err != nil {
					t.Fatal(err)
				}
				var errs []float64
				for _, r := range eval {
					errs = append(errs, math.Abs(p.StepSeconds(r.Nodes, r.Replicas, r.Local, 0)-r.StepSeconds)/r.StepSeconds)
				}
				if med := median(errs); med > limit[form] {
					t.Errorf("median error %.3f > %.3f (%+v, %+v)", med, limit[form], p, res)
				}
				if res.GradNorm > 1e-3 {
					t.Errorf("gradient norm %v at the result", res.GradNorm)
				}
			})
		}
	}
}

func TestFitWarmStart(t *testing.T) {
	obs := aggregate(readProfile(t, "cifar10", "placements.csv"))
	p, r1, err := Fit(obs, FitOptions{})
	if err != nil {
		t.Fatal(err)
	}
	q, r2, err := Fit(obs, FitOptions{Init: &p})
	if err != nil {
		t.Fatal(err)
	}
	if r2.Loss > r1.Loss+1e-9 || r2.Starts != 2 {
		t.Errorf("warm start: loss %v (cold %v), %d starts; %+v", r2.Loss, r1.Loss, r2.Starts, q)
	}
}

// FuzzFit feeds arbitrary observations to the validator and the fit: it
// must never panic, must reject exactly the invalid ones, and must return
// valid parameters otherwise.
func FuzzFit(f *testing.F) {
	f.Add(1, 1, 32, 0.1, 0.11, 2, 8, 64, 0.2, 0.5)
	f.Add(1, 4, 32, 0.1, 0.2, 3, 12, 16, 0.05, 0.4)
	f.Add(0, 1, 1, math.NaN(), 1.0, 1, 1, 1, 1.0, 1.0)
	f.Add(1, 1, 1, 1e-300, 1e300, 4, 4, 1, math.Inf(1), 1.0)
	f.Fuzz(func(t *testing.T, n1, k1, m1 int, a1, o1 float64, n2, k2, m2 int, a2, o2 float64) {
		obs := []Observation{
			{Nodes: n1, Replicas: k1, Local: m1, AccumSeconds: a1, OptimSeconds: o1},
			{Nodes: n2, Replicas: k2, Local: m2, AccumSeconds: a2, OptimSeconds: o2},
			{Nodes: 1, Replicas: 1, Local: 16, AccumSeconds: 0.05, OptimSeconds: 0.05},
		}
		valid := obs[0].Validate() == nil && obs[1].Validate() == nil
		for _, form := range []Form{FormPollux, FormAllReduce} {
			p, _, err := Fit(obs, FitOptions{Form: form, MaxIterations: 50})
			if valid != (err == nil) {
				t.Fatalf("valid %v, err %v", valid, err)
			}
			if err != nil {
				if !errors.Is(err, ErrInvalidObservation) {
					t.Fatalf("err %v is not ErrInvalidObservation", err)
				}
				continue
			}
			if err := p.Validate(); err != nil {
				t.Fatalf("fit returned invalid params %+v: %v", p, err)
			}
		}
	})
}

// TestFitStopsCleanly covers every way a start ends in the LBFGS driver:
// the iteration limit, the gradient threshold at the start, and the
// normal end (gradient threshold or flat objective).
func TestFitStopsCleanly(t *testing.T) {
	obs := every(aggregate(readProfile(t, "yolov3", "placements.csv")), 4)
	tests := []struct {
		name string
		opts FitOptions
		want []FitStatus
	}{
		{"iteration limit", FitOptions{MaxIterations: 2}, []FitStatus{FitIterationLimit}},
		{"huge threshold", FitOptions{GradientThreshold: 1e6}, []FitStatus{FitConverged}},
		{"default", FitOptions{}, []FitStatus{FitConverged, FitLineSearchStopped}},
		{"three starts", FitOptions{Starts: 3}, []FitStatus{FitConverged, FitLineSearchStopped}},
	}
	for _, form := range []Form{FormPollux, FormAllReduce} {
		for _, tc := range tests {
			t.Run(form.String()+"/"+tc.name, func(t *testing.T) {
				tc.opts.Form = form
				p, res, err := Fit(obs, tc.opts)
				if err != nil {
					t.Fatal(err)
				}
				if !slices.Contains(tc.want, res.Status) {
					t.Errorf("status %v, want one of %v (%+v)", res.Status, tc.want, res)
				}
				if err := p.Validate(); err != nil {
					t.Errorf("invalid params %+v: %v", p, err)
				}
				if tc.name == "huge threshold" && res.Evaluations > 5+1 {
					t.Errorf("%d evaluations: the start should end at once", res.Evaluations)
				}
				if tc.name == "default" && res.GradNorm > 1e-3 {
					t.Errorf("gradient norm %v", res.GradNorm)
				}
			})
		}
	}
}

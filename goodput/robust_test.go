package goodput

import (
	"errors"
	"math"
	"testing"
)

// Issue 17: user numbers and keys that crashed or passed silently.

func robustObs() []Observation {
	var obs []Observation
	for _, sh := range [][3]int{{1, 1, 32}, {1, 2, 32}, {1, 4, 32}, {2, 8, 32}, {1, 1, 64}} {
		p := Params{AlphaC: 0.02, BetaC: 0.001, AlphaR: 0.01, BetaR: 0.002, AlphaN: 0.05, BetaN: 0.01, Gamma: 1.5, Form: FormPollux}
		obs = append(obs, Observation{Nodes: sh[0], Replicas: sh[1], Local: sh[2],
			AccumSeconds: p.GradSeconds(sh[2]), OptimSeconds: p.StepSeconds(sh[0], sh[1], sh[2], 0)})
	}
	return obs
}

func TestFitStartsBound(t *testing.T) {
	for _, n := range []int{math.MaxInt, MaxStarts + 1, -1} {
		if _, _, err := Fit(robustObs(), FitOptions{Starts: n}); !errors.Is(err, ErrInvalidOptions) {
			t.Errorf("Fit Starts %d: err %v, want ErrInvalidOptions", n, err)
		}
		if _, err := NewEstimator(EstimatorConfig{Limits: Limits{InitBatch: 32, MaxBatch: 512}, Fit: FitOptions{Starts: n}}); !errors.Is(err, ErrInvalidOptions) {
			t.Errorf("NewEstimator Fit.Starts %d: err %v, want ErrInvalidOptions", n, err)
		}
	}
	if _, res, err := Fit(robustObs(), FitOptions{Starts: MaxStarts}); err != nil || res.Starts < 2 {
		t.Errorf("Fit Starts MaxStarts: %d starts run, %v", res.Starts, err)
	}
}

func TestObserveTypeKey(t *testing.T) {
	e, err := NewEstimator(EstimatorConfig{Limits: Limits{InitBatch: 32, MaxBatch: 512}})
	if err != nil {
		t.Fatal(err)
	}
	o := Observation{Nodes: 1, Replicas: 1, Local: 32, AccumSeconds: 0.05, OptimSeconds: 0.05}
	for _, typ := range []string{"A100-40GB", "a100 ", "Not A Key!", "-t4"} {
		if err := e.Observe(typ, o); !errors.Is(err, ErrInvalidOptions) {
			t.Errorf("Observe(%q): err %v, want ErrInvalidOptions", typ, err)
		}
	}
	if len(e.Types()) != 0 {
		t.Errorf("types recorded from rejected keys: %v", e.Types())
	}
	for _, typ := range []string{"a100-40gb", AnyType} {
		if err := e.Observe(typ, o); err != nil {
			t.Errorf("Observe(%q): %v", typ, err)
		}
	}
	if _, err := NewEstimator(EstimatorConfig{Limits: Limits{InitBatch: 32, MaxBatch: 512}, Profiles: map[string][]Observation{"T4": {o}}}); !errors.Is(err, ErrInvalidOptions) {
		t.Errorf("Profiles key T4: err %v, want ErrInvalidOptions", err)
	}
}

func TestObserveAccumOverOptim(t *testing.T) {
	e, err := NewEstimator(EstimatorConfig{Limits: Limits{InitBatch: 32, MaxBatch: 512}})
	if err != nil {
		t.Fatal(err)
	}
	o := Observation{Nodes: 1, Replicas: 2, Local: 32, AccumSeconds: 0.2, OptimSeconds: 0.1}
	if err := e.Observe("t4", o); !errors.Is(err, ErrInvalidObservation) {
		t.Errorf("AccumSeconds 0.2 > OptimSeconds 0.1: err %v, want ErrInvalidObservation", err)
	}
	o.AccumSeconds = 0.103 // within measurement noise
	if err := e.Observe("t4", o); err != nil {
		t.Errorf("AccumSeconds 3%% over OptimSeconds: %v", err)
	}
}

func TestNoiseScaleOverflow(t *testing.T) {
	var ns NoiseScale
	if err := ns.Update(2, 1, 4, 1); err != nil {
		t.Fatal(err)
	}
	before, _ := ns.Stats()
	if err := ns.Update(math.MaxFloat64, math.MaxFloat64, 4, 1); !errors.Is(err, ErrNoiseScale) {
		t.Errorf("overflowing step: err %v, want ErrNoiseScale", err)
	}
	if err := ns.Update(math.MaxFloat64/2, 0, 3, math.MaxFloat64); !errors.Is(err, ErrNoiseScale) {
		t.Errorf("overflowing scale: err %v, want ErrNoiseScale", err)
	}
	after, ok := ns.Stats()
	if !ok || after != before || after.Validate() != nil {
		t.Errorf("stats after rejected steps %+v, want %+v", after, before)
	}
}

// FuzzFitOptions drives the fit's user numbers (goodput -starts,
// MaxIterations, GradientThreshold) through Fit and NewEstimator: an
// ErrInvalidOptions or a fit, never a panic or an allocation that the
// number alone sizes.
func FuzzFitOptions(f *testing.F) {
	f.Add(int64(1), int64(0), 0.0)
	f.Add(int64(math.MaxInt64), int64(0), 0.0)
	f.Add(int64(1_000_000_000), int64(5), 1e-3)
	f.Add(int64(-3), int64(-1), math.NaN())
	f.Add(int64(MaxStarts), int64(3), math.Inf(1))
	f.Fuzz(func(t *testing.T, starts, iters int64, grad float64) {
		opts := FitOptions{Starts: int(starts), MaxIterations: int(min(max(iters, -1), 20)), GradientThreshold: grad}
		if _, err := NewEstimator(EstimatorConfig{Limits: Limits{InitBatch: 32, MaxBatch: 512}, Fit: opts}); err != nil && !errors.Is(err, ErrInvalidOptions) {
			t.Fatalf("NewEstimator: %v", err)
		}
		if _, _, err := Fit(robustObs(), opts); err != nil && !errors.Is(err, ErrInvalidOptions) {
			t.Fatalf("Fit: %v", err)
		}
	})
}

package goodput

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"
)

func TestEstimatorLifecycle(t *testing.T) {
	e, err := NewEstimator(EstimatorConfig{Limits: testLimits})
	if err != nil {
		t.Fatal(err)
	}
	// No data: no model, linear curve, exploration bound 1.
	if _, ok := e.Model("t4"); ok {
		t.Error("model before any observation")
	}
	c, err := e.Curve(CurveOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if c.Speedup("t4", 1, 1) != 1 || c.Speedup("t4", 1, 2) != 0 || e.MaxReplicas() != 1 {
		t.Errorf("empty estimator: speedups %v %v, max %d", c.Speedup("t4", 1, 1), c.Speedup("t4", 1, 2), e.MaxReplicas())
	}
	// Invalid observations are rejected and not recorded.
	if err := e.Observe("t4", Observation{Nodes: 1, Replicas: 1, Local: 32, AccumSeconds: math.NaN(), OptimSeconds: 1}); !errors.Is(err, ErrInvalidObservation) {
		t.Errorf("NaN accepted: %v", err)
	}
	if len(e.Types()) != 0 {
		t.Errorf("types after a rejected observation: %v", e.Types())
	}
	err = e.ObserveBatch("t4", []Observation{{Nodes: 1, Replicas: 1, Local: 32, AccumSeconds: 0.04, OptimSeconds: 0.04}, {Nodes: 1, Replicas: 1, Local: 32, AccumSeconds: -1, OptimSeconds: 1}})
	if !errors.Is(err, ErrInvalidObservation) || !strings.Contains(err.Error(), "observation 1") {
		t.Errorf("batch error %v", err)
	}
	if err := e.ObserveGrad(GradStats{Sqr: -1}); !errors.Is(err, ErrInvalidGrad) {
		t.Errorf("bad grad accepted: %v", err)
	}
	// Repeated observations of one configuration are averaged.
	if err := e.Observe("t4", Observation{Nodes: 1, Replicas: 1, Local: 32, AccumSeconds: 0.06, OptimSeconds: 0.06}); err != nil {
		t.Fatal(err)
	}
	obs := e.Observations("t4")
	if len(obs) != 1 || !near(obs[0].AccumSeconds, 0.05, 1e-12) {
		t.Errorf("observations %+v", obs)
	}
	// Running on 4 GPUs raises the exploration bound to 16 (DefaultExplore).
	for _, o := range synthetic(testParams, 1, []int{32, 64}) {
		if err := e.Observe("t4", o); err != nil {
			t.Fatal(err)
		}
	}
	if e.MaxReplicas() != 4*DefaultExplore {
		t.Errorf("MaxReplicas = %d, want %d", e.MaxReplicas(), 4*DefaultExplore)
	}
	m, ok := e.Model("t4")
	if !ok || m.Limits != testLimits {
		t.Fatalf("model %+v, %v", m, ok)
	}
	if r, ok := e.FitResult("t4"); !ok || r.Starts < 1 {
		t.Errorf("fit result %+v", r)
	}
	c, err = e.Curve(CurveOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if c.MaxReplicas("t4") != 16 || c.Speedup("t4", 1, 17) != 0 || !(c.Speedup("t4", 1, 4) > 1) {
		t.Errorf("curve: max %d, s(17) %v, s(4) %v", c.MaxReplicas("t4"), c.Speedup("t4", 1, 17), c.Speedup("t4", 1, 4))
	}
	// An unseen type falls back to linear scaling.
	if c.Speedup("v100", 1, 4) != 4 {
		t.Errorf("unseen type speedup %v", c.Speedup("v100", 1, 4))
	}
}

// TestEstimatorExplore checks the exploration growth: Pollux's 2, the
// MaxReplicas cap over it, and a negative value rejected.
func TestEstimatorExplore(t *testing.T) {
	for _, tc := range []struct{ explore, cap, want int }{{2, 0, 8}, {1, 0, 4}, {8, 20, 20}} {
		e, err := NewEstimator(EstimatorConfig{Limits: testLimits, Explore: tc.explore, MaxReplicas: tc.cap})
		if err != nil {
			t.Fatal(err)
		}
		if e.MaxReplicas() != 1 {
			t.Errorf("Explore %d: bound %d before any run, want 1", tc.explore, e.MaxReplicas())
		}
		if err := e.ObserveBatch("t4", synthetic(testParams, 1, []int{32, 64})); err != nil {
			t.Fatal(err)
		}
		if got := e.MaxReplicas(); got != tc.want {
			t.Errorf("Explore %d, cap %d: bound %d after 4 GPUs, want %d", tc.explore, tc.cap, got, tc.want)
		}
	}
	if _, err := NewEstimator(EstimatorConfig{Limits: testLimits, Explore: -1}); !errors.Is(err, ErrInvalidOptions) {
		t.Errorf("Explore -1: %v", err)
	}
}

// TestEstimatorBootstrap is Sia's bootstrapping: a type with only a
// one-GPU profile borrows the scaling of the type the job ran on.
func TestEstimatorBootstrap(t *testing.T) {
	slow := testParams.scaled(2.5)
	profile := []Observation{
		{Nodes: 1, Replicas: 1, Local: 32, AccumSeconds: slow.GradSeconds(32), OptimSeconds: slow.StepSeconds(1, 1, 32, 0)},
		{Nodes: 1, Replicas: 1, Local: 128, AccumSeconds: slow.GradSeconds(128), OptimSeconds: slow.StepSeconds(1, 1, 128, 0)},
	}
	k80Limits := testLimits
	k80Limits.MaxLocal = 64
	e, err := NewEstimator(EstimatorConfig{Limits: testLimits, Profiles: map[string][]Observation{"k80": profile},
		TypeLimits: map[string]Limits{"k80": k80Limits}})
	if err != nil {
		t.Fatal(err)
	}
	if e.MaxReplicas() != 1 {
		t.Errorf("profiles count as runs: max %d", e.MaxReplicas())
	}
	// Before any multi-GPU run anywhere, k80's own fit assumes perfect scaling.
	m, ok := e.Model("k80")
	if !ok {
		t.Fatal("no k80 model")
	}
	if s := m.Throughput(2, 8, 64, 0) / m.Throughput(1, 1, 64, 0); !near(s, 8, 1e-3) {
		t.Errorf("prior scaling %v, want 8", s)
	}
	// The job runs on t4 up to 4 nodes.
	if err := e.ObserveBatch("t4", synthetic(testParams, 4, []int{32, 64, 128})); err != nil {
		t.Fatal(err)
	}
	t4, _ := e.Model("t4")
	k80, _ := e.Model("k80")
	// k80 is projected: t4's scaling, 2.5× slower.
	for _, s := range [][2]int{{1, 1}, {1, 4}, {2, 8}, {4, 16}} {
		r := k80.Throughput(s[0], s[1], 64, 0) / t4.Throughput(s[0], s[1], 64, 0)
		if math.Abs(r-0.4) > 0.03 {
			t.Errorf("shape %v: k80/t4 throughput %.3f, want ≈ 0.4", s, r)
		}
	}
	c, err := e.Curve(CurveOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// Baseline is the slowest type's one-GPU goodput.
	if s := c.Speedup("k80", 1, 1); !near(s, 1, 1e-9) {
		t.Errorf("k80 1-GPU speedup %v", s)
	}
	// k80's own limits: at most 64 per GPU.
	if p := c.BatchPlan("k80", 1, 4); p.Local > 64 || k80.MaxLocal != 64 || t4.MaxLocal != 256 {
		t.Errorf("k80 plan %+v, limits %+v / %+v", p, k80.Limits, t4.Limits)
	}
	// Once the job runs multi-GPU on k80, k80 gets its own fit.
	if err := e.ObserveBatch("k80", synthetic(slow, 2, []int{32, 64})); err != nil {
		t.Fatal(err)
	}
	own, _ := e.Model("k80")
	if own.Params == k80.Params {
		t.Error("k80 not refitted on its own data")
	}
}

func TestEstimatorConfigErrors(t *testing.T) {
	cfgs := []EstimatorConfig{
		{},
		{Limits: testLimits, MaxReplicas: -1},
		{Limits: testLimits, Profiles: map[string][]Observation{"a": {{Nodes: 1, Replicas: 2, Local: 1, AccumSeconds: 1, OptimSeconds: 1}}}},
		{Limits: testLimits, Profiles: map[string][]Observation{"a": {{Nodes: 1, Replicas: 1, Local: 1, AccumSeconds: 0, OptimSeconds: 1}}}},
		{Limits: testLimits, TypeLimits: map[string]Limits{"a": {}}},
	}
	for i, c := range cfgs {
		if _, err := NewEstimator(c); err == nil {
			t.Errorf("config %d accepted", i)
		}
	}
}

func TestEstimatorConcurrent(t *testing.T) {
	e, err := NewEstimator(EstimatorConfig{Limits: testLimits, MaxReplicas: 16})
	if err != nil {
		t.Fatal(err)
	}
	obs := synthetic(testParams, 2, []int{32, 64})
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			typ := fmt.Sprint("t", g%2)
			for i, o := range obs {
				if err := e.Observe(typ, o); err != nil {
					t.Error(err)
					return
				}
				if i%8 == 0 {
					_ = e.ObserveGrad(GradStats{Sqr: 1, Var: float64(i)})
					c, err := e.Curve(CurveOptions{})
					if err != nil {
						t.Error(err)
						return
					}
					c.Speedup(typ, 1, 2)
					e.Model(typ)
				}
			}
		}()
	}
	wg.Wait()
	if e.MaxReplicas() != 16 {
		t.Errorf("MaxReplicas = %d, want the configured 16", e.MaxReplicas())
	}
}

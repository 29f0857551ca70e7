package goodput

import (
	"errors"
	"math"
	"sync"
	"testing"
)

var testLimits = Limits{InitBatch: 128, MaxBatch: 4096, MinLocal: 32, MaxLocal: 256, Accumulation: true}

func testModel() Model {
	return Model{Params: testParams, Grad: GradStats{Sqr: 0.13, Var: 5}, Limits: testLimits}
}

func TestCurveSpeedup(t *testing.T) {
	m := testModel()
	c, err := NewCurve(map[string]CurveModel{"t4": {Model: m}}, CurveOptions{})
	if err != nil {
		t.Fatal(err)
	}
	base := m.Optimize(1, 1).Goodput
	tests := []struct {
		typ  string
		n, k int
		want float64
	}{
		{"t4", 0, 0, 0},
		{"t4", 1, 1, 1},
		{"t4", 2, 8, m.Optimize(2, 8).Goodput / base},
		{"t4", 3, 2, 0},   // more nodes than replicas
		{"t4", 1, 129, 0}, // beyond MaxBatch/MinLocal = 128 replicas
		{"a100", 1, 1, 0}, // no entry and no AnyType entry
		{"t4", 16, 64, m.Optimize(16, 64).Goodput / base},
	}
	for _, tc := range tests {
		for range 2 { // computed, then memoised
			if got := c.Speedup(tc.typ, tc.n, tc.k); !near(got, tc.want, 1e-12) {
				t.Errorf("Speedup(%q, %d, %d) = %v, want %v", tc.typ, tc.n, tc.k, got, tc.want)
			}
		}
	}
	if p := c.BatchPlan("t4", 2, 8); p != m.Optimize(2, 8) {
		t.Errorf("BatchPlan = %+v, want %+v", p, m.Optimize(2, 8))
	}
	if c.MaxReplicas("t4") != 128 || c.MaxReplicas("v100") != 0 {
		t.Errorf("MaxReplicas = %d, %d", c.MaxReplicas("t4"), c.MaxReplicas("v100"))
	}
}

func TestCurveBaselines(t *testing.T) {
	fast, slow := testModel(), testModel()
	slow.Params = slow.Params.scaled(2)
	models := map[string]CurveModel{"a100": {Model: fast}, "t4": {Model: slow}}
	// Default baseline: one GPU of the slowest type.
	c, err := NewCurve(models, CurveOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if s := c.Speedup("t4", 1, 1); !near(s, 1, 1e-12) {
		t.Errorf("slowest type at 1 GPU: %v", s)
	}
	if s := c.Speedup("a100", 1, 1); !near(s, 2, 1e-9) {
		t.Errorf("2× faster type at 1 GPU: %v", s)
	}
	// A fair-share baseline: 4 GPUs on one node of a100.
	c, err = NewCurve(models, CurveOptions{BaseNodes: 1, BaseReplicas: 4, BaseType: "a100"})
	if err != nil {
		t.Fatal(err)
	}
	if s := c.Speedup("a100", 1, 4); !near(s, 1, 1e-12) {
		t.Errorf("fair share: %v", s)
	}
	for i, o := range []CurveOptions{{BaseNodes: 2, BaseReplicas: 1}, {BaseType: "h100"}, {MaxReplicas: -1}, {BaseNodes: 1, BaseReplicas: 1000}} {
		if _, err := NewCurve(models, o); !errors.Is(err, ErrInvalidOptions) {
			t.Errorf("options %d: %v", i, err)
		}
	}
	if _, err := NewCurve(nil, CurveOptions{}); !errors.Is(err, ErrInvalidOptions) {
		t.Errorf("no models: %v", err)
	}
	if _, err := NewCurve(map[string]CurveModel{"x": {Model: Model{Limits: testLimits}}}, CurveOptions{}); !errors.Is(err, ErrInvalidParams) {
		t.Errorf("unfitted model accepted: %v", err)
	}
}

func TestLinearCurve(t *testing.T) {
	c, err := LinearCurve(testLimits, 8)
	if err != nil {
		t.Fatal(err)
	}
	for k := 1; k <= 9; k++ {
		want := float64(k)
		if k > 8 {
			want = 0
		}
		if got := c.Speedup("any", 1, k); got != want {
			t.Errorf("Speedup(%d) = %v, want %v", k, got, want)
		}
	}
	if p := c.BatchPlan("t4", 1, 8); p.Batch != 256 || p.Local != 32 || p.Goodput != 0 {
		t.Errorf("linear plan %+v", p)
	}
}

// TestCurveNeverNaN checks the Speedup contract on random models.
func TestCurveNeverNaN(t *testing.T) {
	r := newRand(3)
	for range 200 {
		m := randomModel(r)
		c, err := NewCurve(map[string]CurveModel{AnyType: {Model: m}}, CurveOptions{})
		if err != nil {
			continue // infeasible baseline
		}
		for k := 0; k <= 70; k += 7 {
			for n := 0; n <= k; n += 3 {
				s := c.Speedup("t", n, k)
				if math.IsNaN(s) || math.IsInf(s, 0) || s < 0 {
					t.Fatalf("Speedup(%d, %d) = %v for %+v", n, k, s, m)
				}
			}
		}
	}
}

func TestCurveConcurrent(t *testing.T) {
	m := testModel()
	c, err := NewCurve(map[string]CurveModel{"t4": {Model: m}, AnyType: {Model: Model{Limits: testLimits}, Linear: true}}, CurveOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 400 {
				k := (i*7+g)%64 + 1
				n := (k + 3) / 4
				if s, want := c.Speedup("t4", n, k), m.Optimize(n, k).Goodput/c.Base(); !near(s, want, 1e-12) {
					t.Errorf("Speedup(%d, %d) = %v, want %v", n, k, s, want)
					return
				}
				c.BatchPlan("v100", n, k)
			}
		}()
	}
	wg.Wait()
}

func TestCurveLookupAllocs(t *testing.T) {
	c, err := NewCurve(map[string]CurveModel{"t4": {Model: testModel()}}, CurveOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c.Speedup("t4", 2, 8)
	if a := testing.AllocsPerRun(100, func() { c.Speedup("t4", 2, 8); c.BatchPlan("t4", 2, 8) }); a != 0 {
		t.Errorf("memoised lookups allocate %v times", a)
	}
	big := testModel()
	big.MaxBatch, big.MinLocal, big.MaxLocal = 1<<20, 1, 1<<20
	cb, err := NewCurve(map[string]CurveModel{"t4": {Model: big}}, CurveOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if cb.Speedup("t4", 500, 2000) <= 0 {
		t.Error("no speedup beyond the memo table")
	}
	if a := testing.AllocsPerRun(10, func() { cb.Speedup("t4", 500, 2000) }); a != 0 {
		t.Errorf("unmemoised lookups allocate %v times", a)
	}
}

func TestCurveNodeBound(t *testing.T) {
	allReduce := testModel()
	allReduce.Form = FormAllReduce
	tree := allReduce
	tree.AlphaT, tree.BetaT, tree.DeltaT = 0.1, 0.02, 0.01
	linear := CurveModel{Model: Model{Limits: testLimits}, Linear: true}
	tests := []struct {
		name   string
		models map[string]CurveModel
		want   int
	}{
		{"pollux", map[string]CurveModel{"t4": {Model: testModel()}}, 2},
		{"all-reduce without tree", map[string]CurveModel{"t4": {Model: allReduce}}, 2},
		{"all-reduce with tree", map[string]CurveModel{"t4": {Model: tree}}, 0},
		{"tree and pollux", map[string]CurveModel{"t4": {Model: tree}, "a100": {Model: testModel()}}, 0},
		{"linear", map[string]CurveModel{"t4": linear}, 1},
		{"linear and pollux", map[string]CurveModel{"t4": linear, "a100": {Model: testModel()}}, 2},
	}
	for _, tc := range tests {
		c, err := NewCurve(tc.models, CurveOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got := c.NodeBound(); got != tc.want {
			t.Errorf("%s: NodeBound() = %d, want %d", tc.name, got, tc.want)
		}
		differs := false
		for typ, cm := range tc.models {
			for r := 1; r <= 40; r++ {
				for n := 1; n <= r; n++ {
					// The plan memoised once for n > 2 is the plan of n.
					if !cm.Linear {
						if got, want := c.BatchPlan(typ, n, r), cm.Model.Optimize(n, r); got != want {
							t.Fatalf("%s: BatchPlan(%q, %d, %d) = %+v, want %+v", tc.name, typ, n, r, got, want)
						}
					}
					if b := tc.want; b > 0 && n > b {
						if got, want := c.Speedup(typ, n, r), c.Speedup(typ, b, r); got != want {
							t.Fatalf("%s: Speedup(%q, %d, %d) = %v ≠ Speedup on %d nodes %v", tc.name, typ, n, r, got, b, want)
						}
					} else if n > 2 && c.Speedup(typ, n, r) != c.Speedup(typ, 2, r) {
						differs = true
					}
				}
			}
		}
		if tc.want == 0 && !differs {
			t.Errorf("%s: no bound, yet every speedup on more than 2 nodes equals the one on 2", tc.name)
		}
	}
}

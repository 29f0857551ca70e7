package goodput

import (
	"cmp"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// The properties AdaptDL's own tests assert of its GoodputFunction and
// SpeedupFunction (adaptdl/goodput_test.py, adaptdl_sched/policy/
// speedup_test.py), checked here on goodsched's Model and Curve over the
// same kind of random parameters: every perf and grad parameter drawn
// from Gamma(shape 2, scale 2), γ clamped into [1, 10] (goodsched's
// bounds), InitBatch 128 (16 for the evaluation test).

// gamma22 draws from Gamma(shape 2, scale 2): twice the sum of two unit
// exponentials.
func gamma22(r *rand.Rand) float64 { return 2 * (r.ExpFloat64() + r.ExpFloat64()) }

// adaptdlModels returns n×n (perf, grad) combinations, as the Python
// tests parametrise 10×10.
func adaptdlModels(seed uint64, n int) []Model {
	r := newRand(seed)
	perf := make([]Params, n)
	for i := range perf {
		// AdaptDL's order: alpha_c, beta_c, alpha_n, beta_n, alpha_r, beta_r, gamma.
		v := [7]float64{}
		for j := range v {
			v[j] = gamma22(r)
		}
		perf[i] = Params{Form: FormPollux, AlphaC: v[0], BetaC: v[1], AlphaN: v[2], BetaN: v[3],
			AlphaR: v[4], BetaR: v[5], Gamma: min(max(v[6], MinGamma), MaxGamma)}
	}
	grad := make([]GradStats, n)
	for i := range grad {
		grad[i] = GradStats{Sqr: gamma22(r), Var: gamma22(r)}
	}
	var out []Model
	for _, p := range perf {
		for _, g := range grad {
			out = append(out, Model{Params: p, Grad: g})
		}
	}
	return out
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }

// TestAdaptDLEvaluate ports test_evaluate: throughput ≥ 0, efficiency in
// [0, 1] above M0 and falling with the batch, goodput = throughput ×
// efficiency; with nodes, replicas and accumulation fixed, throughput
// rises with the per-GPU batch with diminishing returns; with nodes, per-
// GPU batch and accumulation fixed, throughput per replica falls with the
// replicas.
func TestAdaptDLEvaluate(t *testing.T) {
	type point struct {
		n, k, a, s int
		thr, eff   float64
	}
	for mi, m := range adaptdlModels(16, 10) {
		m.Limits = Limits{InitBatch: 16, MaxBatch: 1 << 20}
		var pts []point
		for _, n := range []int{1, 2, 3, 4} {
			for _, k := range []int{1, 2, 4, 8} {
				for _, a := range []int{8, 12, 16, 20, 24} {
					for _, s := range []int{0, 1, 2, 3, 4} {
						if n > k || m.InitBatch > k*a*s { // AdaptDL's filter (s, not s+1)
							continue
						}
						b := k * a * (s + 1)
						p := point{n, k, a, s, m.Throughput(n, k, a, s), m.Efficiency(b)}
						if g := m.Goodput(n, k, a, s); !near(g, p.thr*p.eff, 1e-12) {
							t.Fatalf("model %d %v: goodput %v ≠ throughput × efficiency %v", mi, p, g, p.thr*p.eff)
						}
						if !(p.thr >= 0) || !(p.eff >= 0 && p.eff <= 1) {
							t.Fatalf("model %d %v: throughput %v, efficiency %v", mi, p, p.thr, p.eff)
						}
						pts = append(pts, p)
					}
				}
			}
		}
		batch := func(p point) int { return p.k * p.a * (p.s + 1) }
		bySize := slices.Clone(pts)
		slices.SortStableFunc(bySize, func(x, y point) int { return cmp.Compare(batch(x), batch(y)) })
		for i := 1; i < len(bySize); i++ {
			if bySize[i].eff > bySize[i-1].eff*(1+1e-12) {
				t.Fatalf("model %d: efficiency rises from batch %d to %d", mi, batch(bySize[i-1]), batch(bySize[i]))
			}
		}
		// Group by (nodes, replicas, accum): throughput against the per-GPU batch.
		groups := map[[3]int][]point{}
		for _, p := range pts {
			groups[[3]int{p.n, p.k, p.s}] = append(groups[[3]int{p.n, p.k, p.s}], p)
		}
		for key, g := range groups {
			slices.SortFunc(g, func(x, y point) int { return cmp.Compare(x.a, y.a) })
			for i := 1; i < len(g); i++ {
				if g[i].thr < g[i-1].thr*(1-1e-12) {
					t.Fatalf("model %d %v: throughput falls from local %d to %d", mi, key, g[i-1].a, g[i].a)
				}
				if i >= 2 {
					dx0, dy0 := float64(g[i-1].a-g[i-2].a), g[i-1].thr-g[i-2].thr
					dx1, dy1 := float64(g[i].a-g[i-1].a), g[i].thr-g[i-1].thr
					if dx0*dy1-dx1*dy0 > 1e-9*g[i].thr*dx0*dx1 {
						t.Fatalf("model %d %v: throughput gains rise at local %d", mi, key, g[i].a)
					}
				}
			}
		}
		// Group by (nodes, local, accum): throughput per replica against replicas.
		groups = map[[3]int][]point{}
		for _, p := range pts {
			groups[[3]int{p.n, p.a, p.s}] = append(groups[[3]int{p.n, p.a, p.s}], p)
		}
		for key, g := range groups {
			slices.SortFunc(g, func(x, y point) int { return cmp.Compare(x.k, y.k) })
			for i := 1; i < len(g); i++ {
				if g[i].thr/float64(g[i].k) > g[i-1].thr/float64(g[i-1].k)*(1+1e-12) {
					t.Fatalf("model %d %v: per-replica throughput rises from %d to %d replicas", mi, key, g[i-1].k, g[i].k)
				}
			}
		}
	}
}

// optimizeProps are the assertions the optimize tests make per replica
// count; zero allows an infeasible (zero) plan where AdaptDL allows
// goodput 0.
type optimizeProps struct {
	minLocal, maxLocal int // AdaptDL's atomic_bsz_range; 0 = none
	maxBatch           int // 0 = fixed batch
	accumulation       bool
}

func checkOptimizeProps(t *testing.T, mi int, m Model, pr optimizeProps, nodes func(k int) int, ks []int) {
	t.Helper()
	m.Limits = Limits{InitBatch: 128, MaxBatch: pr.maxBatch, MinLocal: pr.minLocal, MaxLocal: pr.maxLocal, Accumulation: pr.accumulation}
	for _, k := range ks {
		p := m.Optimize(nodes(k), k)
		zero := p.Goodput == 0
		fail := func(what string) {
			t.Helper()
			t.Fatalf("model %d %+v, %d nodes × %d replicas: %s (plan %+v)", mi, pr, nodes(k), k, what, p)
		}
		if zero && (pr.minLocal == 0 || pr.maxBatch == 0) {
			fail("no plan") // AdaptDL asserts these bounds without a goodput-0 escape
		}
		if zero {
			continue
		}
		if p.Local < ceilDiv(128, k) {
			fail("per-GPU batch below ceil(M0/replicas)")
		}
		if pr.minLocal > 0 && (p.Local < pr.minLocal || p.Local > pr.maxLocal) {
			fail("per-GPU batch outside the range")
		}
		if pr.maxBatch == 0 && pr.minLocal == 0 && (p.Local != ceilDiv(128, k) || p.Accum != 0) {
			fail("fixed batch not at ceil(M0/replicas)")
		}
		if pr.maxBatch > 0 && p.Batch >= pr.maxBatch+k*(p.Accum+1) {
			fail("total beyond MaxBatch + rounding")
		}
		if pr.maxBatch == 0 && pr.minLocal > 0 && p.Local*k > 100*128 {
			fail("total beyond 100 × M0")
		}
		if !pr.accumulation && p.Accum != 0 {
			fail("accumulation without Accumulation")
		}
		if p.Accum < 0 || p.Accum > 15 {
			fail("accumulation steps outside [0, 15]")
		}
		if k == 1 && pr.accumulation && p.Local != 128 && p.Accum == 0 {
			fail("one replica above M0 without accumulation")
		}
		if k == 1 && pr.accumulation && p.Batch == 128 && p.Accum != 0 {
			fail("one replica at M0 accumulates")
		}
		if k > 1 && nodes(k) == k && p.Accum > 0 && p.Accum*p.Local < pr.maxLocal {
			fail("multi-node accumulation below MaxLocal samples")
		}
	}
}

// TestAdaptDLOptimize ports test_optimize_no_bounds, _local_bounds,
// _max_bounds, _all_bounds, _accumulation and test_one_replica_accumulation.
func TestAdaptDLOptimize(t *testing.T) {
	single := func(int) int { return 1 }
	multi := func(k int) int { return k }
	upTo := func(n int) []int {
		ks := make([]int, n)
		for i := range ks {
			ks[i] = i + 1
		}
		return ks
	}
	for mi, m := range adaptdlModels(128, 10) {
		// No bounds: a fixed batch of 128 runs ceil(128/k) per GPU.
		fixed := m
		fixed.Limits = Limits{InitBatch: 128}
		if p := fixed.Optimize(1, 3); p.Local != 43 || p.Batch != 129 {
			t.Fatalf("model %d: 3 replicas run %+v, want 43 per GPU", mi, p)
		}
		for _, nodes := range []func(int) int{single, multi} {
			checkOptimizeProps(t, mi, m, optimizeProps{}, nodes, upTo(5))
			checkOptimizeProps(t, mi, m, optimizeProps{minLocal: 64, maxLocal: 256}, nodes, upTo(99))
			checkOptimizeProps(t, mi, m, optimizeProps{maxBatch: 1280}, nodes, upTo(99))
			checkOptimizeProps(t, mi, m, optimizeProps{minLocal: 64, maxLocal: 256, maxBatch: 1280}, nodes, upTo(19))
			checkOptimizeProps(t, mi, m, optimizeProps{minLocal: 64, maxLocal: 256, maxBatch: 1280, accumulation: true}, nodes, upTo(19))
		}
		// Closed bounds, with and without accumulation: always 256 per GPU.
		for _, acc := range []bool{false, true} {
			c := m
			c.Limits = Limits{InitBatch: 128, MinLocal: 256, MaxLocal: 256, Accumulation: acc}
			for k := 1; k < 100; k++ {
				if p := c.Optimize(1, k); p.Local != 256 || p.Accum != 0 || !(p.Goodput > 0) {
					t.Fatalf("model %d closed bounds (accumulation %v), %d replicas: %+v", mi, acc, k, p)
				}
			}
		}
		// One replica at M0 trains at 128 with range (64, 256).
		for _, l := range []Limits{{InitBatch: 128, MinLocal: 64, MaxLocal: 256}, {InitBatch: 128, MaxBatch: 1280}, {InitBatch: 128, MaxBatch: 1280, MinLocal: 64, MaxLocal: 256}} {
			c := m
			c.Limits = l
			if p := c.Optimize(1, 1); p.Local != 128 || p.Accum != 0 {
				t.Fatalf("model %d %+v: one replica runs %+v, want 128", mi, l, p)
			}
		}
		// Multi-node edge case: MaxBatch 1024, range (128, 128) on 4 nodes.
		e := m
		e.Limits = Limits{InitBatch: 128, MaxBatch: 1024, MinLocal: 128, MaxLocal: 128}
		if p := e.Optimize(4, 4); !(p.Goodput > 0) || p.Local != 128 || p.Accum != 0 {
			t.Fatalf("model %d edge case: %+v", mi, p)
		}
		// One replica with accumulation for every MaxBatch from 128 to 2432.
		for mb := 128; mb < 128*20; mb += 128 {
			c := m
			c.Limits = Limits{InitBatch: 128, MaxBatch: mb, MinLocal: 64, MaxLocal: 256, Accumulation: true}
			p := c.Optimize(1, 1)
			if p.Goodput == 0 {
				continue
			}
			if p.Local < 64 || p.Local > 256 || p.Batch > mb || (p.Batch == 128 && p.Accum != 0) || (p.Batch > 128 && p.Accum == 0) {
				t.Fatalf("model %d MaxBatch %d: one replica runs %+v", mi, mb, p)
			}
		}
	}
}

// TestAdaptDLSpeedup ports speedup_test.py: the speedup is the goodput
// over the one-GPU goodput, never negative, and memoised lookups (seen,
// partly seen, all seen) return the same values.
func TestAdaptDLSpeedup(t *testing.T) {
	for mi, m := range adaptdlModels(7, 4) {
		for _, l := range []Limits{{InitBatch: 128}, {InitBatch: 128, MaxBatch: 1280, MinLocal: 64, MaxLocal: 256, Accumulation: true}} {
			m.Limits = l
			c, err := NewCurve(map[string]CurveModel{AnyType: {Model: m}}, CurveOptions{})
			if err != nil {
				t.Fatal(err)
			}
			base := m.Optimize(1, 1).Goodput
			check := func(lo, hi int) {
				for k := lo; k < hi; k++ {
					for _, n := range []int{1, k} {
						want := m.Optimize(n, k).Goodput / base
						if got := c.Speedup(AnyType, n, k); !near(got, want, 1e-12) || got < 0 {
							t.Fatalf("model %d %+v: Speedup(%d, %d) = %v, want %v", mi, l, n, k, got, want)
						}
					}
				}
			}
			check(1, 10)
			check(1, 20)
			check(5, 15)
			check(1, 100)
			if l.MaxBatch == 0 {
				// A fixed batch has no replica bound: 200 GPUs still run it.
				if s := c.Speedup(AnyType, 1, 200); !(s > 0) {
					t.Fatalf("model %d: fixed-batch speedup at 200 replicas = %v", mi, s)
				}
			}
		}
	}
}

// TestFixedBatchRoundsUp checks the figures of issue 16 with AdaptDL's
// own test parameters: a fixed batch of 128 runs ceil(128/replicas) per
// GPU, so 48 replicas run 3 each (144 in all, goodput ≈ 485.8/s, where the
// round-down gave 2 each, 96, 360.3/s), and more replicas than samples
// still train (1 each) instead of getting speedup 0.
func TestFixedBatchRoundsUp(t *testing.T) {
	p := Params{Form: FormPollux, AlphaC: 0.121, BetaC: 0.00568, AlphaN: 0.0236, BetaN: 0.00634,
		AlphaR: 0.0118, BetaR: 0.00317, Gamma: 1.14}
	m := Model{Params: p, Grad: GradStats{Sqr: 0.00136, Var: 0.000502}, Limits: Limits{InitBatch: 128}}
	got := m.Optimize(1, 48)
	if got.Local != 3 || got.Batch != 144 || got.Accum != 0 || math.Abs(got.Goodput-485.8) > 0.05 {
		t.Fatalf("48 replicas: %+v, want 3 per GPU, 144, goodput 485.8/s", got)
	}
	c, err := NewCurve(map[string]CurveModel{AnyType: {Model: m}}, CurveOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []int{128, 129, 200, 1024, 2000} {
		plan := m.Optimize(1, k)
		if plan.Local != 1 || plan.Batch != k || !(c.Speedup(AnyType, 1, k) > 0) {
			t.Errorf("%d replicas: plan %+v, speedup %v", k, plan, c.Speedup(AnyType, 1, k))
		}
	}
	// MaxBatch stays a real limit for a job that adapts: never above it.
	a := m
	a.Limits = Limits{InitBatch: 128, MaxBatch: 200}
	for k := 1; k <= 200; k++ {
		feasible := k == 1 || 200/k*k >= 128 // some per-GPU batch puts the total in [128, 200]
		if plan := a.Optimize(1, k); plan.Batch > 200 || (plan.Goodput > 0) != feasible {
			t.Fatalf("adaptive, %d replicas: %+v (feasible %v)", k, plan, feasible)
		}
	}
	if plan := a.Optimize(1, 201); plan != (BatchPlan{}) {
		t.Fatalf("adaptive, 201 replicas: %+v, want none", plan)
	}
}

package goodput

import (
	"sync"
	"testing"
)

// Curves sharing a PlanCache give exactly the plans of curves with their
// own memos, also once the cache has dropped models and for replica
// counts beyond the memo table; curves of equal models share one memo.
func TestPlanCacheShared(t *testing.T) {
	a, b := testModel(), testModel()
	b.Grad.Var *= 2
	pc := NewPlanCache(1) // every other model starts a generation
	for round := range 3 {
		for _, m := range []Model{a, b, a} {
			c, err := NewCurve(map[string]CurveModel{"t4": {Model: m}}, CurveOptions{Plans: pc})
			if err != nil {
				t.Fatal(err)
			}
			own, err := NewCurve(map[string]CurveModel{"t4": {Model: m}}, CurveOptions{})
			if err != nil {
				t.Fatal(err)
			}
			for k := 1; k <= 128; k += 1 + round {
				for n := 1; n <= k; n += max(k/5, 1) {
					if got, want := c.BatchPlan("t4", n, k), own.BatchPlan("t4", n, k); got != want {
						t.Fatalf("round %d: BatchPlan(%d, %d) = %+v shared, %+v own", round, n, k, got, want)
					}
				}
			}
		}
	}
	if pc.memo(a) != pc.memo(a) {
		t.Error("equal models got different memos")
	}
	if pc.memo(a) == pc.memo(b) {
		t.Error("different models share a memo")
	}
	big := testModel()
	big.MaxBatch, big.MinLocal = 1<<20, 1
	p := NewPlanCache(0).memo(big)
	for _, k := range []int{maxMemoReplicas, maxMemoReplicas + 1, 4000} {
		if got, want := p.plan(&big, 7, k), big.Optimize(7, k); got != want {
			t.Errorf("plan(7, %d) = %+v, want %+v", k, got, want)
		}
	}
}

// A PlanCache is safe for concurrent use (run with -race): goroutines
// building curves of the same models see the same plans.
func TestPlanCacheConcurrent(t *testing.T) {
	pc := NewPlanCache(2)
	ms := []Model{testModel(), testModel(), testModel(), testModel()}
	ms[1].Grad.Sqr *= 3
	ms[2].Params = ms[2].Params.scaled(1.5)
	// A tree term: plans on every node count (the other memo layout).
	ms[3].Form, ms[3].AlphaT, ms[3].BetaT, ms[3].DeltaT = FormAllReduce, 0.1, 0.02, 0.01
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 30 {
				m := ms[(g+i)%len(ms)]
				c, err := NewCurve(map[string]CurveModel{AnyType: {Model: m}}, CurveOptions{Plans: pc})
				if err != nil {
					t.Error(err)
					return
				}
				for k := 1 + i%3; k <= 64; k += 3 {
					if got, want := c.BatchPlan("", (k+3)/4, k), m.Optimize((k+3)/4, k); got != want {
						t.Errorf("BatchPlan(%d, %d) = %+v, want %+v", (k+3)/4, k, got, want)
						return
					}
				}
			}
		}()
	}
	wg.Wait()
}

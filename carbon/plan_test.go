package carbon

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

var t0 = time.Date(2022, 1, 1, 0, 0, 0, 0, time.UTC)

func hourly(v ...float64) Series {
	return Series{Start: t0, Step: time.Hour, Values: v, Unit: GPerKWh, Signal: Average, Zone: "Z"}
}

// randConcave returns a curve whose marginal work per watt falls with
// scale, and a random minimum scale.
func randConcave(r *rand.Rand, levels int) Curve {
	c := Curve{WorkPerSecond: []float64{0}, Watts: []float64{0}}
	eff := 100 + 200*r.Float64()
	for k := 1; k <= levels; k++ {
		dp := 20 + 80*r.Float64()
		if r.IntN(4) == 0 && k > 1 {
			eff *= 0.999999 // nearly linear steps too
		} else if k > 1 {
			eff *= 0.4 + 0.6*r.Float64()
		}
		c.WorkPerSecond = append(c.WorkPerSecond, c.WorkPerSecond[k-1]+eff*dp)
		c.Watts = append(c.Watts, c.Watts[k-1]+dp)
	}
	return c
}

func randCurve(r *rand.Rand, levels int) Curve {
	c := Curve{WorkPerSecond: []float64{0}, Watts: []float64{0}}
	for k := 1; k <= levels; k++ {
		c.WorkPerSecond = append(c.WorkPerSecond, c.WorkPerSecond[k-1]+1000*r.Float64()*r.Float64())
		c.Watts = append(c.Watts, c.Watts[k-1]+10+90*r.Float64())
	}
	return c
}

func randSeries(r *rand.Rand, n int) Series {
	v := make([]float64, n)
	for i := range v {
		v[i] = 10 + 490*r.Float64()
		if r.IntN(10) == 0 && i > 0 {
			v[i] = v[i-1] // ties
		}
	}
	return hourly(v...)
}

// bruteForce is the exact optimum of Schedule's problem (whole scales per
// slot, at most one slot part way between neighbouring scales) by
// enumerating every whole-scale vector and shaving the overshoot in one
// slot.
func bruteForce(ci []float64, c Curve, minS, maxS int, work float64) float64 {
	return bruteForceBounded(ci, c, minS, maxS, nil, work)
}

// bruteForceBounded is bruteForce with slot t at most at scale bound[t]
// (ScheduleOptions.SlotMaxScale; nil: none).
func bruteForceBounded(ci []float64, c Curve, minS, maxS int, bound []int, work float64) float64 {
	levels := []int{0}
	for k := minS; k <= maxS; k++ {
		levels = append(levels, k)
	}
	n, L := len(ci), len(levels)
	wk := func(j int) float64 { return c.WorkPerSecond[levels[j]] * 3600 }
	kwh := func(j int) float64 { return c.Watts[levels[j]] * 3600 / 3.6e6 }
	best := math.Inf(1)
	v := make([]int, n)
	for {
		var w, g float64
		for t, j := range v {
			w += wk(j)
			g += kwh(j) * ci[t]
		}
		allowed := true
		for t, j := range v {
			allowed = allowed && (bound == nil || levels[j] <= bound[t])
		}
		if e := w - work; allowed && e >= -1e-9*work {
			save := 0.0
			for t, j := range v {
				if j == 0 {
					continue
				}
				dw := wk(j) - wk(j-1)
				if dw > 0 && e <= dw {
					save = math.Max(save, e*(kwh(j)-kwh(j-1))*ci[t]/dw)
				}
			}
			best = math.Min(best, g-save)
		}
		if !nextVector(v, L) {
			return best
		}
	}
}

func checkPlan(t *testing.T, s Plan, c Curve, minS, maxS int, work float64, n int) {
	t.Helper()
	if len(s.Slots) != n {
		t.Fatalf("%d slots, want %d", len(s.Slots), n)
	}
	if s.Work < work*(1-1e-9) {
		t.Fatalf("planned work %v < %v", s.Work, work)
	}
	var g float64
	for i, sl := range s.Slots {
		ok := func(k int) bool { return k == 0 || (k >= minS && k <= maxS) }
		if !ok(sl.Scale) || !ok(sl.Lower) || sl.Lower > sl.Scale {
			t.Fatalf("slot %d scale %d lower %d outside [%d,%d]", i, sl.Scale, sl.Lower, minS, maxS)
		}
		if !(sl.Fraction > 0 && sl.Fraction <= 1) {
			t.Fatalf("slot %d fraction %v", i, sl.Fraction)
		}
		g += sl.CarbonG
	}
	if !near(g, s.CarbonG, 1e-9) {
		t.Fatalf("slot carbon sums to %v, schedule says %v", g, s.CarbonG)
	}
}

// TestMarginalIsExactOnConcave is the property the issue asks for: with a
// concave curve, ≤ 24 slots and ≤ 7 scales, the marginal planner's carbon
// equals the exact optimum (by LP, and by brute force where small).
func TestMarginalIsExactOnConcave(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for it := range 300 {
		n := 1 + r.IntN(24)
		levels := 1 + r.IntN(7)
		c := randConcave(r, levels)
		minS := 1 + r.IntN(levels)
		maxS := minS + r.IntN(levels-minS+1)
		if !c.Concave(minS, maxS) {
			t.Fatalf("%d: generator made a non-concave curve", it)
		}
		s := randSeries(r, n)
		fits := float64(n) * c.WorkPerSecond[maxS] * 3600
		work := fits * (0.02 + 0.96*r.Float64())
		opts := ScheduleOptions{MinScale: minS, MaxScale: maxS}
		deadline := s.End()
		got, err := Schedule(s, c, work, deadline, opts)
		if err != nil {
			t.Fatalf("%d: %v", it, err)
		}
		if got.Method != Greedy || !got.Concave || !near(got.BoundG, got.CarbonG, 1e-9) {
			t.Fatalf("%d: method %v concave %v", it, got.Method, got.Concave)
		}
		checkPlan(t, got, c, minS, maxS, work, n)
		lb, err := LowerBound(s, c, work, deadline, opts)
		if err != nil {
			t.Fatalf("%d: LP: %v", it, err)
		}
		if !near(got.CarbonG, lb, 1e-7) {
			t.Fatalf("%d: n=%d levels=%d min=%d max=%d: greedy %v, LP optimum %v", it, n, levels, minS, maxS, got.CarbonG, lb)
		}
		if it%10 == 0 {
			dp, err := Schedule(s, c, work, deadline, ScheduleOptions{MinScale: minS, MaxScale: maxS, Method: DP})
			if err != nil {
				t.Fatal(err)
			}
			checkPlan(t, dp, c, minS, maxS, work, n)
			if g := dp.CarbonG/lb - 1; g > 0.01 || g < -1e-7 {
				t.Fatalf("%d: DP %v vs LP optimum %v", it, dp.CarbonG, lb)
			}
		}
		if n <= 6 && maxS-minS <= 3 {
			bf := bruteForce(s.Values, c, minS, maxS, work)
			if !near(got.CarbonG, bf, 1e-7) {
				t.Fatalf("%d: greedy %v, brute force %v", it, got.CarbonG, bf)
			}
		}
	}
}

// TestSlotMaxScale: with a bound per slot, the greedy plan keeps every
// slot within its bound and, on a concave curve, equals the exact
// optimum under the bounds (brute force); bounds at the curve's maximum
// change nothing; too tight bounds are infeasible; DP, negative bounds
// and bounds passed to the baselines, LowerBound or ClusterEnvelope are
// errors.
func TestSlotMaxScale(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 49))
	for it := range 300 {
		n := 1 + r.IntN(6)
		levels := 1 + r.IntN(4)
		c := randConcave(r, levels)
		s := randSeries(r, n)
		bound := make([]int, n)
		fits := 0.0
		for i := range bound {
			bound[i] = r.IntN(levels + 1)
			fits += c.WorkPerSecond[bound[i]] * 3600
		}
		work := fits * (0.05 + 0.9*r.Float64())
		if fits == 0 {
			if _, err := Schedule(s, c, 1, s.End(), ScheduleOptions{SlotMaxScale: bound}); !errors.Is(err, ErrInfeasible) {
				t.Fatalf("%d: all slots closed: %v, want ErrInfeasible", it, err)
			}
			continue
		}
		got, err := Schedule(s, c, work, s.End(), ScheduleOptions{SlotMaxScale: bound})
		if err != nil {
			t.Fatalf("%d: %v", it, err)
		}
		checkPlan(t, got, c, 1, levels, work, n)
		for i, sl := range got.Slots {
			if sl.Scale > bound[i] {
				t.Fatalf("%d: slot %d at scale %d above its bound %d", it, i, sl.Scale, bound[i])
			}
		}
		if got.Method != Greedy || got.BoundG != 0 {
			t.Fatalf("%d: method %v, BoundG %v", it, got.Method, got.BoundG)
		}
		if bf := bruteForceBounded(s.Values, c, 1, levels, bound, work); !near(got.CarbonG, bf, 1e-7) {
			t.Fatalf("%d: greedy %v, brute force %v (bounds %v)", it, got.CarbonG, bf, bound)
		}
		if _, err := Schedule(s, c, fits*1.01, s.End(), ScheduleOptions{SlotMaxScale: bound}); !errors.Is(err, ErrInfeasible) {
			t.Fatalf("%d: more work than the bounds hold: %v, want ErrInfeasible", it, err)
		}
		full := make([]int, n)
		for i := range full {
			full[i] = levels
		}
		a, errA := Schedule(s, c, work, s.End(), ScheduleOptions{SlotMaxScale: full})
		b, errB := Schedule(s, c, work, s.End(), ScheduleOptions{})
		if errA != nil || errB != nil {
			t.Fatalf("%d: bounds at the maximum: %v; none: %v", it, errA, errB)
		}
		if !near(a.CarbonG, b.CarbonG, 1e-12) {
			t.Fatalf("%d: bounds at the maximum: %v, none: %v", it, a.CarbonG, b.CarbonG)
		}
	}
	s := hourly(100, 200)
	c := randConcave(r, 2)
	for _, o := range []ScheduleOptions{{SlotMaxScale: []int{1, 1}, Method: DP}, {SlotMaxScale: []int{-1, 1}}} {
		if _, err := Schedule(s, c, 1, s.End(), o); !errors.Is(err, ErrInvalid) {
			t.Errorf("%+v: %v, want ErrInvalid", o, err)
		}
	}
	o := ScheduleOptions{SlotMaxScale: []int{1, 1}}
	_, errNow := ScheduleNow(s, c, 1, 1, s.End(), o)
	_, _, errStatic := ScheduleStatic(s, c, 1, s.End(), o)
	_, errLB := LowerBound(s, c, 1, s.End(), o)
	_, _, errEnv := ClusterEnvelope(s, ClusterDemand{DeviceSeconds: 1, MaxDevices: 2, WattsPerDevice: 100}, s.End(), o)
	for _, err := range []error{errNow, errStatic, errLB, errEnv} {
		if !errors.Is(err, ErrInvalid) {
			t.Errorf("SlotMaxScale outside Schedule: %v, want ErrInvalid", err)
		}
	}
}

// TestFallbackWithinOnePercent: with any curve, the DP fallback is within
// 1% of the exact optimum.
func TestFallbackWithinOnePercent(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	worst := 0.0
	nonConcave := 0
	for it := range 200 {
		n := 1 + r.IntN(7)
		levels := 1 + r.IntN(4)
		c := randCurve(r, levels)
		minS := 1 + r.IntN(levels)
		maxS := levels
		if !c.Concave(minS, maxS) {
			nonConcave++
		}
		s := randSeries(r, n)
		fits := float64(n) * c.WorkPerSecond[maxS] * 3600
		work := fits * (0.02 + 0.96*r.Float64())
		opts := ScheduleOptions{MinScale: minS, MaxScale: maxS}
		got, err := Schedule(s, c, work, s.End(), opts)
		if err != nil {
			t.Fatalf("%d: %v", it, err)
		}
		checkPlan(t, got, c, minS, maxS, work, n)
		bf := bruteForce(s.Values, c, minS, maxS, work)
		gap := got.CarbonG/bf - 1
		worst = math.Max(worst, gap)
		if gap > 0.01 || gap < -1e-7 {
			t.Fatalf("%d: method %v: plan %v vs exact %v (gap %.3f%%)", it, got.Method, got.CarbonG, bf, 100*gap)
		}
		dp, err := Schedule(s, c, work, s.End(), ScheduleOptions{MinScale: minS, MaxScale: maxS, Method: DP})
		if err != nil {
			t.Fatal(err)
		}
		if g := dp.CarbonG/bf - 1; g > 0.01 || g < -1e-7 {
			t.Fatalf("%d: forced DP %v vs exact %v", it, dp.CarbonG, bf)
		}
	}
	if nonConcave < 50 {
		t.Fatalf("only %d non-concave instances", nonConcave)
	}
	t.Logf("worst gap %.4f%% over 200 instances (%d non-concave)", 100*worst, nonConcave)
}

func nbody10k(t testing.TB) Curve {
	c, err := ReadProfile(open(t, "carbonscaler_profile_nbody10k.csv"))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestProfileAndConcavity(t *testing.T) {
	c := nbody10k(t)
	if c.MaxScale() != 7 || c.Watts[7] != 366.3482810890281 {
		t.Fatalf("profile %+v", c)
	}
	// nbody10k's marginal throughput falls with every node, but its
	// marginal work per marginal watt rises slightly at node 5 (6202/51.6
	// > 6251/52.8), so it is not concave in the sense the greedy needs.
	if c.Concave(1, 7) || !c.Concave(1, 4) {
		t.Fatal("nbody10k concavity")
	}
	lin, err := ReadProfile(open(t, "carbonscaler_profile_nbody100k.csv"))
	if err != nil {
		t.Fatal(err)
	}
	_ = lin.Concave(1, 7) // near-linear; either answer is fine
	bad := Curve{WorkPerSecond: []float64{0, 1, 5}, Watts: []float64{0, 1, 2}}
	if bad.Concave(1, 2) {
		t.Fatal("convex curve reported concave")
	}
	sp, err := CurveFromSpeedup([]float64{1, 1.9, 2.6, 2.5}, 100, 300, 50)
	if err != nil {
		t.Fatal(err)
	}
	if sp.MaxScale() != 3 || sp.WorkPerSecond[2] != 190 || sp.Watts[3] != 950 {
		t.Fatalf("from speedup %+v", sp)
	}
}

func TestBaselinesOrder(t *testing.T) {
	c := nbody10k(t)
	s, err := ReadElectricityMaps(open(t, "electricitymaps_US-CAL-CISO_2022-01-01_14d.csv"), ReadOptions{Basis: Direct})
	if err != nil {
		t.Fatal(err)
	}
	work := c.WorkPerSecond[7] * 24 * 3600
	deadline := s.Start.Add(72 * time.Hour)
	now, err := ScheduleNow(s, c, 7, work, deadline, ScheduleOptions{})
	if err != nil {
		t.Fatal(err)
	}
	low, err := ScheduleLowest(s, c, 7, work, deadline, ScheduleOptions{})
	if err != nil {
		t.Fatal(err)
	}
	win, err := ScheduleWindow(s, c, 7, work, deadline, ScheduleOptions{})
	if err != nil {
		t.Fatal(err)
	}
	st, k, err := ScheduleStatic(s, c, work, deadline, ScheduleOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pl, err := Schedule(s, c, work, deadline, ScheduleOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !(pl.CarbonG <= st.CarbonG && st.CarbonG <= low.CarbonG && low.CarbonG <= win.CarbonG && win.CarbonG <= now.CarbonG) {
		t.Fatalf("order broken: plan %v static(k=%d) %v lowest %v window %v now %v", pl.CarbonG, k, st.CarbonG, low.CarbonG, win.CarbonG, now.CarbonG)
	}
	if now.Finish() != s.Start.Add(24*time.Hour) {
		t.Fatalf("agnostic finishes %v", now.Finish())
	}
	for _, x := range []Plan{now, low, win, st, pl} {
		if !near(x.Work, work, 1e-9) {
			t.Fatalf("work %v want %v", x.Work, work)
		}
	}
	t.Logf("72 h from %v: now %.0f g, window %.0f, lowest %.0f, static(k=%d) %.0f, plan %.0f (%.1f%% saved)",
		s.Start.Format(time.DateOnly), now.CarbonG, win.CarbonG, low.CarbonG, k, st.CarbonG, pl.CarbonG, 100*(1-pl.CarbonG/now.CarbonG))
}

func TestInfeasible(t *testing.T) {
	c := nbody10k(t)
	s := hourly(100, 100, 100)
	_, err := Schedule(s, c, c.WorkPerSecond[7]*3600*4, s.End(), ScheduleOptions{})
	var ie *InfeasibleError
	if !errors.As(err, &ie) || !errors.Is(err, ErrInfeasible) {
		t.Fatalf("err %v", err)
	}
	if ie.Slots != 3 || !near(ie.Fits, c.WorkPerSecond[7]*3600*3, 1e-12) {
		t.Fatalf("%+v", ie)
	}
	if _, err := Schedule(s, c, 1, s.End().Add(time.Hour), ScheduleOptions{}); !errors.Is(err, ErrRange) {
		t.Fatalf("deadline past forecast: %v", err)
	}
	if _, err := Schedule(s, c, 1, s.End(), ScheduleOptions{MaxScale: 9}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("max scale: %v", err)
	}
	if _, err := Schedule(Series{Start: t0, Step: time.Hour, Values: []float64{1}}, c, 1, t0.Add(time.Hour), ScheduleOptions{}); !errors.Is(err, ErrUnit) {
		t.Fatalf("unit: %v", err)
	}
}

func TestChangeCostReducesChanges(t *testing.T) {
	c := nbody10k(t)
	r := rand.New(rand.NewPCG(5, 6))
	s := randSeries(r, 48)
	work := c.WorkPerSecond[7] * 3600 * 12
	free, err := Schedule(s, c, work, s.End(), ScheduleOptions{})
	if err != nil {
		t.Fatal(err)
	}
	costly, err := Schedule(s, c, work, s.End(), ScheduleOptions{ChangeCostG: 50})
	if err != nil {
		t.Fatal(err)
	}
	if costly.Method != DP || costly.Changes >= free.Changes {
		t.Fatalf("changes: free %d, costly %d (%v)", free.Changes, costly.Changes, costly.Method)
	}
	withCost := func(s Plan) float64 { _, g := changes(s.Slots, 0, 50); return s.CarbonG + g }
	if withCost(costly) > withCost(free)*1.01 {
		t.Fatalf("DP with change cost %v worse than greedy %v", withCost(costly), withCost(free))
	}
	checkPlan(t, costly, c, 1, 7, work, 48)
}

func TestDeterministic(t *testing.T) {
	c := nbody10k(t)
	r := rand.New(rand.NewPCG(7, 8))
	s := randSeries(r, 168)
	work := c.WorkPerSecond[7] * 3600 * 30
	a, _ := Schedule(s, c, work, s.End(), ScheduleOptions{})
	b, _ := Schedule(s, c, work, s.End(), ScheduleOptions{})
	for i := range a.Slots {
		if a.Slots[i] != b.Slots[i] {
			t.Fatalf("slot %d differs", i)
		}
	}
}

func TestClusterEnvelope(t *testing.T) {
	s := hourly(300, 100, 50, 200, 400, 80)
	d := ClusterDemand{DeviceSeconds: 10 * 3600, MinDevices: 1, MaxDevices: 4, WattsPerDevice: 400}
	e, sch, err := ClusterEnvelope(s, d, s.End(), ScheduleOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := []int{1, 1, 4, 1, 1, 2} // floor 1 everywhere = 6 h; 3 more at 50 g, 1 more at 80 g
	total := 0.0
	for i, sl := range sch.Slots {
		total += sl.Work
		if e.Devices[i] != want[i] {
			t.Fatalf("envelope %v, want %v", e.Devices, want)
		}
	}
	if !near(total, d.DeviceSeconds, 1e-12) {
		t.Fatalf("device-seconds %v", total)
	}
	if k, ok := e.At(t0.Add(150 * time.Minute)); !ok || k != 4 {
		t.Fatalf("At: %d %v", k, ok)
	}
	if _, ok := e.At(t0.Add(-time.Minute)); ok {
		t.Fatal("At before start")
	}
	if _, _, err := ClusterEnvelope(s, ClusterDemand{DeviceSeconds: 100 * 3600, MaxDevices: 4, WattsPerDevice: 1}, s.End(), ScheduleOptions{}); !errors.Is(err, ErrInfeasible) {
		t.Fatalf("infeasible: %v", err)
	}
}

// TestAutoFallsBackToDP: a strongly convex curve (more work per watt at
// larger scales) with a deadline that needs a partial slot in between is
// not certified by the greedy bound, so Auto runs DP.
func TestAutoFallsBackToDP(t *testing.T) {
	c := Curve{WorkPerSecond: []float64{0, 1, 10}, Watts: []float64{0, 10, 20}}
	s := hourly(100, 100, 300, 300)
	work := 3600 * 10.5
	got, err := Schedule(s, c, work, s.End(), ScheduleOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Method != DP || got.Concave {
		t.Fatalf("method %v concave %v", got.Method, got.Concave)
	}
	bf := bruteForce(s.Values, c, 1, 2, work)
	if g := got.CarbonG/bf - 1; g > 0.01 || g < -1e-9 {
		t.Fatalf("DP %v vs exact %v", got.CarbonG, bf)
	}
	gr, err := Schedule(s, c, work, s.End(), ScheduleOptions{Method: Greedy})
	if err != nil {
		t.Fatal(err)
	}
	if gr.CarbonG < got.CarbonG*(1-1e-9) || gr.BoundG > got.CarbonG*(1+1e-9) {
		t.Fatalf("greedy %v bound %v vs DP %v", gr.CarbonG, gr.BoundG, got.CarbonG)
	}
	t.Logf("DP %.4g g, greedy %.4g g, bound %.4g g, exact %.4g g", got.CarbonG, gr.CarbonG, gr.BoundG, bf)
}

func TestFixedScalePlanners(t *testing.T) {
	c := Curve{WorkPerSecond: []float64{0, 1, 2}, Watts: []float64{0, 1000, 2000}}
	s := hourly(50, 400, 100, 100, 10, 500, 20)
	work := 2.5 * 3600 // 2.5 slots at scale 1
	tests := []struct {
		name  string
		plan  func() (Plan, error)
		frac  []float64 // Fraction×(Scale>0) per slot
		carbG float64
	}{
		{"now", func() (Plan, error) { return ScheduleNow(s, c, 1, work, s.End(), ScheduleOptions{}) },
			[]float64{1, 1, 0.5, 0, 0, 0, 0}, 50 + 400 + 50},
		{"lowest", func() (Plan, error) { return ScheduleLowest(s, c, 1, work, s.End(), ScheduleOptions{}) },
			[]float64{0.5, 0, 0, 0, 1, 0, 1}, 10 + 20 + 25},
		// Windows of 3 slots with the last half: [100,100,5]=205 at 2,
		// [100,10,250]=360 at 3, [50,400,50]=500 at 0.
		{"window", func() (Plan, error) { return ScheduleWindow(s, c, 1, work, s.End(), ScheduleOptions{}) },
			[]float64{0, 0, 1, 1, 0.5, 0, 0}, 205},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.plan()
			if err != nil {
				t.Fatal(err)
			}
			for i, sl := range got.Slots {
				f := 0.0
				if sl.Scale > 0 {
					f = sl.Fraction
				}
				if !near(f, tc.frac[i], 1e-12) {
					t.Fatalf("slot %d: fraction %v, want %v (%v)", i, f, tc.frac[i], got.Scales())
				}
			}
			if !near(got.CarbonG, tc.carbG, 1e-12) || !near(got.Work, work, 1e-12) {
				t.Fatalf("carbon %v work %v, want %v", got.CarbonG, got.Work, tc.carbG)
			}
		})
	}
}

func TestSeriesBasics(t *testing.T) {
	s := hourly(1, 2, 3)
	if v, err := s.At(t0.Add(90 * time.Minute)); err != nil || v != 2 {
		t.Fatalf("At: %v %v", v, err)
	}
	if _, err := s.At(s.End()); !errors.Is(err, ErrRange) {
		t.Fatalf("At end: %v", err)
	}
	for _, bad := range []Series{
		{Step: time.Hour},
		{Step: 0, Values: []float64{1}},
		{Step: time.Hour, Values: []float64{math.NaN()}},
		{Step: time.Hour, Values: []float64{-1}},
		{Step: time.Hour, Values: []float64{1}, Estimated: []bool{true, false}},
	} {
		if err := bad.Validate(); err == nil {
			t.Fatalf("%+v validated", bad)
		}
	}
	if _, err := s.Slice(t0.Add(time.Hour), t0); !errors.Is(err, ErrInvalid) {
		t.Fatalf("reversed slice: %v", err)
	}
	if _, err := s.Slice(t0, s.End().Add(time.Minute)); !errors.Is(err, ErrRange) {
		t.Fatalf("long slice: %v", err)
	}
}

// TestManyScalesDP: DP indexes scales beyond 127 without overflow.
func TestManyScalesDP(t *testing.T) {
	speed := make([]float64, 200)
	for i := range speed {
		speed[i] = float64(i + 1)
	}
	speed[150] = speed[149] + 5 // a superlinear step makes it non-concave
	c, err := CurveFromSpeedup(speed, 1, 100, 0)
	if err != nil {
		t.Fatal(err)
	}
	s := hourly(100, 50, 300)
	work := 3600 * 180.0
	for _, m := range []Method{Auto, DP} {
		got, err := Schedule(s, c, work, s.End(), ScheduleOptions{Method: m, Resolution: 300})
		if err != nil {
			t.Fatal(err)
		}
		checkPlan(t, got, c, 1, 200, work, 3)
	}
	got, err := Schedule(s, c, work, s.End(), ScheduleOptions{Method: DP, ChangeCostG: 1, Resolution: 100})
	if err != nil {
		t.Fatal(err)
	}
	checkPlan(t, got, c, 1, 200, work, 3)
}

// nextVector advances v, a vector of digits in [0, L), to the next one in
// odometer order; false once every vector has been visited (v is back to
// zeros).
func nextVector(v []int, L int) bool {
	for i := range v {
		if v[i]++; v[i] < L {
			return true
		}
		v[i] = 0
	}
	return false
}

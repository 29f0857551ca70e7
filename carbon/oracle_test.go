package carbon

import (
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// The brute-force oracle for plans with change costs (issue 16): small
// instances, every whole-scale vector enumerated, and every way of ending
// one slot early that Schedule's trim can produce. At this size it gives the
// optimum a MILP over the same plans would.

// ccInstance is one planning instance.
type ccInstance struct {
	ci         []float64
	c          Curve
	minS, maxS int
	work       float64
	cc         float64
	initial    int
}

func (in ccInstance) opts(m Method) ScheduleOptions {
	return ScheduleOptions{MinScale: in.minS, MaxScale: in.maxS, ChangeCostG: in.cc, InitialScale: in.initial, Method: m}
}

func (in ccInstance) series() Series { return hourly(in.ci...) }

// objective is a schedule's carbon plus its change cost.
func objective(s Plan) float64 { return s.CarbonG + s.ChangeCostG }

// ccOracle returns the whole-scale optimum (carbon + change cost over
// every vector of whole scales doing at least the work) and the trimmed
// optimum (also every such vector with one slot cut to exactly the work,
// either on its top step, Scale then the next scale down, or by running at
// its scale for part of the slot and then suspending).
func ccOracle(in ccInstance) (whole, trimmed float64) {
	levels := []int{0}
	for k := in.minS; k <= in.maxS; k++ {
		levels = append(levels, k)
	}
	n, L := len(in.ci), len(levels)
	wk := func(j int) float64 { return in.c.WorkPerSecond[levels[j]] * 3600 }
	kwh := func(j int) float64 { return in.c.Watts[levels[j]] * 3600 / 3.6e6 }
	whole, trimmed = math.Inf(1), math.Inf(1)
	v := make([]int, n)
	slots := make([]Slot, n)
	cost := func() float64 {
		var g float64
		for _, sl := range slots {
			g += sl.CarbonG
		}
		_, c := changes(slots, in.initial, in.cc)
		return g + c
	}
	for {
		var w float64
		for t, j := range v {
			w += wk(j)
			slots[t] = Slot{Scale: levels[j], Lower: levels[j], Fraction: 1, CarbonG: kwh(j) * in.ci[t]}
		}
		if e := w - in.work; e >= -1e-9*in.work {
			g := cost()
			whole = math.Min(whole, g)
			trimmed = math.Min(trimmed, g)
			for t, j := range v {
				if j == 0 || e <= 0 {
					continue
				}
				keep := slots[t]
				// Top step: Scale for f, then the next scale down.
				if dw := wk(j) - wk(j-1); dw > e {
					f := (dw - e) / dw
					slots[t] = Slot{Scale: levels[j], Lower: levels[j-1], Fraction: f,
						CarbonG: (kwh(j-1) + f*(kwh(j)-kwh(j-1))) * in.ci[t]}
					trimmed = math.Min(trimmed, cost())
				}
				// Run at Scale for f, then suspend.
				if wk(j) > e {
					f := (wk(j) - e) / wk(j)
					slots[t] = Slot{Scale: levels[j], Lower: 0, Fraction: f, CarbonG: f * kwh(j) * in.ci[t]}
					trimmed = math.Min(trimmed, cost())
				}
				slots[t] = keep
			}
		}
		if !nextVector(v, L) {
			return whole, trimmed
		}
	}
}

func randCCInstance(r *rand.Rand) ccInstance {
	n := 1 + r.IntN(6)
	levels := 1 + r.IntN(4)
	var c Curve
	if r.IntN(2) == 0 {
		c = randConcave(r, levels)
	} else {
		c = randCurve(r, levels)
	}
	minS := 1 + r.IntN(levels)
	maxS := minS + r.IntN(levels-minS+1)
	ci := randSeries(r, n).Values
	fits := float64(n) * c.WorkPerSecond[maxS] * 3600
	work := fits * (0.02 + 0.96*r.Float64())
	// Change costs from a tenth to ten times a typical slot's carbon.
	slotG := c.Watts[maxS] / 1000 * 250
	cc := slotG * math.Pow(10, -1+2*r.Float64())
	initial := 0
	if r.IntN(3) == 0 {
		initial = r.IntN(maxS + 1)
	}
	return ccInstance{ci: ci, c: c, minS: minS, maxS: maxS, work: work, cc: cc, initial: initial}
}

// checkCCPlan checks a plan's work, scales and accounting.
func checkCCPlan(t *testing.T, it int, in ccInstance, s Plan) {
	t.Helper()
	checkPlan(t, s, in.c, in.minS, in.maxS, in.work, len(in.ci))
	if _, c := changes(s.Slots, in.initial, in.cc); !near(c, s.ChangeCostG, 1e-9) {
		t.Fatalf("instance %d: change cost %v, recomputed %v", it, s.ChangeCostG, c)
	}
}

// TestChangeCostOracle: with change costs, on hundreds of random small
// instances, the plan never costs more (carbon + change cost) than the
// whole-scale optimum, never less than the trimmed optimum, and not more
// than 10% above it (DP also considers finishing part way through a slot,
// and trims both its whole-scale optimum and that plan). The old
// trim cut the slot with the dearest top step regardless of the
// suspend/resume it added, so most plans cost more than the whole-scale
// optimum DP had found (up to several times).
func TestChangeCostOracle(t *testing.T) {
	r := rand.New(rand.NewPCG(16, 17))
	const N = 400
	worstWhole, worstTrim, above := 0.0, 0.0, 0
	var excess, trimGaps []float64
	for it := range N {
		in := randCCInstance(r)
		whole, trimmed := ccOracle(in)
		for _, m := range []Method{Auto, DP} {
			s, err := Schedule(in.series(), in.c, in.work, in.series().End(), in.opts(m))
			if err != nil {
				t.Fatalf("instance %d: %v", it, err)
			}
			checkCCPlan(t, it, in, s)
			got := objective(s)
			if got < trimmed*(1-1e-9) {
				t.Fatalf("instance %d %v: plan %v below the trimmed optimum %v", it, m, got, trimmed)
			}
			worstTrim = max(worstTrim, got/trimmed-1)
			if got/trimmed-1 > 0.1 {
				t.Errorf("instance %d %v: plan %v more than 10%% above the trimmed optimum %v", it, m, got, trimmed)
			}
			trimGaps = append(trimGaps, got/trimmed-1)
			if g := got/whole - 1; g > 1e-9 {
				above++
				excess = append(excess, g)
				worstWhole = max(worstWhole, g)
				if g > 1e-3 { // DP quantisation (Resolution 2000) may cost a hair
					t.Errorf("instance %d %v: plan %v (carbon %v + changes %v) above the whole-scale optimum %v by %.3f%%",
						it, m, got, s.CarbonG, s.ChangeCostG, whole, 100*g)
				}
			}
		}
	}
	med := func(xs []float64) float64 {
		if len(xs) == 0 {
			return 0
		}
		slices.Sort(xs)
		return xs[len(xs)/2]
	}
	t.Logf("%d instances × {Auto, DP}: %d plans above the whole-scale optimum (median +%.2f%%, largest +%.4f%%); gap to the trimmed optimum median %.3f%%, largest %.3f%%",
		N, above, 100*med(excess), 100*worstWhole, 100*med(trimGaps), 100*worstTrim)
}

// TestChangeCostTable holds hand-checked small instances (the brute-force
// oracle agrees) where trimming decides the cost. A curve doing 1 or 2
// work units per second on 100 or 200 W: a slot at scale 2 under 200 g/kWh
// emits 40 g.
func TestChangeCostTable(t *testing.T) {
	c := Curve{WorkPerSecond: []float64{0, 1, 2}, Watts: []float64{0, 100, 200}}
	tests := []struct {
		name        string
		in          ccInstance
		whole, want float64 // whole-scale optimum; best plan (carbon + change cost); -1: the oracle's
	}{
		{
			// Scale 2 only, 1.5 slots of work, starting costs 2 × 25 g.
			// Whole: 2, 2 = 60 + 40 + 50 = 150 g. The old trim cut the
			// dearer first slot (half, then suspended) and paid a second
			// start: 30 + 40 + 100 = 170 g. Cutting the last slot: 60 + 20
			// + 50 = 130 g.
			name:  "cut the last slot",
			in:    ccInstance{ci: []float64{300, 200}, c: c, minS: 2, maxS: 2, work: 3 * 3600, cc: 25},
			whole: 150, want: 130,
		},
		{
			// Scales 1 and 2, 1.1 slots of work at scale 2, 100 g per
			// device changed. Whole: 1, 2 = 20 + 40 + 100 + 100 = 260 g.
			// The old trim cut slot 1 (ties to the earlier slot): 4 + 40 +
			// 100 + 200 (restart at 2) = 344 g. Cutting slot 2's top step
			// adds a shrink (+100 g). Running slot 2 at scale 2 for 0.6
			// and then suspending costs 20 + 24 + 200 = 244 g.
			name:  "end early instead of shrinking",
			in:    ccInstance{ci: []float64{200, 200}, c: c, minS: 1, maxS: 2, work: 1.1 * 7200, cc: 100},
			whole: 260, want: 244,
		},
		{
			name:  "no change cost",
			in:    ccInstance{ci: []float64{100, 300}, c: c, minS: 1, maxS: 2, work: 3 * 3600, cc: 0},
			whole: -1, want: -1,
		},
		{
			// A running job (initial scale 2) pays nothing to keep going.
			name:  "already running",
			in:    ccInstance{ci: []float64{300, 100, 100}, c: c, minS: 1, maxS: 2, work: 2.5 * 3600, cc: 40, initial: 2},
			whole: -1, want: -1,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			whole, trimmed := ccOracle(tc.in)
			if tc.want >= 0 && (!near(trimmed, tc.want, 1e-9) || !near(whole, tc.whole, 1e-9)) {
				t.Fatalf("oracle: whole %v, trimmed %v; by hand %v, %v", whole, trimmed, tc.whole, tc.want)
			}
			for _, m := range []Method{Auto, DP} {
				s, err := Schedule(tc.in.series(), tc.in.c, tc.in.work, tc.in.series().End(), tc.in.opts(m))
				if err != nil {
					t.Fatal(err)
				}
				checkCCPlan(t, 0, tc.in, s)
				if got := objective(s); !near(got, trimmed, 1e-6) || got > whole*(1+1e-9) {
					t.Errorf("%v: plan %v (carbon %v + changes %v, scales %v), want %v (whole-scale optimum %v)",
						m, got, s.CarbonG, s.ChangeCostG, s.Scales(), trimmed, whole)
				}
			}
		})
	}
}

// TestAutoReturnsTheBetterPlan: Auto computes the greedy plan first; when
// it cannot certify it and runs DP, it returns whichever of the two costs
// less (DP's quantised plan can be the worse one).
func TestAutoReturnsTheBetterPlan(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 22))
	var picked [3]int
	for it := range 300 {
		in := randCCInstance(r)
		if r.IntN(2) == 0 {
			in.cc = 0
		}
		s := in.series()
		auto, err := Schedule(s, in.c, in.work, s.End(), in.opts(Auto))
		if err != nil {
			t.Fatal(err)
		}
		gr, err := Schedule(s, in.c, in.work, s.End(), in.opts(Greedy))
		if err != nil {
			t.Fatal(err)
		}
		dp, err := Schedule(s, in.c, in.work, s.End(), in.opts(DP))
		if err != nil {
			t.Fatal(err)
		}
		best := min(objective(gr), objective(dp))
		if got := objective(auto); got > best*(1+1e-12) {
			t.Fatalf("instance %d: Auto %v (%v), greedy %v, DP %v", it, got, auto.Method, objective(gr), objective(dp))
		}
		picked[auto.Method]++
	}
	t.Logf("Auto picked greedy %d, DP %d times", picked[Greedy], picked[DP])
	// The case the issue names: a short job on a non-concave curve whose
	// quantised DP plan is worse than the greedy plan Auto already had.
	c := Curve{WorkPerSecond: []float64{0, 1, 10}, Watts: []float64{0, 10, 20}}
	s := Series{Start: t0, Step: time.Hour, Values: []float64{100, 100, 300, 300}, Unit: GPerKWh, Signal: Average, Zone: "Z"}
	for _, work := range []float64{3600 * 10.5, 3600 * 0.37, 3600 * 21.3} {
		for _, res := range []int{10, 50, 2000} {
			opts := ScheduleOptions{Resolution: res}
			auto, _ := Schedule(s, c, work, s.End(), opts)
			opts.Method = Greedy
			gr, _ := Schedule(s, c, work, s.End(), opts)
			opts.Method = DP
			dp, _ := Schedule(s, c, work, s.End(), opts)
			if auto.CarbonG > min(gr.CarbonG, dp.CarbonG)*(1+1e-12) {
				t.Errorf("work %v, resolution %d: Auto %v, greedy %v, DP %v", work, res, auto.CarbonG, gr.CarbonG, dp.CarbonG)
			}
		}
	}
}

// TestResolutionShortJob: the DP's work quantum follows Resolution even
// for a job much shorter than a full-scale slot (it was floored at 1/256
// of one, so Resolution had no effect there: this instance, a job of 12%
// of a full-scale slot on a non-concave curve, stayed 0.83% above the
// exact optimum at every Resolution), and a higher Resolution is at least
// as close to the exact optimum.
func TestResolutionShortJob(t *testing.T) {
	c := Curve{WorkPerSecond: []float64{0, 35.81545537821874, 118.5613369159842, 143.41547948944856, 309.98298889898365},
		Watts: []float64{0, 22.52911501126362, 81.10359329950901, 166.089417116252, 251.62392365694302}}
	s := hourly(244.14852628482512, 244.14852628482512, 463.3571326273087, 402.40317950703883, 315.4363088727775)
	work := 138046.87334776312
	exact := bruteForce(s.Values, c, 1, 4, work)
	for _, res := range []int{50, 500, 5000, 50000} {
		p, err := newProblem(s, c, work, s.End(), ScheduleOptions{Resolution: res, Method: DP})
		if err != nil {
			t.Fatal(err)
		}
		if _, q := p.quanta(1); q < res || q > res+1 {
			t.Errorf("Resolution %d: %d quanta", res, q)
		}
	}
	prev := math.Inf(1)
	var gaps []float64
	for _, res := range []int{20, 200, 2000, 20000} {
		got, err := Schedule(s, c, work, s.End(), ScheduleOptions{Resolution: res, Method: DP})
		if err != nil {
			t.Fatal(err)
		}
		checkPlan(t, got, c, 1, 4, work, len(s.Values))
		gap := got.CarbonG/exact - 1
		gaps = append(gaps, gap)
		if gap < -1e-9 || gap > prev+1e-12 {
			t.Errorf("Resolution %d: DP %v vs exact %v (gap %.4f%%, previous %.4f%%)", res, got.CarbonG, exact, 100*gap, 100*prev)
		}
		prev = gap
	}
	if gaps[2] > 1e-4 {
		t.Errorf("default Resolution: %.4f%% above the exact optimum", 100*gaps[2])
	}
	t.Logf("gaps to the exact optimum by Resolution 20, 200, 2000, 20000: %.4g", gaps)
}

// TestDefaultResolutionFitsTable: with the default Resolution, a job on a
// long horizon with a change cost gets fewer quanta rather than a DP table
// over its bound (a short job's quanta used to be capped by the 1/256
// floor, so honouring Resolution must not turn it into an error); an
// explicit Resolution is still refused when the table is too large.
func TestDefaultResolutionFitsTable(t *testing.T) {
	r := rand.New(rand.NewPCG(8, 9))
	c := randConcave(r, 6)
	s := randSeries(r, 1500)
	work := c.WorkPerSecond[6] * 3600 * 0.3
	opts := ScheduleOptions{ChangeCostG: 1, Method: DP}
	got, err := Schedule(s, c, work, s.End(), opts)
	if err != nil {
		t.Fatalf("default Resolution: %v", err)
	}
	checkPlan(t, got, c, 1, 6, work, len(s.Values))
	opts.Resolution = 2000
	if _, err := Schedule(s, c, work, s.End(), opts); !errors.Is(err, ErrInvalid) {
		t.Fatalf("explicit Resolution 2000 over 1500 slots × 7 scales: %v, want ErrInvalid", err)
	}
}

package goodput

import (
	"errors"
	"math"
	"reflect"
	"slices"
	"testing"
)

// tiered returns observations of truth on shapes of 1..4 nodes of 4 GPUs
// in each tier 1..len(factors) (tier 0 for one node), the multi-node sync
// of tier t stretched by factors[t−1], with ±2% deterministic noise.
func tiered(truth TierParams, locals []int) []TierObservation {
	var obs []TierObservation
	i := 0
	noise := func() float64 {
		i++
		return 1 + 0.02*math.Sin(float64(i)*12.9898)
	}
	add := func(tier, n, k, m int) {
		p := truth.At(tier)
		obs = append(obs, TierObservation{Tier: tier, Observation: Observation{Nodes: n, Replicas: k, Local: m,
			AccumSeconds: p.GradSeconds(m) * noise(), OptimSeconds: p.StepSeconds(n, k, m, 0) * noise()}})
	}
	for k := 1; k <= 4; k++ {
		for _, m := range locals {
			add(0, 1, k, m)
		}
	}
	for tier := 1; tier <= len(truth.Sync); tier++ {
		for n := 2; n <= 4; n++ {
			for _, k := range []int{n, 2 * n, 4 * n} {
				for _, m := range locals {
					add(tier, n, k, m)
				}
			}
		}
	}
	return obs
}

// TestFitTiersRecoversSync fits reports from a node, a rack, a block and
// the spine and recovers each tier's sync cost: the factors within 5% of
// the truth and every tier's step times within 3%, also on shapes larger
// than any reported.
func TestFitTiersRecoversSync(t *testing.T) {
	for _, form := range []Form{FormPollux, FormAllReduce} {
		t.Run(form.String(), func(t *testing.T) {
			truth := TierParams{Params: Params{Form: form, AlphaC: 0.05, BetaC: 0.002, AlphaR: 0.02, BetaR: 0.004,
				AlphaN: 0.3, BetaN: 0.02, Gamma: 1.8}, Sync: []float64{1, 2.5, 6}}
			if form == FormAllReduce {
				truth.AlphaT, truth.BetaT, truth.DeltaT = 0.2, 0.05, 0.03
			}
			obs := tiered(truth, []int{8, 32, 128})
			got, _, err := FitTiers(obs, TierOptions{Fit: FitOptions{Form: form}})
			if err != nil {
				t.Fatal(err)
			}
			if len(got.Sync) != 3 || got.Sync[0] != 1 {
				t.Fatalf("Sync = %v, want 3 factors, the first 1", got.Sync)
			}
			for i, f := range got.Sync {
				if math.Abs(f-truth.Sync[i])/truth.Sync[i] > 0.05 {
					t.Errorf("tier %d: factor %.4f, true %.4f", i+1, f, truth.Sync[i])
				}
			}
			for tier := 0; tier <= 3; tier++ {
				for _, s := range [][2]int{{1, 4}, {2, 8}, {4, 16}, {8, 32}} {
					if tier == 0 && s[0] > 1 || tier > 0 && s[0] == 1 {
						continue
					}
					want, pred := truth.At(tier).StepSeconds(s[0], s[1], 64, 0), got.At(tier).StepSeconds(s[0], s[1], 64, 0)
					if math.Abs(pred-want)/want > 0.03 {
						t.Errorf("tier %d shape %v: predicted %.4f s, true %.4f s", tier, s, pred, want)
					}
				}
			}
			// Untiered, the same data is one blurred multi-node term:
			// at least one tier is predicted far off.
			flat, _, err := Fit(untier(obs), FitOptions{Form: form})
			if err != nil {
				t.Fatal(err)
			}
			worst := 0.0
			for tier := 1; tier <= 3; tier++ {
				want, pred := truth.At(tier).StepSeconds(2, 8, 64, 0), flat.StepSeconds(2, 8, 64, 0)
				worst = max(worst, math.Abs(pred-want)/want)
			}
			if worst < 0.1 {
				t.Errorf("untiered fit within %.1f%% of every tier: the test data does not tell tiers apart", 100*worst)
			}
		})
	}
}

func untier(obs []TierObservation) []Observation {
	out := make([]Observation, len(obs))
	for i, o := range obs {
		out[i] = o.Observation
	}
	return out
}

// TestFitTiersOneTierIsFit: reports from one multi-node tier give Fit's
// parameters and result bit for bit, no factors, and At is Params at every
// tier; the Estimator's untiered model is the same whether the host
// reports tiers or not.
func TestFitTiersOneTierIsFit(t *testing.T) {
	var obs []TierObservation
	for _, o := range synthetic(testParams, 4, []int{8, 32, 128}) {
		tier := 0
		if o.Nodes > 1 {
			tier = 1
		}
		obs = append(obs, TierObservation{Observation: o, Tier: tier})
	}
	want, wantRes, err := Fit(untier(obs), FitOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tiers := range []int{0, 3} {
		got, res, err := FitTiers(obs, TierOptions{Tiers: tiers})
		if err != nil {
			t.Fatal(err)
		}
		if got.Params != want || !reflect.DeepEqual(res, wantRes) || got.Sync != nil {
			t.Fatalf("Tiers %d: FitTiers = %+v, %+v; Fit = %+v, %+v", tiers, got, res, want, wantRes)
		}
		for tier := range 6 {
			if got.At(tier) != want {
				t.Errorf("At(%d) = %+v, want %+v", tier, got.At(tier), want)
			}
		}
	}

	plain, err := NewEstimator(EstimatorConfig{Limits: testLimits})
	if err != nil {
		t.Fatal(err)
	}
	withTiers, err := NewEstimator(EstimatorConfig{Limits: testLimits})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range obs {
		if err := plain.Observe("t4", o.Observation); err != nil {
			t.Fatal(err)
		}
		if err := withTiers.ObserveTier("t4", o.Tier, o.Observation); err != nil {
			t.Fatal(err)
		}
	}
	a, _ := plain.Model("t4")
	b, _ := withTiers.Model("t4")
	tm, ok := withTiers.TierModel("t4")
	if !ok || a != b || tm.Model != a || tm.Sync != nil {
		t.Errorf("Model: plain %+v, tiered %+v, TierModel %+v", a, b, tm)
	}
}

// TestTierPrior: a tier never reported takes the nearest reported tier's
// factor scaled by the bandwidth ratio.
func TestTierPrior(t *testing.T) {
	var obs []TierObservation
	for _, o := range synthetic(testParams, 2, []int{32}) {
		tier := 0
		if o.Nodes > 1 {
			tier = 1
		}
		obs = append(obs, TierObservation{Observation: o, Tier: tier})
	}
	// tier 1 = NVL72 rack (900 GB/s), 2 = IB leaf (50), 3 = spine (unknown)
	got, _, err := FitTiers(obs, TierOptions{Bandwidths: []float64{0, 900, 50, 0}})
	if err != nil {
		t.Fatal(err)
	}
	if want := []float64{1, 18, 18}; !slices.Equal(got.Sync, want) {
		t.Errorf("Sync = %v, want %v", got.Sync, want)
	}
	if g1, g2 := got.At(1).StepSeconds(2, 8, 32, 0), got.At(2).StepSeconds(2, 8, 32, 0); !(g2 > g1) {
		t.Errorf("step across the leaf %.4f s, inside the rack %.4f s: want slower", g2, g1)
	}
	e, err := NewEstimator(EstimatorConfig{Limits: testLimits, TierBandwidths: []float64{0, 900, 50, 0}})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Observe("t4", obs[0].Observation); err != nil {
		t.Fatal(err)
	}
	if m, ok := e.TierModel("t4"); !ok || !slices.Equal(m.Sync, []float64{1, 18, 18}) {
		t.Errorf("TierModel without tiered reports: %v, %+v", ok, m)
	}
}

func TestTierErrors(t *testing.T) {
	o := Observation{Nodes: 2, Replicas: 4, Local: 8, AccumSeconds: 0.1, OptimSeconds: 0.2}
	one := Observation{Nodes: 1, Replicas: 1, Local: 8, AccumSeconds: 0.1, OptimSeconds: 0.1}
	for _, bad := range []TierObservation{{Observation: o, Tier: 0}, {Observation: o, Tier: -1}, {Observation: one, Tier: 1}} {
		if _, _, err := FitTiers([]TierObservation{bad}, TierOptions{}); !errors.Is(err, ErrInvalidObservation) {
			t.Errorf("FitTiers(%+v): %v, want ErrInvalidObservation", bad, err)
		}
	}
	if _, _, err := FitTiers(nil, TierOptions{}); !errors.Is(err, ErrNoObservations) {
		t.Errorf("no observations: %v", err)
	}
	for _, bw := range [][]float64{{0, -1}, {math.NaN()}, {math.Inf(1)}} {
		if _, _, err := FitTiers([]TierObservation{{Observation: o, Tier: 1}}, TierOptions{Bandwidths: bw}); !errors.Is(err, ErrInvalidOptions) {
			t.Errorf("Bandwidths %v: %v, want ErrInvalidOptions", bw, err)
		}
		if _, err := NewEstimator(EstimatorConfig{Limits: testLimits, TierBandwidths: bw}); !errors.Is(err, ErrInvalidOptions) {
			t.Errorf("EstimatorConfig.TierBandwidths %v: %v, want ErrInvalidOptions", bw, err)
		}
	}
	e, _ := NewEstimator(EstimatorConfig{Limits: testLimits})
	if err := e.ObserveTier("t4", 0, o); !errors.Is(err, ErrInvalidObservation) {
		t.Errorf("ObserveTier tier 0 on 2 nodes: %v", err)
	}
	if len(e.Observations("t4")) != 0 {
		t.Error("a rejected tiered observation was recorded")
	}
	if err := (TierParams{Params: testParams, Sync: []float64{1, 0}}).Validate(); !errors.Is(err, ErrInvalidParams) {
		t.Errorf("factor 0: %v", err)
	}
}

// TestFitTiersPolluxProfiles: on Pollux's measured placements of each of
// its six models (T4 nodes), the measured multi-node steps are tier 1 and
// a slower tier 2 is the same steps with their measured sync time tripled.
// One fitted factor for tier 2 predicts its steps about as well as a
// separate seven-parameter Fit on tier 2's data alone: median error at
// most 1.5× that fit's plus 1 point, and the factor is above 1.
func TestFitTiersPolluxProfiles(t *testing.T) {
	for _, model := range models {
		t.Run(model, func(t *testing.T) {
			obs := aggregateTiers(readProfile(t, model, "placements.csv"))
			if len(obs) == 0 {
				t.Skip("no multi-node rows")
			}
			got, _, err := FitTiers(obs, TierOptions{})
			if err != nil {
				t.Fatal(err)
			}
			var tier2 []Observation
			for _, o := range obs {
				if o.Tier == 2 || o.Tier == 0 {
					tier2 = append(tier2, o.Observation)
				}
			}
			alone, _, err := Fit(tier2, FitOptions{})
			if err != nil {
				t.Fatal(err)
			}
			var eTier, eAlone []float64
			for _, o := range obs {
				if o.Tier != 2 {
					continue
				}
				eTier = append(eTier, math.Abs(got.At(2).StepSeconds(o.Nodes, o.Replicas, o.Local, 0)/o.OptimSeconds-1))
				eAlone = append(eAlone, math.Abs(alone.StepSeconds(o.Nodes, o.Replicas, o.Local, 0)/o.OptimSeconds-1))
			}
			mt, ma := median(eTier), median(eAlone)
			t.Logf("%s: tier-2 factor %.2f, median step error %.1f%% (separate fit %.1f%%)", model, got.Factor(2), 100*mt, 100*ma)
			if got.Factor(2) <= 1 || mt > 1.5*ma+0.01 {
				t.Errorf("factor %.3f, median error %.4f vs separate fit %.4f", got.Factor(2), mt, ma)
			}
		})
	}
}

// aggregateTiers averages a profile's rows per shape as aggregate does;
// one-node rows are tier 0, multi-node rows tier 1 as measured and tier 2
// with their sync time tripled.
func aggregateTiers(rows []ProfileRow) []TierObservation {
	var out []TierObservation
	multi := false
	for _, o := range aggregate(rows) {
		if o.Nodes == 1 {
			out = append(out, TierObservation{Observation: o})
			continue
		}
		multi = true
		out = append(out, TierObservation{Observation: o, Tier: 1})
		slow := o
		slow.OptimSeconds = o.AccumSeconds + 3*(o.OptimSeconds-o.AccumSeconds)
		out = append(out, TierObservation{Observation: slow, Tier: 2})
	}
	if !multi {
		return nil
	}
	return out
}

// TestEstimatorTierModelOnline: reports from four tiers through
// ObserveTier give TierModel's factors within 5% of the truth (refitted
// lazily as reports arrive), while Model stays what Observe alone gives.
func TestEstimatorTierModelOnline(t *testing.T) {
	truth := TierParams{Params: Params{Form: FormPollux, AlphaC: 0.05, BetaC: 0.002, AlphaR: 0.02, BetaR: 0.004,
		AlphaN: 0.3, BetaN: 0.02, Gamma: 1.8}, Sync: []float64{1, 2.5, 6}}
	obs := tiered(truth, []int{8, 32, 128})
	cfg := EstimatorConfig{Limits: testLimits, Fit: FitOptions{Form: FormPollux}}
	e, err := NewEstimator(cfg)
	if err != nil {
		t.Fatal(err)
	}
	plain, err := NewEstimator(cfg)
	if err != nil {
		t.Fatal(err)
	}
	half := len(obs) / 2
	for i, o := range obs {
		if err := e.ObserveTier("t4", o.Tier, o.Observation); err != nil {
			t.Fatal(err)
		}
		if err := plain.Observe("t4", o.Observation); err != nil {
			t.Fatal(err)
		}
		if i == half {
			if _, ok := e.TierModel("t4"); !ok { // a fit on part of the data, warm start for the next
				t.Fatal("no TierModel")
			}
		}
	}
	m, ok := e.TierModel("t4")
	if !ok || len(m.Sync) != 3 {
		t.Fatalf("TierModel = %+v, %v", m, ok)
	}
	for i, f := range m.Sync {
		if math.Abs(f-truth.Sync[i])/truth.Sync[i] > 0.05 {
			t.Errorf("tier %d: factor %.4f, true %.4f", i+1, f, truth.Sync[i])
		}
	}
	if got, want := m.At(3).StepSeconds(4, 16, 64, 0), truth.At(3).StepSeconds(4, 16, 64, 0); math.Abs(got/want-1) > 0.03 {
		t.Errorf("spine step %.4f s, true %.4f s", got, want)
	}
	a, _ := plain.Model("t4")
	b, _ := e.Model("t4")
	if a != b {
		t.Errorf("Model with tiered reports %+v, without %+v", b, a)
	}
}

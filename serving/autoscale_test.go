package serving_test

import (
	"errors"
	"math"
	"testing"
	"time"

	"github.com/goodsched/goodsched/serving"
)

var svc = serving.Service{
	Name: "chat", Model: "llama2-70b", GPUType: "h100-80gb", GPUsPerReplica: 4,
	SLO: serving.SLO{TTFTP90: time.Second, TPOTP90: 50 * time.Millisecond}, Startup: time.Minute,
}

func TestServiceValidate(t *testing.T) {
	if err := svc.Validate(); err != nil {
		t.Fatal(err)
	}
	bad := map[string]func(s *serving.Service){
		"ttft zero":     func(s *serving.Service) { s.SLO.TTFTP90 = 0 },
		"tpot zero":     func(s *serving.Service) { s.SLO.TPOTP90 = 0 },
		"tpot neg":      func(s *serving.Service) { s.SLO.TPOTP90 = -time.Millisecond },
		"no model":      func(s *serving.Service) { s.Model = "" },
		"bad type":      func(s *serving.Service) { s.GPUType = "H100 80GB" },
		"startup neg":   func(s *serving.Service) { s.Startup = -1 },
		"gpus neg":      func(s *serving.Service) { s.GPUsPerReplica = -1 },
		"max below min": func(s *serving.Service) { s.MinReplicas, s.MaxReplicas = 4, 2 },
	}
	for name, mutate := range bad {
		s := svc
		mutate(&s)
		if err := s.Validate(); !errors.Is(err, serving.ErrInvalidService) {
			t.Errorf("%s: err %v", name, err)
		}
	}
	if got := (serving.Service{MinReplicas: 2, MaxReplicas: 5}).Clamp(9); got != 5 {
		t.Errorf("clamp 9 → %d", got)
	}
	if got := (serving.Service{}).Clamp(0); got != 1 {
		t.Errorf("clamp 0 → %d (no scale to zero)", got)
	}
}

// splitwiseH100 is the Splitwise Llama-2-70B TP4 H100 table (ms), the
// oracle of the profile fit (the same numbers as serving/sim's ground truth).
var (
	prefillMs = [][2]float64{{128, 48.9}, {256, 54.3}, {512, 61.0}, {1024, 105.0}, {2048, 199.0}, {4096, 454.2}, {8192, 912.7}, {16384, 1727.9}}
	decodeMs  = [][2]float64{{1, 29.4}, {2, 30.0}, {4, 30.0}, {8, 31.4}, {16, 32.8}, {32, 36.9}, {64, 52.0}}
)

func ms(v float64) time.Duration { return time.Duration(v * float64(time.Millisecond)) }

func splitwiseProfile(t testing.TB) *serving.Profile {
	p := serving.NewProfile()
	for _, pt := range prefillMs {
		if err := p.Observe(serving.Report{Phase: serving.Prefill, Tokens: int(pt[0]), Duration: ms(pt[1]), KVCapacityTokens: 396000}); err != nil {
			t.Fatal(err)
		}
	}
	for _, pt := range decodeMs {
		for _, ctx := range []int{512, 2048} {
			if err := p.Observe(serving.Report{Phase: serving.Decode, Batch: int(pt[0]), ContextTokens: ctx, Duration: ms(pt[1])}); err != nil {
				t.Fatal(err)
			}
		}
	}
	return p
}

func TestProfileReproducesMeasurements(t *testing.T) {
	p := splitwiseProfile(t)
	for _, pt := range prefillMs {
		got, err := p.Prefill(int(pt[0]))
		if err != nil || math.Abs(got.Seconds()*1000-pt[1]) > 0.01 {
			t.Errorf("prefill %v: %v %v, want %v ms", pt[0], got, err, pt[1])
		}
	}
	for _, pt := range decodeMs {
		got, err := p.Decode(int(pt[0]), 1000)
		if err != nil || math.Abs(got.Seconds()*1000-pt[1]) > 0.01 {
			t.Errorf("decode %v: %v %v, want %v ms", pt[0], got, err, pt[1])
		}
	}
	// Between points: linear; beyond: the last slope.
	if got, _ := p.Prefill(1536); math.Abs(got.Seconds()*1000-152) > 0.01 {
		t.Errorf("prefill 1536: %v, want 152 ms", got)
	}
	if got, _ := p.Decode(96, 0); math.Abs(got.Seconds()*1000-(52+15.1/32*32)) > 0.01 {
		t.Errorf("decode 96: %v, want %v ms", got, 52+15.1)
	}
	if got, _ := p.Prefill(64); math.Abs(got.Seconds()*1000-48.9) > 0.01 {
		t.Errorf("prefill 64: %v, want the floor 48.9 ms", got)
	}
	if p.KVCapacityTokens() != 396000 {
		t.Errorf("kv %d", p.KVCapacityTokens())
	}
}

// TestProfileLearnsContext: reports whose step time grows with context give
// a profile that predicts that growth; noise averages out.
func TestProfileLearnsContext(t *testing.T) {
	p := serving.NewProfile()
	truth := func(b, ctx int) float64 { return 0.020 + 0.0004*float64(b) + 2e-6*float64(ctx) }
	for i := range 400 {
		b := 1 + i%64
		ctx := 200 + (i*37)%3800
		noise := 1 + 0.02*math.Sin(float64(i)*1.7)
		_ = p.Observe(serving.Report{Phase: serving.Decode, Batch: b, ContextTokens: ctx, Duration: time.Duration(truth(b, ctx) * noise * 1e9)})
	}
	for _, c := range [][2]int{{8, 500}, {8, 3500}, {40, 1000}, {40, 3000}} {
		got, err := p.Decode(c[0], c[1])
		want := truth(c[0], c[1])
		if err != nil || math.Abs(got.Seconds()-want)/want > 0.05 {
			t.Errorf("decode(%d, %d) = %v, want %.2f ms ±5%%", c[0], c[1], got, want*1000)
		}
	}
}

func TestProfileErrors(t *testing.T) {
	p := serving.NewProfile()
	if _, err := p.Prefill(100); !errors.Is(err, serving.ErrNoProfile) {
		t.Errorf("empty prefill: %v", err)
	}
	if _, err := p.Decode(1, 1); !errors.Is(err, serving.ErrNoProfile) {
		t.Errorf("empty decode: %v", err)
	}
	for _, r := range []serving.Report{
		{Phase: serving.Prefill, Tokens: 0, Duration: time.Millisecond},
		{Phase: serving.Decode, Batch: 0, Duration: time.Millisecond},
		{Phase: serving.Decode, Batch: 1, Duration: -1},
		{Phase: 9, Tokens: 1},
	} {
		if err := p.Observe(r); !errors.Is(err, serving.ErrInvalidReport) {
			t.Errorf("%+v: %v", r, err)
		}
	}
	if p.Ready() {
		t.Error("bad reports made the profile ready")
	}
	ps := serving.Profiles{{Model: "llama2-70b", Type: "h100-80gb"}: splitwiseProfile(t)}
	if _, err := ps.Lookup("llama2-70b", "h100-80gb"); err != nil {
		t.Error(err)
	}
	_, err := ps.Lookup("llama2-70b", "a100-80gb")
	if !errors.Is(err, serving.ErrNoProfile) || !contains(err.Error(), "a100-80gb") {
		t.Errorf("no point for a type: %v", err)
	}
}

func contains(s, sub string) bool {
	return len(s) >= len(sub) && (s == sub || len(sub) == 0 || indexOf(s, sub) >= 0)
}

func indexOf(s, sub string) int {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return i
		}
	}
	return -1
}

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func tick(at time.Duration, ready int, conc float64) serving.Metrics {
	return serving.Metrics{Now: t0.Add(at), Interval: 2 * time.Second, Ready: ready, Concurrency: conc}
}

// TestKPARules walks Knative's rules with target 10 × 0.7 = 7 per pod.
func TestKPARules(t *testing.T) {
	k := &serving.KPA{Service: serving.Service{Model: "m", SLO: svc.SLO}, TargetConcurrency: 10}
	steps := []struct {
		at    time.Duration
		ready int
		conc  float64
		want  int
		why   string
	}{
		// 60 s of 35 in flight: ⌈35/7⌉ = 5.
		{2 * time.Second, 5, 35, 5, "stable ⌈35/7⌉"},
		{60 * time.Second, 5, 35, 5, "steady"},
		// A burst: the 6 s panic window holds the ticks at 58, 60 (35) and
		// 62 (140): 70 → 10 pods = 2 × ready: panic; stable
		// (29 × 35 + 140)/30 = 38.5 → 6; max(6, 10) = 10.
		{62 * time.Second, 5, 140, 10, "panic at 200%"},
		// The load falls back; still panicking: never below the panic max.
		{64 * time.Second, 10, 35, 10, "no scale-down in panic"},
		{120 * time.Second, 10, 35, 10, "panic lasts a stable window after the last trigger"},
		// 62 + 60 = 122 s: the first tick after it leaves panic; the stable
		// window (64, 124] is all 35 again.
		{124 * time.Second, 10, 35, 5, "un-panic; stable ⌈35/7⌉ = 5 ≥ ⌊10/2⌋"},
	}
	last, ready, conc := time.Duration(0), 5, 35.0
	for _, s := range steps {
		// The ticks in between keep the previous level.
		for at := last + 2*time.Second; at < s.at; at += 2 * time.Second {
			if _, err := k.Desired(tick(at, ready, conc)); err != nil {
				t.Fatal(err)
			}
		}
		last, ready, conc = s.at, s.ready, s.conc
		got, err := k.Desired(tick(s.at, s.ready, s.conc))
		if err != nil {
			t.Fatal(err)
		}
		if got != s.want {
			t.Errorf("t=%v (%s): %d, want %d", s.at, s.why, got, s.want)
		}
	}
}

// TestKPAScaleDownRate: at most halving per decision (max-scale-down-rate 2).
func TestKPAScaleDownRate(t *testing.T) {
	k := &serving.KPA{Service: serving.Service{Model: "m", SLO: svc.SLO}, TargetConcurrency: 10}
	got, _ := k.Desired(tick(2*time.Second, 20, 1))
	if got != 10 {
		t.Errorf("20 ready, 1 in flight: %d, want ⌊20/2⌋ = 10", got)
	}
	if _, err := k.Desired(serving.Metrics{Now: t0, Interval: 0}); !errors.Is(err, serving.ErrInvalidReport) {
		t.Errorf("zero interval: %v", err)
	}
	if _, err := k.Desired(serving.Metrics{Now: t0, Interval: time.Second, Concurrency: math.NaN()}); !errors.Is(err, serving.ErrInvalidReport) {
		t.Errorf("NaN concurrency: %v", err)
	}
}

// TestDynamoFormula checks one adjustment against the planner's formulas
// computed by hand on the Splitwise profile.
func TestDynamoFormula(t *testing.T) {
	p := splitwiseProfile(t)
	d := &serving.Dynamo{Service: svc, Profile: p}
	// 60 s of 10 req/s, ISL 1024, OSL 200, TTFT exactly the profile's
	// (correction 1), ITL 36.9 ms at 32 in flight per replica (correction 1).
	var got int
	for i := 1; i <= 30; i++ {
		m := serving.Metrics{Now: t0.Add(time.Duration(2*i) * time.Second), Interval: 2 * time.Second, Ready: 4,
			Arrivals: 20, PromptTokens: 20 * 1024, OutputTokens: 20 * 200, Concurrency: 128,
			FirstTokens: 20, TTFTSum: 20 * ms(105), Finished: 20, TPOTSum: 20 * ms(36.9)}
		var err error
		if got, err = d.Desired(m); err != nil {
			t.Fatal(err)
		}
	}
	// Prefill share: 10·1024 / (1024/0.105) = 1.05. Decode: the largest
	// batch with step ≤ 50 ms at context 1124: 32 + (50−36.9)/(15.1/32) →
	// 59 (51.5 ms is 60's); share 10·200 / (59/0.04984) = 1.69. ⌈2.74⌉ = 3.
	if got != 3 {
		t.Errorf("desired %d, want 3", got)
	}
	if _, err := (&serving.Dynamo{Service: svc}).Desired(tick(2*time.Second, 1, 0)); !errors.Is(err, serving.ErrNoProfile) {
		t.Errorf("no profile: %v", err)
	}
}

// TestPredictiveProvisionsAhead: on a steady ramp, the predictive
// autoscaler asks at time t for what the load at t + start-up needs,
// while a copy told the start-up is instant asks for less.
func TestPredictiveProvisionsAhead(t *testing.T) {
	run := func(startup time.Duration) int {
		s := svc
		s.Startup = startup
		a := &serving.Predictive{Service: s, Profile: splitwiseProfile(t)}
		var got int
		for i := 1; i <= 300; i++ { // 10 minutes, rate 2 → 12 req/s
			rate := 2 + 10*float64(i)/300
			n := int(rate * 2)
			m := serving.Metrics{Now: t0.Add(time.Duration(2*i) * time.Second), Interval: 2 * time.Second, Ready: 8,
				Arrivals: n, PromptTokens: n * 1000, OutputTokens: n * 200}
			var err error
			if got, err = a.Desired(m); err != nil {
				t.Fatal(err)
			}
		}
		return got
	}
	now, ahead := run(time.Second), run(5*time.Minute)
	if ahead <= now {
		t.Errorf("5 min start-up asks %d, instant start-up %d: want more ahead of the lag", ahead, now)
	}
}

// TestPredictiveSeasonality: with two periods of a daily-like cycle in the
// history, the forecast sees the coming peak before the trend does.
func TestPredictiveSeasonality(t *testing.T) {
	run := func(season time.Duration) int {
		s := svc
		s.Startup = 10 * time.Minute
		a := &serving.Predictive{Service: s, Profile: splitwiseProfile(t), Season: season, Bucket: time.Minute}
		period := 60 // buckets of one minute: a one-hour "season"
		var got int
		// 2 periods + 40 minutes; the rate peaks at minute 50 of each period.
		for i := 1; i <= (2*period+40)*30; i++ {
			minute := float64(i) / 30
			phase := math.Mod(minute, float64(period)) / float64(period)
			rate := 6 + 5*math.Cos(2*math.Pi*(phase-50.0/60))
			n := int(rate*2 + 0.5)
			m := serving.Metrics{Now: t0.Add(time.Duration(2*i) * time.Second), Interval: 2 * time.Second, Ready: 8,
				Arrivals: n, PromptTokens: n * 1000, OutputTokens: n * 200}
			var err error
			if got, err = a.Desired(m); err != nil {
				t.Fatal(err)
			}
		}
		return got
	}
	seasonal, plain := run(time.Hour), run(24*time.Hour)
	if seasonal <= plain {
		t.Errorf("at minute 40 of the cycle, seasonal forecast asks %d, without %d: want more ahead of the minute-50 peak", seasonal, plain)
	}
}

// FuzzProfile: no Report sequence makes a Profile panic or predict a
// negative time; bad reports are ErrInvalidReport.
func FuzzProfile(f *testing.F) {
	f.Add(1, 512, 1, 100, int64(61e6), 2, 8, 1000, int64(31e6))
	f.Add(1, 0, 0, 0, int64(-1), 9, -1, -5, int64(0))
	f.Fuzz(func(t *testing.T, ph1, size1, batch1, ctx1 int, d1 int64, ph2, size2, ctx2 int, d2 int64) {
		p := serving.NewProfile()
		for _, r := range []serving.Report{
			{Phase: serving.Phase(ph1), Tokens: size1, Batch: batch1, ContextTokens: ctx1, Duration: time.Duration(d1)},
			{Phase: serving.Phase(ph2), Tokens: size2, Batch: size2, ContextTokens: ctx2, Duration: time.Duration(d2)},
		} {
			if err := p.Observe(r); err != nil && !errors.Is(err, serving.ErrInvalidReport) {
				t.Fatalf("error %v", err)
			}
		}
		for _, x := range []int{-5, 0, 1, 100, 1 << 20} {
			if d, err := p.Prefill(x); err == nil && d < 0 {
				t.Fatalf("prefill(%d) = %v", x, d)
			}
			if d, err := p.Decode(x, x); err == nil && d < 0 {
				t.Fatalf("decode(%d) = %v", x, d)
			}
		}
	})
}

// FuzzAutoscalersMetrics: whatever Metrics arrive, every autoscaler either
// returns ErrInvalidReport or a count within the service's bounds.
func FuzzAutoscalersMetrics(f *testing.F) {
	f.Add(int64(2e9), 4, 1, 20, 20000, 4000, 30.0, 0.5, 20, int64(4e9), 20, int64(8e8))
	f.Add(int64(0), -1, 0, 0, 0, 0, math.NaN(), 0.0, 0, int64(-1), 0, int64(0))
	f.Fuzz(func(t *testing.T, interval int64, ready, starting, arrivals, prompt, output int, conc, kv float64, first int, ttft int64, finished int, tpot int64) {
		s := svc
		s.MaxReplicas = 50
		p := splitwiseProfile(t)
		for _, a := range []serving.Autoscaler{&serving.KPA{Service: s}, &serving.Dynamo{Service: s, Profile: p}, &serving.Predictive{Service: s, Profile: p}} {
			for i := 1; i <= 40; i++ {
				m := serving.Metrics{Now: t0.Add(time.Duration(i) * time.Duration(max(interval, 1))), Interval: time.Duration(interval),
					Ready: ready, Starting: starting, Arrivals: arrivals, PromptTokens: prompt, OutputTokens: output,
					Concurrency: conc, KVUsage: kv, FirstTokens: first, TTFTSum: time.Duration(ttft), TTFTP90: time.Duration(ttft),
					Finished: finished, TPOTSum: time.Duration(tpot), TPOTP90: time.Duration(tpot)}
				n, err := a.Desired(m)
				if err != nil {
					if !errors.Is(err, serving.ErrInvalidReport) {
						t.Fatalf("%s: %v", a.Name(), err)
					}
					continue
				}
				if n < 1 || n > 50 {
					t.Fatalf("%s: %d replicas outside [1, 50]", a.Name(), n)
				}
			}
		}
	})
}

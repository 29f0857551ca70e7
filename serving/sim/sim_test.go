package sim_test

import (
	"context"
	"errors"
	"math"
	"os"
	"testing"
	"time"

	"github.com/goodsched/goodsched/serving"
	"github.com/goodsched/goodsched/serving/sim"
)

var svc = serving.Service{
	Name: "chat", Model: "llama2-70b", GPUType: "h100-80gb", GPUsPerReplica: 4,
	SLO: serving.SLO{TTFTP90: time.Second, TPOTP90: 50 * time.Millisecond}, Startup: time.Minute,
}

func near(a, b time.Duration) bool { return (a - b).Abs() <= time.Microsecond }

// TestOneRequestExact: alone on one replica, TTFT is the engine's prefill
// time and TPOT its batch-1 decode step, exactly (the table is the oracle:
// Splitwise's 512-token prefill, 61.0 ms, and batch-1 step, 29.4 ms).
func TestOneRequestExact(t *testing.T) {
	e := sim.Llama2_70B_H100()
	tr := serving.Trace{Requests: []serving.Request{{Arrival: 10 * time.Second, PromptTokens: 512, OutputTokens: 11}}}
	res, err := sim.Run(context.Background(), sim.Config{Trace: tr, Service: svc, Engine: e, InitialReplicas: 1})
	if err != nil {
		t.Fatal(err)
	}
	w := res.Windows[0]
	if !near(w.TTFTP90, 61*time.Millisecond) || !near(w.TPOTP90, 29400*time.Microsecond) {
		t.Errorf("ttft %v tpot %v, want 61ms and 29.4ms", w.TTFTP90, w.TPOTP90)
	}
	// One replica of 4 GPUs held for the one-minute window.
	if math.Abs(res.GPUHours-4.0/60) > 1e-9 || res.SLOAttainment != 1 {
		t.Errorf("gpu-hours %v attainment %v", res.GPUHours, res.SLOAttainment)
	}
}

// TestBatchingAndQueueing: an iteration starts as soon as there is work,
// so of two requests arriving together the first is prefilled alone
// (512 tokens: 61 ms); the second waits and shares the next prefill with a
// third that arrived meanwhile (640 tokens: 61 + 44·128/512 = 72 ms, ending
// at 133 ms); then all three decode as a batch (30 ms), the third ends, and
// the pair takes one more step (30 ms, ending at 193 ms).
func TestBatchingAndQueueing(t *testing.T) {
	e := sim.Llama2_70B_H100()
	tr := serving.Trace{Requests: []serving.Request{
		{Arrival: 0, PromptTokens: 512, OutputTokens: 3},
		{Arrival: 0, PromptTokens: 512, OutputTokens: 3},
		{Arrival: 50 * time.Millisecond, PromptTokens: 128, OutputTokens: 2},
	}}
	res, err := sim.Run(context.Background(), sim.Config{Trace: tr, Service: svc, Engine: e, InitialReplicas: 1})
	if err != nil {
		t.Fatal(err)
	}
	// TTFTs 61, 133 and 83 ms: p90 (nearest rank of 3) = 133 ms. TPOTs:
	// (193 − 61)/2 = 66, (193 − 133)/2 = 30 and 163 − 133 = 30 ms: p90 = 66 ms.
	w := res.Windows[0]
	if !near(w.TTFTP90, 133*time.Millisecond) {
		t.Errorf("ttft p90 %v, want 133ms", w.TTFTP90)
	}
	if !near(w.TPOTP90, 66*time.Millisecond) {
		t.Errorf("tpot p90 %v, want 66ms", w.TPOTP90)
	}
	if w.Met {
		t.Error("66 ms TPOT met a 50 ms SLO")
	}
}

type fixed struct{ n int }

func (f fixed) Name() string                         { return "fixed" }
func (f fixed) Desired(serving.Metrics) (int, error) { return f.n, nil }

// TestStartupDelayAndGPUHours: an autoscaler that asks for 3 replicas at
// the first tick gets them a start-up later; GPUs are held from the ask.
func TestStartupDelayAndGPUHours(t *testing.T) {
	e := sim.Llama2_70B_H100()
	var reqs []serving.Request
	for i := range 300 {
		reqs = append(reqs, serving.Request{Arrival: time.Duration(i) * 200 * time.Millisecond, PromptTokens: 256, OutputTokens: 20})
	}
	res, err := sim.Run(context.Background(), sim.Config{Trace: serving.Trace{Requests: reqs}, Service: svc, Engine: e,
		InitialReplicas: 1, Autoscaler: fixed{3}})
	if err != nil {
		t.Fatal(err)
	}
	// 1 replica for 60 s, 2 more from the 2 s tick: (60 + 2·58) s × 4 GPUs.
	want := (60.0 + 2*58.0) * 4 / 3600
	if math.Abs(res.GPUHours-want) > 1e-6 {
		t.Errorf("gpu-hours %v, want %v", res.GPUHours, want)
	}
	if res.PeakReplicas != 3 || res.Decisions != 30 {
		t.Errorf("peak %d decisions %d", res.PeakReplicas, res.Decisions)
	}
	// The new replicas are not ready within the minute: mean ready is 1.
	if w := res.Windows[0]; math.Abs(w.Ready-1) > 1e-9 || math.Abs(w.Replicas-(60+2*58)/60.0) > 1e-9 {
		t.Errorf("ready %v held %v", w.Ready, w.Replicas)
	}
}

func TestRunErrors(t *testing.T) {
	e := sim.Llama2_70B_H100()
	bad := serving.Trace{Requests: []serving.Request{{Arrival: time.Second, PromptTokens: 5, OutputTokens: 5}, {Arrival: 0, PromptTokens: 5, OutputTokens: 5}}}
	_, err := sim.Run(context.Background(), sim.Config{Trace: bad, Service: svc, Engine: e})
	var re *serving.RowError
	if !errors.As(err, &re) || re.Line != 2 || !errors.Is(err, serving.ErrInvalidTrace) {
		t.Errorf("backwards trace: %v", err)
	}
	ok := serving.Trace{Requests: []serving.Request{{PromptTokens: 5, OutputTokens: 5}}}
	s := svc
	s.SLO.TPOTP90 = 0
	if _, err := sim.Run(context.Background(), sim.Config{Trace: ok, Service: s, Engine: e}); !errors.Is(err, serving.ErrInvalidService) {
		t.Errorf("SLO 0: %v", err)
	}
	if _, err := sim.Run(context.Background(), sim.Config{Trace: ok, Service: svc}); !errors.Is(err, sim.ErrInvalidConfig) {
		t.Errorf("no engine: %v", err)
	}
	if _, err := sim.Run(context.Background(), sim.Config{Trace: ok, Service: svc, Engine: e, Tick: -1}); !errors.Is(err, sim.ErrInvalidConfig) {
		t.Errorf("negative tick: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := sim.Run(ctx, sim.Config{Trace: ok, Service: svc, Engine: e}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
}

func readHead(t *testing.T) serving.Trace {
	t.Helper()
	f, err := os.Open("../testdata/azure_conv_head300.csv")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tr, err := serving.ReadAzureTrace(f)
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

// TestConservationOnRealTrace: every request of a real trace slice gets a
// first token no sooner than its own prefill alone and a TPOT no better
// than a batch of one; runs are deterministic; GPU time of a static fleet
// is replicas × GPUs × windows.
func TestConservationOnRealTrace(t *testing.T) {
	tr, err := readHead(t).Scale(3, 1)
	if err != nil {
		t.Fatal(err)
	}
	e := sim.Llama2_70B_H100()
	cfg := sim.Config{Trace: tr, Service: svc, Engine: e, InitialReplicas: 2}
	a, err := sim.Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := sim.Run(context.Background(), cfg)
	if a.GPUHours != b.GPUHours || a.SLOAttainment != b.SLOAttainment || len(a.Windows) != len(b.Windows) {
		t.Fatal("two runs differ")
	}
	for i := range a.Windows {
		if a.Windows[i] != b.Windows[i] {
			t.Fatalf("window %d differs: %+v vs %+v", i, a.Windows[i], b.Windows[i])
		}
		if a.Windows[i].TTFTP90 < e.Prefill(1) || a.Windows[i].TPOTP90 < e.Decode(1, 0) {
			t.Errorf("window %d faster than the engine: %+v", i, a.Windows[i])
		}
	}
	n := 0
	for _, w := range a.Windows {
		n += w.Requests
	}
	if n != len(tr.Requests) || a.Requests != n {
		t.Errorf("%d requests in windows, %d replayed", n, len(tr.Requests))
	}
	minutes := float64(int(tr.Duration()/time.Minute) + 1)
	if want := 2 * 4 * minutes / 60; math.Abs(a.GPUHours-want) > 1e-6 {
		t.Errorf("gpu-hours %v, want %v", a.GPUHours, want)
	}
}

// TestProfileLearnsFromReports: a Profile fed only by the simulator's
// reports predicts the engine's times (it never reads the engine).
func TestProfileLearnsFromReports(t *testing.T) {
	tr, _ := readHead(t).Scale(6, 1)
	e := sim.Llama2_70B_H100()
	p := serving.NewProfile()
	if _, err := sim.Run(context.Background(), sim.Config{Trace: tr, Service: svc, Engine: e, InitialReplicas: 2, Profile: p}); err != nil {
		t.Fatal(err)
	}
	for _, tokens := range []int{400, 1000, 3000} {
		got, err := p.Prefill(tokens)
		want := e.Prefill(tokens)
		if err != nil || math.Abs(got.Seconds()-want.Seconds())/want.Seconds() > 0.1 {
			t.Errorf("prefill %d: learned %v, engine %v", tokens, got, want)
		}
	}
	for _, batch := range []int{1, 4, 10} {
		got, err := p.Decode(batch, 1000)
		want := e.Decode(batch, 1000)
		if err != nil || math.Abs(got.Seconds()-want.Seconds())/want.Seconds() > 0.05 {
			t.Errorf("decode %d: learned %v, engine %v", batch, got, want)
		}
	}
}

// TestCalibrateMonotone: a bigger fleet carries a bigger rate scale.
func TestCalibrateMonotone(t *testing.T) {
	tr := readHead(t)
	cfg := sim.Config{Trace: tr, Service: svc, Engine: sim.Llama2_70B_H100()}
	small, err := sim.Calibrate(context.Background(), cfg, 1, 1)
	if err != nil {
		t.Fatal(err)
	}
	big, err := sim.Calibrate(context.Background(), cfg, 3, 1)
	if err != nil {
		t.Fatal(err)
	}
	if !(big.Scale > 1.5*small.Scale) || small.ConcurrencyPerReplica <= 0 {
		t.Errorf("1 replica ×%v, 3 replicas ×%v", small.Scale, big.Scale)
	}
	if _, err := sim.Calibrate(context.Background(), cfg, 0, 1); !errors.Is(err, sim.ErrInvalidConfig) {
		t.Errorf("0 replicas: %v", err)
	}
}

// TestGrantEvery: with GPUs granted only at multiples of 30 s, the two
// replicas asked for at the 2 s tick get their GPUs at 30 s; Held and
// MaxHeld say so.
func TestGrantEvery(t *testing.T) {
	e := sim.Llama2_70B_H100()
	var reqs []serving.Request
	for i := range 600 {
		reqs = append(reqs, serving.Request{Arrival: time.Duration(i) * 200 * time.Millisecond, PromptTokens: 256, OutputTokens: 20})
	}
	res, err := sim.Run(context.Background(), sim.Config{Trace: serving.Trace{Requests: reqs}, Service: svc, Engine: e,
		InitialReplicas: 1, Autoscaler: fixed{3}, GrantEvery: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	// 1 replica for 120 s, 2 more from 30 s: (120 + 2·90) s × 4 GPUs.
	if want := (120.0 + 2*90.0) * 4 / 3600; math.Abs(res.GPUHours-want) > 1e-6 {
		t.Errorf("gpu-hours %v, want %v", res.GPUHours, want)
	}
	want := []sim.HeldStep{{At: 0, Replicas: 1}, {At: 30 * time.Second, Replicas: 3}}
	if len(res.Held) != len(want) || res.Held[0] != want[0] || res.Held[1] != want[1] {
		t.Errorf("held %+v, want %+v", res.Held, want)
	}
	for _, c := range []struct {
		from, to time.Duration
		want     int
	}{{0, 30 * time.Second, 1}, {0, 31 * time.Second, 3}, {30 * time.Second, time.Minute, 3}, {10 * time.Second, 20 * time.Second, 1}, {time.Hour, 2 * time.Hour, 3}} {
		if got := res.MaxHeld(c.from, c.to); got != c.want {
			t.Errorf("MaxHeld(%v, %v) = %d, want %d", c.from, c.to, got, c.want)
		}
	}
	if _, err := sim.Run(context.Background(), sim.Config{Trace: serving.Trace{Requests: reqs}, Service: svc, Engine: e, GrantEvery: 3 * time.Second}); !errors.Is(err, sim.ErrInvalidConfig) {
		t.Errorf("grant period not a multiple of the tick: %v", err)
	}
}

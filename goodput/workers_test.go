package goodput

import (
	"errors"
	"math"
	"testing"
)

// fitted fits Pollux's model to a measured T4 profile.
func fitted(t *testing.T, model string) Params {
	t.Helper()
	p, _, err := Fit(aggregate(readProfile(t, model, "placements.csv")), FitOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// With one worker per device on one type, the worker model is Pollux's
// model: the same throughput for every measured shape of a real profile.
func TestWorkerModelOnePerDeviceIsPollux(t *testing.T) {
	for _, name := range []string{"cifar10", "imagenet", "bert"} {
		p := fitted(t, name)
		for _, row := range readProfile(t, name, "placements.csv") {
			wm, err := NewWorkerModel(WorkerConfig{Workers: row.Replicas, Local: row.Local, Models: map[string]Model{"t4": {Params: p}}})
			if err != nil {
				t.Fatal(err)
			}
			got := wm.Throughput([]TypeShare{{Type: "t4", Devices: row.Replicas, Workers: row.Replicas}}, row.Nodes)
			want := Model{Params: p}.Throughput(row.Nodes, row.Replicas, row.Local, 0)
			if math.Abs(got-want) > 1e-12*want || !(got > 0) {
				t.Fatalf("%s %s local %d: worker model %v, Pollux %v", name, row.Placement, row.Local, got, want)
			}
		}
	}
}

// A mixed gang, computed by hand: the slowest device sets the step.
func TestWorkerModelMixedByHand(t *testing.T) {
	slow := Params{BetaC: 0.01, AlphaR: 0.01, AlphaN: 0.02, BetaN: 0.01, Gamma: 1}
	fast := slow
	fast.BetaC = 0.005
	cfg := WorkerConfig{Workers: 6, Local: 10, Models: map[string]Model{"slow": {Params: slow}, "fast": {Params: fast}}}
	wm, err := NewWorkerModel(cfg)
	if err != nil {
		t.Fatal(err)
	}
	// 1 slow device with 2 workers, 2 fast devices with 4; 2 nodes, 3 devices:
	// T_sync = 0.02 + 0.01·(3−2) = 0.03. Slow: T_grad 0.1, (2−1)·0.1 + 0.1 + 0.03
	// + 1·0.003·0.1 = 0.2303. Fast: T_grad 0.05, 0.05 + 0.05 + 0.03 + 0.00015.
	gang := []TypeShare{{Type: "slow", Devices: 1, Workers: 2}, {Type: "fast", Devices: 2, Workers: 4}}
	if got, want := wm.StepSeconds(gang, 2), 0.2303; math.Abs(got-want) > 1e-12 {
		t.Fatalf("step %v, want %v", got, want)
	}
	if got, want := wm.Throughput(gang, 2), 60/0.2303; math.Abs(got-want) > 1e-9 {
		t.Fatalf("throughput %v, want %v", got, want)
	}
	// Baseline: 6 workers on one slow device, no sync (1e-8):
	// 5·0.1 + 0.1 + 1e-8 + 5·0.003·0.1 = 0.60150001.
	base := 60 / (0.6015 + MinCoef)
	if got, want := wm.GangSpeedup(gang, 2), 60/0.2303/base; math.Abs(got-want) > 1e-9 {
		t.Fatalf("speedup %v, want %v", got, want)
	}
	if got := wm.Speedup("slow", 1, 1); math.Abs(got-1) > 1e-12 {
		t.Fatalf("baseline speedup %v, want 1", got)
	}
	// Uneven split on one type: 6 workers on 4 devices, the busiest hosts 2.
	one := wm.StepSeconds([]TypeShare{{Type: "fast", Devices: 4, Workers: 6}}, 1)
	// T_sync = 0.01 (one node, AlphaR + BetaR·2 = 0.01): 0.05 + 0.05 + 0.01 + 0.00015.
	if want := 0.11015; math.Abs(one-want) > 1e-12 {
		t.Fatalf("uneven step %v, want %v", one, want)
	}
	// No overhead when asked for none.
	cfg.SliceOverhead = -1
	none, err := NewWorkerModel(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := none.StepSeconds(gang, 2), 0.23; math.Abs(got-want) > 1e-12 {
		t.Fatalf("step without overhead %v, want %v", got, want)
	}
	// More devices than workers, too many nodes, unknown types: nothing.
	if wm.Speedup("fast", 1, 7) != 0 || wm.GangSpeedup(gang, 4) != 0 || wm.Speedup("h100", 1, 2) != 0 {
		t.Fatal("impossible gangs must have speedup 0")
	}
}

// A worker whose batch exceeds what one pass of its type holds takes
// several passes.
func TestWorkerModelPasses(t *testing.T) {
	p := Params{AlphaC: 0.01, BetaC: 0.001, Gamma: 1}
	wm, err := NewWorkerModel(WorkerConfig{Workers: 2, Local: 100, SliceOverhead: -1,
		Models: map[string]Model{"small": {Params: p, Limits: Limits{InitBatch: 1, MaxLocal: 40}}}})
	if err != nil {
		t.Fatal(err)
	}
	// 3 passes of 34: T_grad 0.044; 2 workers on 1 device: 6 passes, the
	// last overlapped with a 1e-8 sync.
	if got, want := wm.StepSeconds([]TypeShare{{Type: "small", Devices: 1, Workers: 2}}, 1), 6*0.044+MinCoef; math.Abs(got-want) > 1e-12 {
		t.Fatalf("step %v, want %v", got, want)
	}
	if got, want := wm.WorkerSeconds("small"), 3*0.044; math.Abs(got-want) > 1e-12 {
		t.Fatalf("worker seconds %v, want %v", got, want)
	}
}

func TestCheckGang(t *testing.T) {
	for _, c := range []struct {
		w    int
		gang []TypeShare
		ok   bool
	}{
		{4, []TypeShare{{"a", 2, 3}, {"b", 1, 1}}, true},
		{0, []TypeShare{{"a", 1, 1}}, false},
		{4, nil, false},
		{4, []TypeShare{{"a", 2, 3}}, false},              // sums to 3
		{4, []TypeShare{{"a", 3, 2}, {"b", 1, 2}}, false}, // a device with no worker
		{4, []TypeShare{{"a", 1, 2}, {"a", 1, 2}}, false}, // type twice
		{4, []TypeShare{{"", 1, 4}}, false},
		{4, []TypeShare{{"a", 0, 4}}, false},
	} {
		err := CheckGang(c.w, c.gang)
		if (err == nil) != c.ok || (err != nil && !errors.Is(err, ErrInvalidGang)) {
			t.Errorf("CheckGang(%d, %v) = %v, want ok=%v", c.w, c.gang, err, c.ok)
		}
	}
}

func TestNewWorkerModelRejects(t *testing.T) {
	good := map[string]Model{"t4": {Params: Params{BetaC: 1, Gamma: 1}}}
	for _, cfg := range []WorkerConfig{
		{Workers: 0, Local: 1, Models: good},
		{Workers: 1, Local: 0, Models: good},
		{Workers: 1, Local: 1},
		{Workers: 1, Local: 1, Models: good, SliceOverhead: math.NaN()},
		{Workers: 1, Local: 1, Models: good, BaseType: "a100"},
		{Workers: 1, Local: 1, Models: map[string]Model{"": good["t4"]}},
		{Workers: 1, Local: 1, Models: map[string]Model{"t4": {Params: Params{BetaC: 1}}}},
	} {
		if _, err := NewWorkerModel(cfg); err == nil {
			t.Errorf("NewWorkerModel(%+v) accepted", cfg)
		}
	}
}

func FuzzCheckGang(f *testing.F) {
	f.Add(4, "a", 2, 3, "b", 1, 1)
	f.Add(0, "", 0, 0, "", 0, 0)
	f.Fuzz(func(t *testing.T, w int, t1 string, d1, w1 int, t2 string, d2, w2 int) {
		gang := []TypeShare{{t1, d1, w1}, {t2, d2, w2}}
		if CheckGang(w, gang) != nil {
			return
		}
		if t1 == t2 || t1 == "" || d1 < 1 || d2 < 1 || w1 < d1 || w2 < d2 || w1+w2 != w {
			t.Fatalf("accepted %d %v", w, gang)
		}
	})
}

// Speedup on one type is GangSpeedup of that one share.
func TestWorkerModelSpeedupIsGang(t *testing.T) {
	p := fitted(t, "cifar10")
	fast := p.scaled(0.5)
	wm, err := NewWorkerModel(WorkerConfig{Workers: 12, Local: 64, Models: map[string]Model{"t4": {Params: p}, "a100": {Params: fast}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, typ := range []string{"t4", "a100", "v100"} {
		for r := 0; r <= 13; r++ {
			for n := 0; n <= r+1; n++ {
				got := wm.Speedup(typ, n, r)
				want := wm.GangSpeedup([]TypeShare{{Type: typ, Devices: r, Workers: 12}}, n)
				if r > 12 || r < 1 {
					want = 0
				}
				if math.Abs(got-want) > 1e-12*want {
					t.Fatalf("%s %d nodes %d devices: Speedup %v, GangSpeedup %v", typ, n, r, got, want)
				}
			}
		}
	}
}

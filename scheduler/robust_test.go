package scheduler

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/goodsched/goodsched/accel"
	"github.com/goodsched/goodsched/goodput"
	"github.com/goodsched/goodsched/placement"
)

// Issue 17: inputs that crashed a round, failed it for the wrong reason or
// passed silently.

func TestZeroValueScheduler(t *testing.T) {
	in := Input{Cluster: testCluster(group{1, 4, "t4"}), Now: t0.Add(time.Hour), Jobs: []Job{
		{ID: "a", Kind: Elastic, MinReplicas: 1, MaxReplicas: 4, Submitted: t0},
	}}
	var s Scheduler
	plan, err := s.Schedule(context.Background(), in)
	if err != nil || len(plan.Decisions) != 1 || plan.Decisions[0].To != 4 {
		t.Fatalf("zero-value Scheduler: %+v, %v; want the default (Pollux) plan", plan, err)
	}
	var nilS *Scheduler
	if _, err := nilS.Schedule(context.Background(), in); !errors.Is(err, ErrInvalid) {
		t.Errorf("nil *Scheduler: err %v, want ErrInvalid", err)
	}
}

func TestNewRejectsNilPointers(t *testing.T) {
	for name, cfg := range map[string]Config{
		"*Pollux":           {Policy: (*Pollux)(nil)},
		"*placement.Packer": {Placer: (*placement.Packer)(nil)},
	} {
		if _, err := New(cfg); !errors.Is(err, ErrInvalid) {
			t.Errorf("New with a nil %s: err %v, want ErrInvalid", name, err)
		}
	}
	g := &Pollux{}
	s, err := New(Config{Policy: g})
	if err != nil {
		t.Fatal(err)
	}
	in := Input{Cluster: testCluster(group{1, 4, "t4"}), Now: t0, Jobs: []Job{{ID: "a", Kind: Elastic, Submitted: t0}}}
	if _, err := s.Schedule(context.Background(), in); err != nil {
		t.Errorf("non-nil *Pollux: %v", err)
	}
}

// A Speedup that is a nil pointer (a nil *goodput.Curve) is bad input,
// not a panic, whatever the policy.
func TestNilSpeedupPointer(t *testing.T) {
	in := Input{Cluster: testCluster(group{1, 4, "t4"}), Now: t0, Jobs: []Job{
		{ID: "a", Kind: Elastic, Submitted: t0, Speedup: (*goodput.Curve)(nil)},
	}}
	for _, p := range []Policy{Pollux{}, fifo} {
		s, err := New(Config{Policy: p})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Schedule(context.Background(), in); !errors.Is(err, ErrInvalid) {
			t.Errorf("%T: a nil *goodput.Curve as Speedup: err %v, want ErrInvalid", p, err)
		}
	}
}

func TestHugeMinReplicas(t *testing.T) {
	in := Input{Cluster: testCluster(group{2, 4, "t4"}, group{1, 8, "a100-40gb"}), Now: t0.Add(time.Hour), Jobs: []Job{
		{ID: "huge", Kind: Elastic, MinReplicas: math.MaxInt - 2, Submitted: t0},
		{ID: "huge2", Kind: Adaptive, MinReplicas: math.MaxInt, MaxReplicas: math.MaxInt, Submitted: t0},
		{ID: "ok", Kind: Elastic, MinReplicas: 1, MaxReplicas: 4, Submitted: t0},
	}}
	for name, pol := range policies() {
		s, _ := New(Config{Policy: pol})
		plan, err := s.Schedule(context.Background(), in)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		for _, d := range plan.Decisions {
			if strings.HasPrefix(d.Job, "huge") && (d.To != 0 || d.Action != placement.Queue) {
				t.Errorf("%s: %s got %+v, want queued", name, d.Job, d)
			}
		}
	}
}

// The contract for pinned jobs (item 5): a running non-preemptible job
// keeps exactly its devices, even when its Types no longer allow their
// type; a Current assignment spanning two types is invalid input.
func TestPinnedOutsideAllowedTypes(t *testing.T) {
	cl := testCluster(group{1, 4, "t4"}, group{1, 4, "a100-40gb"})
	cur := []placement.Assignment{{Job: "p", Devices: []string{"t4-0-000/0", "t4-0-000/1"}}}
	in := Input{Cluster: cl, Now: t0.Add(time.Hour), Current: cur, Jobs: []Job{
		{ID: "p", Kind: Rigid, Requested: 2, NonPreemptible: true, Types: []accel.TypeKey{"a100-40gb"}, Submitted: t0},
		{ID: "q", Kind: Elastic, MinReplicas: 1, MaxReplicas: 8, Submitted: t0},
	}}
	for name, pol := range policies() {
		s, _ := New(Config{Policy: pol})
		plan, err := s.Schedule(context.Background(), in)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		d, _ := plan.Decision("p")
		if d.Action != placement.Keep || !placement.SameDevices(d.Assignment.Devices, cur[0].Devices) {
			t.Errorf("%s: pinned job outside its Types got %+v, want Keep on its devices", name, d)
		}
	}
}

func TestCurrentSpanningTwoTypes(t *testing.T) {
	cl := testCluster(group{1, 4, "t4"}, group{1, 4, "a100-40gb"})
	for _, np := range []bool{true, false} {
		in := Input{Cluster: cl, Now: t0.Add(time.Hour), Jobs: []Job{
			{ID: "p", Kind: Rigid, Requested: 2, NonPreemptible: np, Submitted: t0},
		}, Current: []placement.Assignment{{Job: "p", Devices: []string{"t4-0-000/0", "a100-40gb-1-000/0"}}}}
		for name, pol := range policies() {
			s, _ := New(Config{Policy: pol})
			if _, err := s.Schedule(context.Background(), in); !errors.Is(err, ErrInvalid) {
				t.Errorf("%s (non-preemptible %v): two-type Current: err %v, want ErrInvalid", name, np, err)
			}
		}
	}
}

func TestCurrentOfUnknownJobChecked(t *testing.T) {
	cl := testCluster(group{1, 4, "t4"})
	jobs := []Job{{ID: "a", Kind: Rigid, Requested: 1, Submitted: t0}}
	for name, cur := range map[string][]placement.Assignment{
		"unknown device": {{Job: "gone", Devices: []string{"nope/0"}}},
		"double booking": {{Job: "a", Devices: []string{"t4-0-000/0"}}, {Job: "gone", Devices: []string{"t4-0-000/0"}}},
		"two entries":    {{Job: "gone", Devices: []string{"t4-0-000/1"}}, {Job: "gone", Devices: []string{"t4-0-000/2"}}},
	} {
		s, _ := New(Config{})
		if _, err := s.Schedule(context.Background(), Input{Cluster: cl, Now: t0, Jobs: jobs, Current: cur}); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s in a finished job's Current: err %v, want ErrInvalid", name, err)
		}
	}
	// A finished job's valid entry still just releases its devices.
	s, _ := New(Config{})
	plan, err := s.Schedule(context.Background(), Input{Cluster: cl, Now: t0, Jobs: jobs, Current: []placement.Assignment{{Job: "gone", Devices: []string{"t4-0-000/0"}}}})
	if err != nil || plan.Decisions[0].To != 1 {
		t.Errorf("finished job's devices: %+v, %v", plan, err)
	}
}

// slowPlacer returns the context's error, as a placer that honours
// cancellation does.
type slowPlacer struct{}

func (slowPlacer) Place(ctx context.Context, _ placement.PlaceInput) (placement.PlaceResult, error) {
	<-ctx.Done()
	return placement.PlaceResult{}, ctx.Err()
}

func TestContextErrorsAreNotPlacementFaults(t *testing.T) {
	in := Input{Cluster: testCluster(group{1, 4, "t4"}), Now: t0, Jobs: []Job{{ID: "a", Kind: Elastic, Submitted: t0}}}
	for name, pol := range policies() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
		s, _ := New(Config{Policy: pol, Placer: slowPlacer{}})
		_, err := s.Schedule(ctx, in)
		cancel()
		if !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, ErrPlacement) {
			t.Errorf("%s: err %v, want context.DeadlineExceeded and not ErrPlacement", name, err)
		}
	}
}

func TestNegativeKnobs(t *testing.T) {
	in := Input{Cluster: testCluster(group{1, 4, "t4"}), Now: t0, Jobs: []Job{{ID: "a", Kind: Elastic, Submitted: t0}}}
	for name, pol := range map[string]Policy{
		"Pollux.MaxPasses":       Pollux{MaxPasses: -1},
		"Genetic.Population":     geneticAt(-1, 0, 0),
		"Genetic.Generations":    geneticAt(0, -5, 0),
		"Genetic.Population 1e9": geneticAt(1_000_000_000, 0, 0),
		"Tiresias.Threshold":     tiresiasAt(-time.Hour),
		"Pollux.RestartDelay":    Pollux{RestartDelay: -time.Second},
	} {
		if _, err := pol.Allocate(context.Background(), mustRound(t, in)); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: Allocate err %v, want ErrInvalid", name, err)
		}
		if _, err := New(Config{Policy: pol}); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: New err %v, want ErrInvalid", name, err)
		}
	}
}

// FuzzPolicyKnobs drives the policies' user numbers (benchmark
// -population, simulate's policy flags) through New and Schedule: an
// ErrInvalid or a plan, never a panic or an allocation sized by the
// number alone.
func FuzzPolicyKnobs(f *testing.F) {
	f.Add(int64(100), int64(2), int64(4), int64(time.Hour))
	f.Add(int64(1_000_000_000), int64(1), int64(0), int64(0))
	f.Add(int64(-1), int64(-1), int64(-1), int64(-1))
	f.Add(int64(math.MaxInt64), int64(math.MaxInt64), int64(math.MaxInt64), int64(math.MaxInt64))
	f.Add(int64(maxPopulation), int64(1), int64(1), int64(1))
	in := Input{Cluster: testCluster(group{2, 4, "t4"}), Now: t0.Add(time.Hour), Jobs: []Job{
		{ID: "a", Kind: Elastic, MaxReplicas: 8, Submitted: t0},
		{ID: "b", Kind: Rigid, Requested: 2, Submitted: t0},
	}}
	f.Fuzz(func(t *testing.T, pop, gens, passes, th int64) {
		for _, pol := range []Policy{
			geneticAt(int(pop), int(min(gens, 3)), 1),
			Pollux{MaxPasses: int(passes)},
			tiresiasAt(time.Duration(th)),
		} {
			s, err := New(Config{Policy: pol})
			if err != nil {
				if !errors.Is(err, ErrInvalid) {
					t.Fatalf("%T: New: %v", pol, err)
				}
				if _, err := pol.Allocate(context.Background(), mustRound(t, in)); !errors.Is(err, ErrInvalid) {
					t.Fatalf("%T: New refused but Allocate said %v", pol, err)
				}
				continue
			}
			plan, err := s.Schedule(context.Background(), in)
			if err != nil {
				t.Fatalf("%T: %v", pol, err)
			}
			checkPlan(t, in, plan)
		}
	})
}

func TestSpeedupTypeAlias(t *testing.T) {
	cl := testCluster(group{1, 8, "a100-40gb"})
	est, err := goodput.NewEstimator(goodput.EstimatorConfig{Limits: goodput.Limits{InitBatch: 32, MaxBatch: 512}})
	if err != nil {
		t.Fatal(err)
	}
	if err := est.Observe("a100", goodput.Observation{Nodes: 1, Replicas: 1, Local: 32, AccumSeconds: 0.1, OptimSeconds: 0.1}); err != nil {
		t.Fatal(err)
	}
	curve, err := est.Curve(goodput.CurveOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for name, sp := range map[string]goodput.Speedup{"Curve": curve} {
		in := Input{Cluster: cl, Now: t0, Jobs: []Job{{ID: "a", Kind: Adaptive, Submitted: t0, Speedup: sp}}}
		s, _ := New(Config{})
		_, err := s.Schedule(context.Background(), in)
		if !errors.Is(err, ErrUnknownType) || !strings.Contains(err.Error(), `"a100-40gb"`) {
			t.Errorf("%s keyed a100 on an a100-40gb cluster: err %v, want ErrUnknownType naming a100-40gb", name, err)
		}
	}
}

// TestOneInterferenceKnob: the placement package's own interference
// switch inside RoundPlacer is refused, not silently overridden.
func TestOneInterferenceKnob(t *testing.T) {
	pl := placement.RoundPlacer{}
	pl.Chooser.AllowInterference = true
	if _, err := New(Config{Placer: pl}); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "Config.AllowInterference") {
		t.Fatalf("err = %v", err)
	}
}

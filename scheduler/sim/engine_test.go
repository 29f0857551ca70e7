package sim

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/goodsched/goodsched/placement"
	"github.com/goodsched/goodsched/scheduler"
	"github.com/goodsched/goodsched/scheduler/baselines"
)

func TestRunHandComputed(t *testing.T) {
	cases := []struct {
		name     string
		spec     string
		jobs     []JobSpec
		opts     ProfileOptions
		placer   placement.Placer
		interf   float64
		wantJCT  map[string]float64 // seconds
		wantGPUs float64            // device-seconds in total
	}{
		{
			// 30 s stall, then 200 iterations of 1 s.
			name:     "one job, one device",
			spec:     "1x1:t4",
			jobs:     []JobSpec{{Name: "a", Application: "toy", Replicas: 1, BatchSize: 10}},
			wantJCT:  map[string]float64{"a": 230},
			wantGPUs: 230,
		},
		{
			// Per-model stall of 45 s; submit at 100 s is seen at the
			// round at 120 s.
			name:     "per-model restart delay and round alignment",
			spec:     "1x1:t4",
			jobs:     []JobSpec{{Name: "a", Submit: 100 * time.Second, Application: "toy", Replicas: 1, BatchSize: 10}},
			opts:     ProfileOptions{RestartDelays: map[string]time.Duration{"toy": 45 * time.Second}},
			wantJCT:  map[string]float64{"a": 20 + 45 + 200},
			wantGPUs: 245,
		},
		{
			// Two devices on one node: local 5, 1 s per step.
			name:     "two devices packed",
			spec:     "1x2:t4",
			jobs:     []JobSpec{{Name: "a", Application: "toy", Replicas: 2, BatchSize: 10}},
			wantJCT:  map[string]float64{"a": 230},
			wantGPUs: 460,
		},
		{
			// Second job waits for the first (FIFO, 1 device): starts in
			// the round at 240 s, finishes 230 s later.
			name:     "queueing",
			spec:     "1x1:t4",
			jobs:     []JobSpec{{Name: "a", Application: "toy", Replicas: 1, BatchSize: 10}, {Name: "b", Application: "toy", Replicas: 1, BatchSize: 10}},
			wantJCT:  map[string]float64{"a": 230, "b": 240 + 230},
			wantGPUs: 460,
		},
		{
			// Two distributed jobs share both nodes: each runs at half
			// speed (interference 0.5): 30 + 200/0.5.
			name:     "interference",
			spec:     "2x2:t4",
			jobs:     []JobSpec{{Name: "a", Application: "toy", Replicas: 2, BatchSize: 10}, {Name: "b", Application: "toy", Replicas: 2, BatchSize: 10}},
			placer:   spreadPlacer{},
			interf:   0.5,
			wantJCT:  map[string]float64{"a": 430, "b": 430},
			wantGPUs: 4 * 430,
		},
		{
			// Batch 20 on one device: accumulation forced (2 passes of
			// 10, 1 s each, sync 0) → 2 s per step. Gain at batch 20 with
			// var 1 (epoch 0) = (1+1)/(1/2+1) = 4/3, epoch 1 var 3:
			// (3+1)/(3/2+1) = 1.6. Time = 30 + 100·2/(4/3) + 100·2/1.6.
			name:     "accumulation and gain",
			spec:     "1x1:t4",
			jobs:     []JobSpec{{Name: "a", Application: "toy", Replicas: 1, BatchSize: 20}},
			wantJCT:  map[string]float64{"a": 30 + 150 + 125},
			wantGPUs: 305,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			apps := toyApps(t, tc.opts)
			res, err := Run(context.Background(), Config{
				Cluster: cluster(t, tc.spec), Jobs: tc.jobs, Apps: apps,
				Policy: baselines.FIFO{}, Placer: tc.placer, Kind: scheduler.Rigid, InterferenceSlowdown: tc.interf,
			})
			if err != nil {
				t.Fatal(err)
			}
			if res.Completed != len(tc.jobs) {
				t.Fatalf("completed %d of %d", res.Completed, len(tc.jobs))
			}
			for _, j := range res.Jobs {
				if got, want := secs(j.JCT), tc.wantJCT[j.Name]; math.Abs(got-want) > 1e-3 {
					t.Errorf("%s: JCT %.4f s, want %.4f", j.Name, got, want)
				}
			}
			if got := res.GPUHours * 3600; math.Abs(got-tc.wantGPUs) > 1e-3 {
				t.Errorf("device-seconds %.4f, want %.4f", got, tc.wantGPUs)
			}
		})
	}
}

func TestRunValidation(t *testing.T) {
	apps := toyApps(t, ProfileOptions{})
	good := Config{Cluster: cluster(t, "1x1:t4"), Jobs: []JobSpec{{Name: "a", Application: "toy", Replicas: 1, BatchSize: 10}}, Apps: apps, Policy: baselines.FIFO{}, Kind: scheduler.Adaptive}
	cases := []struct {
		name string
		mod  func(*Config)
		want error
	}{
		{"no jobs", func(c *Config) { c.Jobs = nil }, ErrInvalid},
		{"no policy", func(c *Config) { c.Policy = nil }, ErrInvalid},
		{"unknown app", func(c *Config) { c.Jobs = []JobSpec{{Name: "a", Application: "nope", Replicas: 1, BatchSize: 1}} }, ErrUnknownApplication},
		{"duplicate job", func(c *Config) { c.Jobs = append(c.Jobs, c.Jobs[0]) }, ErrInvalid},
		{"bad interference", func(c *Config) { c.InterferenceSlowdown = 1 }, ErrInvalid},
		{"short interval", func(c *Config) { c.Interval = time.Millisecond }, ErrInvalid},
		{"negative MTBF", func(c *Config) { c.Faults.MTBF = -time.Second }, ErrInvalid},
		{"negative Explore", func(c *Config) { c.Explore = -1 }, ErrInvalid},
		{"bad kind", func(c *Config) { c.Kind = 7 }, ErrInvalid},
		{"negative kind", func(c *Config) { c.Kind = -1 }, ErrInvalid},
		{"hand-made app", func(c *Config) { c.Apps = map[string]*Application{"toy": {Name: "toy"}} }, ErrInvalid},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := good
			tc.mod(&c)
			if _, err := Run(context.Background(), c); !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
		})
	}
}

func TestFaultsLoseNoJob(t *testing.T) {
	apps := toyApps(t, ProfileOptions{})
	var jobs []JobSpec
	for i := range 12 {
		jobs = append(jobs, JobSpec{Name: string(rune('a' + i)), Submit: time.Duration(i) * 50 * time.Second, Application: "toy", Replicas: 1 + i%2, BatchSize: 10})
	}
	cfg := Config{Cluster: cluster(t, "3x2:t4"), Jobs: jobs, Apps: apps, Policy: baselines.Tiresias{}, Kind: scheduler.Rigid,
		Faults: Faults{MTBF: 10 * time.Minute, Repair: 5 * time.Minute, Seed: 7}}
	a, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if a.Completed != len(jobs) {
		t.Fatalf("completed %d of %d", a.Completed, len(jobs))
	}
	if a.Failures == 0 {
		t.Fatal("no failures injected at MTBF 10 min")
	}
	b, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if a.AvgJCT != b.AvgJCT || a.Failures != b.Failures {
		t.Fatalf("same seed, different results: %v/%d vs %v/%d", a.AvgJCT, a.Failures, b.AvgJCT, b.Failures)
	}
	cfg.Faults = Faults{}
	c, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if c.AvgJCT > a.AvgJCT {
		t.Errorf("failures made jobs faster: %v without, %v with", c.AvgJCT, a.AvgJCT)
	}
}

// kindRecorder records the Kind of every job the simulator presents to
// the policy, then lets FIFO decide.
type kindRecorder struct {
	kinds map[scheduler.Kind]bool
}

func (r *kindRecorder) Allocate(ctx context.Context, sr *scheduler.Round) ([]scheduler.Target, error) {
	for _, j := range sr.Input().Jobs {
		r.kinds[j.Kind] = true
	}
	return baselines.FIFO{}.Allocate(ctx, sr)
}

// TestConfigKind checks that Config.Kind is the scheduler.Kind the policy
// sees, and that the zero Config presents jobs as scheduler.Rigid (issue
// 13: sim uses scheduler's vocabulary, whose zero Kind is Rigid).
func TestConfigKind(t *testing.T) {
	apps := toyApps(t, ProfileOptions{})
	for _, kind := range []scheduler.Kind{0, scheduler.Rigid, scheduler.Elastic, scheduler.Adaptive} {
		rec := &kindRecorder{kinds: map[scheduler.Kind]bool{}}
		res, err := Run(context.Background(), Config{Cluster: cluster(t, "1x2:t4"), Apps: apps, Policy: rec, Kind: kind,
			Jobs: []JobSpec{{Name: "a", Application: "toy", Replicas: 2, BatchSize: 10}}})
		if err != nil {
			t.Fatal(err)
		}
		if res.Completed != 1 || len(rec.kinds) != 1 || !rec.kinds[kind] {
			t.Errorf("Config.Kind %v: the policy saw kinds %v (completed %d), want only %v", kind, rec.kinds, res.Completed, kind)
		}
	}
	for _, bad := range []scheduler.Kind{-1, scheduler.Adaptive + 1} {
		_, err := Run(context.Background(), Config{Cluster: cluster(t, "1x2:t4"), Apps: apps, Policy: baselines.FIFO{}, Kind: bad,
			Jobs: []JobSpec{{Name: "a", Application: "toy", Replicas: 2, BatchSize: 10}}})
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "Kind") {
			t.Errorf("Config.Kind %d: err %v, want ErrInvalid naming Kind", int(bad), err)
		}
	}
}

func TestHorizonReportsUnfinished(t *testing.T) {
	apps := toyApps(t, ProfileOptions{})
	res, err := Run(context.Background(), Config{
		Cluster: cluster(t, "1x1:t4"), Apps: apps, Policy: baselines.FIFO{}, Kind: scheduler.Rigid, Horizon: 2 * time.Minute,
		Jobs: []JobSpec{{Name: "a", Application: "toy", Replicas: 1, BatchSize: 10}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Completed != 0 || len(res.Jobs) != 1 || res.Jobs[0].Completed || res.Jobs[0].Finish != -1 {
		t.Fatalf("unexpected result %+v", res.Jobs)
	}
}

func TestRunCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	apps := toyApps(t, ProfileOptions{})
	_, err := Run(ctx, Config{Cluster: cluster(t, "1x1:t4"), Apps: apps, Policy: baselines.FIFO{}, Kind: scheduler.Adaptive,
		Jobs: []JobSpec{{Name: "a", Application: "toy", Replicas: 1, BatchSize: 10}}})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v", err)
	}
}

// RunAll shares applications between concurrent runs (they are
// immutable); its results must equal sequential runs. Run under -race.
func TestRunAllMatchesSequential(t *testing.T) {
	apps := polluxApps(t)
	var cfgs []Config
	for i, p := range []scheduler.Policy{baselines.FIFO{}, baselines.Tiresias{}, baselines.Optimus{}, scheduler.Pollux{}} {
		mode := []scheduler.Kind{scheduler.Rigid, scheduler.Rigid, scheduler.Elastic, scheduler.Adaptive}[i]
		cfgs = append(cfgs, Config{Cluster: cluster(t, "4x4:t4"), Jobs: polluxJobs(t, "workloads", "workload-3", 16), Apps: apps, Policy: p, Kind: mode, Oracle: mode == scheduler.Elastic})
	}
	par, err := RunAll(context.Background(), cfgs, 0)
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range cfgs {
		seq, err := Run(context.Background(), c)
		if err != nil {
			t.Fatal(err)
		}
		if string(transcript(seq)) != string(transcript(par[i])) {
			t.Errorf("config %d: parallel and sequential results differ", i)
		}
	}
	bad := cfgs[0]
	bad.Jobs = nil
	if _, err := RunAll(context.Background(), append(cfgs[:1:1], bad), 2); !errors.Is(err, ErrInvalid) {
		t.Fatalf("err = %v, want ErrInvalid", err)
	}
}

// Skipping quiet rounds in rigid mode must not change any result.
func TestQuietRoundsAreExact(t *testing.T) {
	apps := polluxApps(t)
	jobs := polluxJobs(t, "workloads", "workload-2", 60)
	for _, p := range []scheduler.Policy{baselines.FIFO{}, baselines.Tiresias{}} {
		cfg := Config{Cluster: cluster(t, "4x4:t4"), Jobs: jobs, Apps: apps, Policy: p, Placer: placement.Packer{}, Kind: scheduler.Rigid,
			Faults: Faults{MTBF: 6 * time.Hour, Seed: 3}}
		fast, err := Run(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		cfg.EveryRound = true
		slow, err := Run(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		if string(transcript(fast)) != string(transcript(slow)) {
			t.Errorf("%T: skipping quiet rounds changed the result:\n%s", p, firstDiff(transcript(fast), transcript(slow)))
		}
	}
}

func BenchmarkRunTiresiasWorkload(b *testing.B) {
	apps := polluxApps(b)
	jobs := polluxJobs(b, "workloads", "workload-6", 160)
	cl := cluster(b, "16x4:t4")
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Run(context.Background(), Config{Cluster: cl, Jobs: jobs, Apps: apps, Policy: baselines.Tiresias{}, Placer: placement.Packer{}, Kind: scheduler.Rigid}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkStepTimeInterpolated(b *testing.B) {
	a := polluxApps(b)["cifar10"]
	counts := []int{4, 4, 4, 4, 4, 3} // 6 nodes: not a measured placement
	b.ReportAllocs()
	for b.Loop() {
		if _, _, ok := a.StepTime("t4", counts, 100); !ok {
			b.Fatal("no step time")
		}
	}
}

// On a mixed cluster adaptive jobs run with per-type models (bootstrapped
// from one-device profiles) or a heterogeneity-blind one; rigid jobs get
// oracle speedups per type. All complete, and the ground truth of the type
// they run on applies.
func TestHeterogeneousModes(t *testing.T) {
	m := toyFS()
	m["p/toy/placements-rtx.csv"] = &fstest.MapFile{Data: []byte("local_bsz,step_time,sync_time,placement\n5,0.125,0,1\n10,0.25,0,1\n20,0.5,0,1\n5,0.25,0.1,2\n10,0.4,0.1,2\n5,0.3,0.2,4\n")}
	apps, err := LoadProfiles(ProfileOptions{}, ProfileSource{FS: m, Dir: "p"})
	if err != nil {
		t.Fatal(err)
	}
	var jobs []JobSpec
	for i := range 6 {
		jobs = append(jobs, JobSpec{Name: fmt.Sprintf("j%d", i), Submit: time.Duration(i) * time.Minute, Application: "toy", Replicas: 1 + i%2, BatchSize: 10})
	}
	cl := cluster(t, "1x2:t4,1x4:rtx2080ti")
	for _, tc := range []struct {
		name string
		cfg  Config
	}{
		{"per-type", Config{Policy: scheduler.Pollux{}, Kind: scheduler.Adaptive, PerType: true}},
		{"blind", Config{Policy: scheduler.Pollux{}, Kind: scheduler.Adaptive}},
		{"rigid-oracle", Config{Policy: baselines.FIFO{}, Kind: scheduler.Rigid, Oracle: true}},
		{"elastic-oracle", Config{Policy: baselines.Optimus{}, Kind: scheduler.Elastic, Oracle: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tc.cfg
			cfg.Cluster, cfg.Jobs, cfg.Apps = cl, jobs, apps
			res, err := Run(context.Background(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			if res.Completed != len(jobs) {
				t.Fatalf("completed %d of %d", res.Completed, len(jobs))
			}
		})
	}
	// A lone rigid job prefers the faster type through its oracle speedup:
	// 30 s stall + 200 steps of 0.25 s on an RTX 2080 Ti.
	res, err := Run(context.Background(), Config{Cluster: cl, Apps: apps, Policy: baselines.FIFO{}, Kind: scheduler.Rigid, Oracle: true,
		Jobs: []JobSpec{{Name: "a", Application: "toy", Replicas: 1, BatchSize: 10}}})
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Jobs[0].JCT.Seconds(); math.Abs(got-80) > 1e-6 {
		t.Fatalf("JCT %v s, want 80 (ran on the faster type)", got)
	}
}

// rotatePlacer gives every gang the next devices of node 0 each call: a
// placer that relabels devices within a node from round to round.
type rotatePlacer struct{ calls int }

func (p *rotatePlacer) Place(_ context.Context, in placement.PlaceInput) (placement.PlaceResult, error) {
	var res placement.PlaceResult
	_, devs := in.Cluster.Node(0)
	k := p.calls
	p.calls++
	for _, tg := range in.Targets {
		a := placement.Assignment{Job: tg.Job}
		for range tg.Count {
			a.Devices = append(a.Devices, devs[k%len(devs)].ID)
			k++
		}
		res.Assignments = append(res.Assignments, a)
	}
	return res, nil
}

// Devices swapped within a node, as many per node as before, are not a
// restart: the Pollux simulator tracks a job's GPUs per node only.
func TestRelabelWithinNodeIsNoRestart(t *testing.T) {
	pl := &rotatePlacer{}
	res, err := Run(context.Background(), Config{
		Cluster: cluster(t, "1x4:t4"), Apps: toyApps(t, ProfileOptions{}),
		Jobs:   []JobSpec{{Name: "a", Application: "toy", Replicas: 2, BatchSize: 10}},
		Policy: baselines.FIFO{}, Placer: pl, Kind: scheduler.Rigid, EveryRound: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	if pl.calls < 3 {
		t.Fatalf("placer called %d times, want a call every round", pl.calls)
	}
	j := res.Jobs[0]
	if got := secs(j.JCT); math.Abs(got-230) > 1e-3 || j.Restarts != 0 {
		t.Errorf("JCT %.3f s with %d restarts, want 230 s (one 30 s stall) and 0", got, j.Restarts)
	}
}

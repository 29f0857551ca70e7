package env_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"math"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/goodsched/goodsched/accel"
	"github.com/goodsched/goodsched/placement"
	"github.com/goodsched/goodsched/scheduler"
	"github.com/goodsched/goodsched/scheduler/baselines"
	"github.com/goodsched/goodsched/scheduler/sim"
	"github.com/goodsched/goodsched/scheduler/sim/env"
	"github.com/goodsched/goodsched/scheduler/sim/polluxdata"
)

var (
	appsOnce sync.Once
	apps     map[string]*sim.Application
	works    []sim.Workload
	appsErr  error
)

// pollux loads the embedded Pollux profiles and default workloads once.
func pollux(t testing.TB) (map[string]*sim.Application, []sim.Workload) {
	t.Helper()
	appsOnce.Do(func() {
		apps, appsErr = sim.LoadProfiles(sim.ProfileOptions{}, sim.ProfileSource{FS: polluxdata.FS, Dir: "traces"})
		if appsErr == nil {
			works, appsErr = sim.LoadWorkloads(polluxdata.FS, "workloads")
		}
	})
	if appsErr != nil {
		t.Fatal(appsErr)
	}
	return apps, works
}

func simConfig(t testing.TB, spec string, jobs []sim.JobSpec) sim.Config {
	t.Helper()
	a, _ := pollux(t)
	c, err := accel.ParseSpec(spec)
	if err != nil {
		t.Fatal(err)
	}
	return sim.Config{Cluster: c, Jobs: jobs, Apps: a, Placer: placement.Packer{}, Kind: scheduler.Rigid}
}

// play runs one episode with policy p as the agent and returns the steps'
// JSON transcript and the result.
func play(t testing.TB, e *env.Env, seed uint64, p scheduler.Policy) ([]byte, sim.Result) {
	t.Helper()
	obs, err := e.Reset(seed)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	if err := enc.Encode(obs); err != nil {
		t.Fatal(err)
	}
	for {
		tg, err := p.Allocate(context.Background(), e.Round())
		if err != nil {
			t.Fatal(err)
		}
		st, err := e.Step(env.ActionOf(tg))
		if err != nil {
			t.Fatal(err)
		}
		if err := enc.Encode(st); err != nil {
			t.Fatal(err)
		}
		if st.Done {
			break
		}
	}
	res, err := e.Result()
	if err != nil {
		t.Fatal(err)
	}
	return buf.Bytes(), res
}

// TestFIFOMatchesSim: FIFO played through the environment gives exactly
// the simulator's own FIFO result, with and without node failures, on a
// homogeneous and a mixed cluster.
func TestFIFOMatchesSim(t *testing.T) {
	_, ws := pollux(t)
	for _, tc := range []struct {
		name, spec string
		jobs       int
		mtbf       time.Duration
	}{
		{"t4", "8x4:t4", 60, 0},
		{"t4-faults", "8x4:t4", 40, 12 * time.Hour},
		{"mixed", "4x4:t4,2x8:a100-40gb", 40, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := simConfig(t, tc.spec, ws[5].Jobs[:tc.jobs])
			cfg.Faults.MTBF = tc.mtbf
			const seed = 7
			e, err := env.New(env.Config{Sim: cfg})
			if err != nil {
				t.Fatal(err)
			}
			defer e.Close()
			_, got := play(t, e, seed, baselines.FIFO{})
			cfg.Policy = baselines.FIFO{}
			cfg.Faults.Seed = seed
			want, err := sim.Run(context.Background(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("env FIFO avg JCT %v makespan %v; sim FIFO %v %v", got.AvgJCT, got.Makespan, want.AvgJCT, want.Makespan)
			}
			if tc.mtbf > 0 && want.Failures == 0 {
				t.Fatal("no failures injected: the faults case checks nothing")
			}
		})
	}
}

// TestSameSeedSameEpisode: two episodes of one seed are byte-identical;
// another seed plays another workload.
func TestSameSeedSameEpisode(t *testing.T) {
	_, ws := pollux(t)
	cfg := simConfig(t, "4x4:t4", nil)
	e, err := env.New(env.Config{Sim: cfg, Workloads: [][]sim.JobSpec{ws[0].Jobs[:30], ws[1].Jobs[:30]}})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	a, _ := play(t, e, 3, baselines.Tiresias{})
	b, _ := play(t, e, 3, baselines.Tiresias{})
	if !bytes.Equal(a, b) {
		t.Fatal("the same seed gave two different episodes")
	}
	c, _ := play(t, e, 4, baselines.Tiresias{})
	if bytes.Equal(a, c) {
		t.Fatal("seeds 3 and 4 gave the same episode")
	}
}

// TestReturns: the JCT return is minus the sum of JCTs and the makespan
// return minus the makespan, in hours; goodput pays speedup-hours.
func TestReturns(t *testing.T) {
	_, ws := pollux(t)
	for _, r := range []env.Reward{env.RewardJCT, env.RewardMakespan, env.RewardGoodput} {
		t.Run(r.String(), func(t *testing.T) {
			e, err := env.New(env.Config{Sim: simConfig(t, "4x4:t4", ws[2].Jobs[:25]), Reward: r})
			if err != nil {
				t.Fatal(err)
			}
			defer e.Close()
			if _, err := e.Reset(1); err != nil {
				t.Fatal(err)
			}
			ret, steps := 0.0, 0
			for {
				tg, err := baselines.FIFO{}.Allocate(context.Background(), e.Round())
				if err != nil {
					t.Fatal(err)
				}
				st, err := e.Step(env.ActionOf(tg))
				if err != nil {
					t.Fatal(err)
				}
				ret += st.Reward
				steps++
				if st.Done {
					break
				}
			}
			res, _ := e.Result()
			if res.Completed != len(res.Jobs) {
				t.Fatalf("%d of %d jobs completed", res.Completed, len(res.Jobs))
			}
			var want float64
			switch r {
			case env.RewardJCT:
				for _, j := range res.Jobs {
					want -= j.JCT.Hours()
				}
			case env.RewardMakespan:
				want = -res.Makespan.Hours()
			case env.RewardGoodput:
				// Rigid jobs without an oracle have linear speedups: the
				// return is the device-hours held at decision points,
				// at most the GPU-hours.
				if !(ret > 0 && ret <= res.GPUHours*(1+1e-9)) {
					t.Fatalf("goodput return %v, GPU-hours %v", ret, res.GPUHours)
				}
				return
			}
			if math.Abs(ret-want) > 1e-6*math.Abs(want) {
				t.Fatalf("return %v over %d steps, want %v", ret, steps, want)
			}
		})
	}
}

// TestBadActionsChangeNothing: each bad action fails its step with
// ErrBadAction, and the episode then plays on exactly as one that never
// saw it.
func TestBadActionsChangeNothing(t *testing.T) {
	_, ws := pollux(t)
	cfg := simConfig(t, "2x4:t4", ws[5].Jobs[:12])
	clean, err := env.New(env.Config{Sim: cfg})
	if err != nil {
		t.Fatal(err)
	}
	defer clean.Close()
	want, _ := play(t, clean, 1, baselines.FIFO{})

	e, err := env.New(env.Config{Sim: cfg})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if _, err := e.Step(env.Action{}); !errors.Is(err, env.ErrNoEpisode) {
		t.Fatalf("Step before Reset: %v", err)
	}
	obs, err := e.Reset(1)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.Encode(obs)
	for {
		r := e.Round()
		j := r.Jobs()[0]
		id, typ := j.Job.ID, string(j.Types[0])
		bad := map[string]env.Action{
			"unknown job":      {Targets: []env.Target{{Job: "nope", Type: typ, Count: 1}}},
			"job twice":        {Targets: []env.Target{{Job: id}, {Job: id}}},
			"negative count":   {Targets: []env.Target{{Job: id, Type: typ, Count: -1}}},
			"negative nodes":   {Targets: []env.Target{{Job: id, Type: typ, Count: j.Min, MaxNodes: -1}}},
			"unknown type":     {Targets: []env.Target{{Job: id, Type: "h100", Count: j.Min}}},
			"outside bounds":   {Targets: []env.Target{{Job: id, Type: typ, Count: j.Max + 1}}},
			"more than usable": {Targets: []env.Target{{Job: id, Type: typ, Count: 9}}},
		}
		if len(r.Jobs()) > 1 {
			k := r.Jobs()[1]
			bad["more in all"] = env.Action{Targets: []env.Target{{Job: id, Type: typ, Count: j.Min}, {Job: k.Job.ID, Type: typ, Count: 8 - j.Min + 1}}}
			if k.Min > 8-j.Min+1 || k.Max < 8-j.Min+1 {
				delete(bad, "more in all") // the bound check would fire first
			}
		}
		for name, a := range bad {
			if j.Pinned && name != "unknown job" && name != "job twice" && name != "negative count" && name != "negative nodes" {
				continue
			}
			if _, err := e.Step(a); !errors.Is(err, env.ErrBadAction) {
				t.Fatalf("%s: err %v, want ErrBadAction", name, err)
			}
		}
		tg, err := baselines.FIFO{}.Allocate(context.Background(), r)
		if err != nil {
			t.Fatal(err)
		}
		st, err := e.Step(env.ActionOf(tg))
		if err != nil {
			t.Fatal(err)
		}
		enc.Encode(st)
		if st.Done {
			break
		}
	}
	if !bytes.Equal(buf.Bytes(), want) {
		t.Fatal("bad actions changed the episode")
	}
	if _, err := e.Step(env.Action{}); !errors.Is(err, env.ErrNoEpisode) {
		t.Fatalf("Step after the end: %v", err)
	}
}

func TestNewRejects(t *testing.T) {
	_, ws := pollux(t)
	base := simConfig(t, "2x4:t4", ws[0].Jobs[:3])
	for name, c := range map[string]env.Config{
		"policy":         {Sim: func() sim.Config { c := base; c.Policy = baselines.FIFO{}; return c }()},
		"progress":       {Sim: func() sim.Config { c := base; c.Progress = func(sim.Status) {}; return c }()},
		"no jobs":        {Sim: func() sim.Config { c := base; c.Jobs = nil; return c }()},
		"empty workload": {Sim: base, Workloads: [][]sim.JobSpec{nil}},
		"reward":         {Sim: base, Reward: 7},
	} {
		if _, err := env.New(c); !errors.Is(err, env.ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", name, err)
		}
	}
	// A config only the simulator can judge fails at Reset.
	c := base
	c.Interval = time.Millisecond
	e, err := env.New(env.Config{Sim: c})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Reset(1); !errors.Is(err, env.ErrEpisode) || !errors.Is(err, sim.ErrInvalid) {
		t.Fatalf("Reset with a bad interval: %v", err)
	}
	if _, err := env.ParseReward("speed"); !errors.Is(err, env.ErrInvalid) {
		t.Fatal("ParseReward accepted speed")
	}
}

// TestCloseMidEpisode: closing or resetting mid-episode releases the
// suspended simulation and a new episode starts afresh.
func TestCloseMidEpisode(t *testing.T) {
	_, ws := pollux(t)
	e, err := env.New(env.Config{Sim: simConfig(t, "2x4:t4", ws[0].Jobs[:10])})
	if err != nil {
		t.Fatal(err)
	}
	first, err := e.Reset(2)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Step(env.Action{}); err != nil {
		t.Fatal(err)
	}
	again, err := e.Reset(2)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(first, again) {
		t.Fatal("Reset mid-episode did not start afresh")
	}
	e.Close()
	if e.Round() != nil {
		t.Fatal("Round after Close")
	}
	if _, err := e.Step(env.Action{}); !errors.Is(err, env.ErrNoEpisode) {
		t.Fatalf("Step after Close: %v", err)
	}
}

// TestElasticObservation: elastic jobs show a speedup per count from
// their minimum to the usable devices, and an action may give any count
// in bounds but not more than the type has, alone or in all.
func TestElasticObservation(t *testing.T) {
	_, ws := pollux(t)
	cfg := simConfig(t, "2x4:t4", ws[0].Jobs[:6])
	cfg.Kind, cfg.Oracle = scheduler.Elastic, true
	e, err := env.New(env.Config{Sim: cfg})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	obs, err := e.Reset(1)
	if err != nil {
		t.Fatal(err)
	}
	j := obs.Jobs[0]
	if j.Kind != "elastic" || j.Min != 1 || j.Max < 2 || len(j.Speedups) != 1 {
		t.Fatalf("job view %+v", j)
	}
	sv := j.Speedups[0]
	if sv.From != 1 || len(sv.Values) != min(j.Max, 8) || sv.Values[0] != 1 {
		t.Fatalf("speedups %+v (max %d)", sv, j.Max)
	}
	for k := 1; k < len(sv.Values); k++ {
		if !(sv.Values[k] >= sv.Values[k-1]*0.5) || math.IsNaN(sv.Values[k]) {
			t.Fatalf("speedups %v", sv.Values)
		}
	}
	if obs.Types[0].Devices != 8 || obs.Types[0].Usable != 8 || obs.Types[0].Free != 8 || obs.Types[0].PerNode != 4 || obs.Types[0].Nodes != 2 {
		t.Fatalf("types %+v", obs.Types)
	}
	if j.Max >= 9 {
		if _, err := e.Step(env.Action{Targets: []env.Target{{Job: j.ID, Type: "t4", Count: 9}}}); !errors.Is(err, env.ErrBadAction) {
			t.Fatalf("9 of 8 devices: %v", err)
		}
	}
	st, err := e.Step(env.Action{Targets: []env.Target{{Job: j.ID, Type: "t4", Count: min(j.Max, 8)}}})
	if err != nil {
		t.Fatal(err)
	}
	got := st.Observation.Jobs[0]
	if got.ID != j.ID || got.Count != min(j.Max, 8) || got.Type != "t4" {
		t.Fatalf("after the step: %+v", got)
	}
	held := 0
	for _, d := range st.Observation.Devices {
		if d.Job == j.ID {
			held++
		}
	}
	if held != got.Count || st.Observation.Types[0].Free != 8-held {
		t.Fatalf("devices held %d, free %d", held, st.Observation.Types[0].Free)
	}
	if len(st.Observation.Jobs) > 1 {
		k := st.Observation.Jobs[1]
		a := env.Action{Targets: []env.Target{{Job: j.ID, Type: "t4", Count: got.Count}, {Job: k.ID, Type: "t4", Count: 1}}}
		if got.Count == 8 {
			if _, err := e.Step(a); !errors.Is(err, env.ErrBadAction) {
				t.Fatalf("9 devices in all: %v", err)
			}
		}
	}
}

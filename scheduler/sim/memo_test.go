package sim

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/goodsched/goodsched/scheduler"
	"github.com/goodsched/goodsched/scheduler/baselines"
)

// runNoMemo runs cfg with the engine's per-job memos (step times, rebatch
// outcomes) turned off: every step time is interpolated again and every
// rebatch re-plans.
func runNoMemo(t *testing.T, cfg Config) Result {
	t.Helper()
	if err := cfg.validate(); err != nil {
		t.Fatal(err)
	}
	e, err := newEngine(cfg)
	if err != nil {
		t.Fatal(err)
	}
	e.noMemo = true
	if err := e.loop(context.Background()); err != nil {
		t.Fatal(err)
	}
	r, err := e.result()
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// The memos that make large runs cheap change nothing: with node failures
// and interference (allocations lost and relabelled mid-run), on one type
// and with per-type models on two, adaptive jobs end exactly as they do
// when every step time and batch plan is recomputed.
func TestMemosAreExact(t *testing.T) {
	apps := polluxApps(t)
	m := toyFS()
	m["p/toy/placements-rtx.csv"] = &fstest.MapFile{Data: []byte("local_bsz,step_time,sync_time,placement\n5,0.125,0,1\n10,0.25,0,1\n20,0.5,0,1\n5,0.25,0.1,2\n10,0.4,0.1,2\n5,0.3,0.2,4\n")}
	toy, err := LoadProfiles(ProfileOptions{}, ProfileSource{FS: m, Dir: "p"})
	if err != nil {
		t.Fatal(err)
	}
	var toyJobs []JobSpec
	for i := range 8 {
		toyJobs = append(toyJobs, JobSpec{Name: fmt.Sprintf("j%d", i), Submit: time.Duration(i) * time.Minute, Application: "toy", Replicas: 1 + i%2, BatchSize: 10})
	}
	for _, tc := range []struct {
		name string
		cfg  Config
	}{
		{"faults-interference", Config{Cluster: cluster(t, "4x4:t4"), Jobs: polluxJobs(t, "workloads", "workload-6", 40), Apps: apps,
			Policy: scheduler.Pollux{}, Kind: scheduler.Adaptive, InterferenceSlowdown: 0.25, Faults: Faults{MTBF: 3 * time.Hour, Seed: 7}}},
		{"per-type", Config{Cluster: cluster(t, "1x2:t4,1x4:rtx2080ti"), Jobs: toyJobs, Apps: toy,
			Policy: scheduler.Pollux{}, Kind: scheduler.Adaptive, PerType: true, Faults: Faults{MTBF: 5 * time.Minute, Repair: 10 * time.Minute, Seed: 3}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fast, err := Run(context.Background(), tc.cfg)
			if err != nil {
				t.Fatal(err)
			}
			slow := runNoMemo(t, tc.cfg)
			if fast.Failures == 0 {
				t.Errorf("no node failed: the case does not exercise lost allocations")
			}
			if a, b := transcript(fast), transcript(slow); string(a) != string(b) {
				t.Errorf("memos changed the result:\n%s", firstDiff(a, b))
			}
			if fast.Reports != slow.Reports {
				t.Errorf("memos changed the reports: %d, without %d", fast.Reports, slow.Reports)
			}
		})
	}
}

// The invariant check, which visits only held devices, still catches a
// device serving two jobs, an unhealthy device in use and a device the
// cluster does not have, and passes a consistent state.
func TestInvariantsCatchBadAllocations(t *testing.T) {
	cfg := Config{Cluster: cluster(t, "2x2:t4"), Jobs: polluxJobs(t, "workloads", "workload-6", 2), Apps: polluxApps(t),
		Policy: baselines.FIFO{}}
	if err := cfg.validate(); err != nil {
		t.Fatal(err)
	}
	setup := func(devs0, devs1 []string) *engine {
		e, err := newEngine(cfg)
		if err != nil {
			t.Fatal(err)
		}
		e.live = e.jobs
		e.jobs[0].devs, e.jobs[1].devs = devs0, devs1
		e.indexDevices(e.jobs[0])
		e.indexDevices(e.jobs[1])
		return e
	}
	var ids []string // node 0's two devices, then node 1's
	for _, n := range cfg.Cluster.Nodes {
		for _, d := range n.Devices {
			ids = append(ids, d.ID)
		}
	}
	e := setup(ids[:2], ids[2:])
	for range 3 { // repeated checks of one state agree
		if err := e.checkInvariants(); err != nil {
			t.Fatalf("consistent state: %v", err)
		}
	}
	if err := setup(ids[:2], ids[1:3]).checkInvariants(); !errors.Is(err, ErrLostJob) || !strings.Contains(err.Error(), "serves") {
		t.Errorf("double booking: %v", err)
	}
	e = setup(ids[:2], ids[2:])
	e.setHealth(1, false)
	if err := e.checkInvariants(); !errors.Is(err, ErrLostJob) || !strings.Contains(err.Error(), "unhealthy") {
		t.Errorf("unhealthy device: %v", err)
	}
	if err := setup([]string{"nope"}, nil).checkInvariants(); !errors.Is(err, ErrLostJob) || !strings.Contains(err.Error(), "unknown device") {
		t.Errorf("unknown device: %v", err)
	}
}

package sim

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/goodsched/goodsched/placement"
	"github.com/goodsched/goodsched/scheduler"
	"github.com/goodsched/goodsched/scheduler/baselines"
	"github.com/goodsched/goodsched/scheduler/sim/polluxdata"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/golden")

func polluxApps(t testing.TB) map[string]*Application {
	t.Helper()
	apps, err := LoadProfiles(ProfileOptions{}, ProfileSource{FS: polluxdata.FS, Dir: "traces"})
	if err != nil {
		t.Fatal(err)
	}
	return apps
}

func polluxJobs(t testing.TB, dir, name string, n int) []JobSpec {
	t.Helper()
	ws, err := LoadWorkloads(polluxdata.FS, dir+"/"+name+".csv")
	if err != nil {
		t.Fatal(err)
	}
	return ws[0].Jobs[:min(n, len(ws[0].Jobs))]
}

// transcript renders a result deterministically: a summary line, then the
// per-job CSV.
func transcript(r Result) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "completed %d of %d; avg JCT %.1f s; p50 %.1f s; p99 %.1f s; makespan %.1f s; GPU-hours %.3f; restarts %d; failures %d; avg FTF %.3f\n",
		r.Completed, len(r.Jobs), r.AvgJCT.Seconds(), r.P50JCT.Seconds(), r.P99JCT.Seconds(), r.Makespan.Seconds(), r.GPUHours, r.Restarts, r.Failures, r.AvgFTF)
	_ = r.WriteCSV(&b)
	return b.Bytes()
}

// TestGoldenScenarios replays the first 40 jobs of Pollux workload-6 on a
// 4×4 T4 cluster through the rigid and elastic baselines and the goodput
// policy with adaptive jobs, and compares the
// transcripts with testdata/golden. Run with -update after an intended
// change in the simulator's mechanics or in the baselines.
func TestGoldenScenarios(t *testing.T) {
	apps := polluxApps(t)
	jobs := polluxJobs(t, "workloads", "workload-6", 40)
	cases := []struct {
		name string
		cfg  Config
	}{
		{"fifo-rigid", Config{Policy: baselines.FIFO{}, Kind: scheduler.Rigid}},
		{"tiresias-rigid", Config{Policy: baselines.Tiresias{}, Kind: scheduler.Rigid}},
		{"optimus-oracle", Config{Policy: baselines.Optimus{}, Kind: scheduler.Elastic, Oracle: true}},
		{"tiresias-spread-interference", Config{Policy: baselines.Tiresias{}, Placer: spreadPlacer{}, Kind: scheduler.Rigid, InterferenceSlowdown: 0.25}},
		{"tiresias-faults", Config{Policy: baselines.Tiresias{}, Kind: scheduler.Rigid, Faults: Faults{MTBF: 4 * 3600e9, Seed: 1}}},
		// Pollux's path: adaptive jobs learn their goodput models online
		// from what they measure and the goodput policy sizes them.
		{"goodput-adaptive", Config{Policy: scheduler.Pollux{}, Kind: scheduler.Adaptive}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tc.cfg
			cfg.Cluster, cfg.Jobs, cfg.Apps = cluster(t, "4x4:t4"), jobs, apps
			if cfg.Placer == nil {
				cfg.Placer = placement.Packer{} // independent of the scheduler's default
			}
			res, err := Run(context.Background(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			got := transcript(res)
			path := filepath.Join("testdata", "golden", tc.name+".txt")
			if *update {
				if err := os.WriteFile(path, got, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test -run TestGoldenScenarios -update)", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("transcript differs from %s (rerun with -update if intended):\n%s", path, firstDiff(got, want))
			}
		})
	}
}

func firstDiff(a, b []byte) string {
	la, lb := bytes.Split(a, []byte("\n")), bytes.Split(b, []byte("\n"))
	for i := range max(len(la), len(lb)) {
		var x, y []byte
		if i < len(la) {
			x = la[i]
		}
		if i < len(lb) {
			y = lb[i]
		}
		if !bytes.Equal(x, y) {
			return fmt.Sprintf("line %d:\n got  %s\n want %s", i+1, x, y)
		}
	}
	return ""
}

// TestAdaptiveLearnsOnline checks the adaptive path end to end on real
// profiles: every job completes, the jobs report measurements to their
// Estimators, results are deterministic, and the policy gets speedups that
// are not linear once jobs have run.
func TestAdaptiveLearnsOnline(t *testing.T) {
	apps := polluxApps(t)
	jobs := polluxJobs(t, "workloads", "workload-6", 24)
	cfg := Config{Cluster: cluster(t, "4x4:t4"), Jobs: jobs, Apps: apps, Policy: scheduler.Pollux{}, Kind: scheduler.Adaptive}
	a, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if a.Completed != len(jobs) || a.Reports == 0 {
		t.Fatalf("completed %d of %d, %d reports", a.Completed, len(jobs), a.Reports)
	}
	b, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(transcript(a), transcript(b)) {
		t.Fatal("adaptive run is not deterministic")
	}
	cfg.PerType = true
	c, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if c.Completed != len(jobs) {
		t.Fatalf("per-type: completed %d of %d", c.Completed, len(jobs))
	}
}

// boundRecorder records the exploration bound the simulator offers its
// only job each round.
type boundRecorder struct {
	policy scheduler.Pollux
	bounds []int
}

func (r *boundRecorder) Allocate(ctx context.Context, sr *scheduler.Round) ([]scheduler.Target, error) {
	if b := sr.Input().Jobs[0].MaxReplicas; len(r.bounds) == 0 || r.bounds[len(r.bounds)-1] != b {
		r.bounds = append(r.bounds, b)
	}
	return r.policy.Allocate(ctx, sr)
}

// TestExploreGrowth checks how fast a lone adaptive job may grow: by
// Config.Explore × the most devices it has run on each round, from one
// device (the 64-device cap ends the default ramp).
func TestExploreGrowth(t *testing.T) {
	apps := polluxApps(t)
	jobs := []JobSpec{{Name: "c", Application: "cifar10", Replicas: 1, BatchSize: 128}}
	for _, tc := range []struct {
		explore int
		want    []int
	}{{0, []int{1, 4, 16, 64}}, {2, []int{1, 2, 4, 8, 16}}} {
		rec := &boundRecorder{}
		cfg := Config{Cluster: cluster(t, "16x4:t4"), Jobs: jobs, Apps: apps, Policy: rec, Kind: scheduler.Adaptive, Explore: tc.explore}
		res, err := Run(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		if res.Completed != 1 || !slices.Equal(rec.bounds[:min(len(rec.bounds), len(tc.want))], tc.want) {
			t.Errorf("Explore %d: bounds %v (completed %d), want %v first", tc.explore, rec.bounds, res.Completed, tc.want)
		}
	}
}

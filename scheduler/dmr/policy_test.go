package dmr_test

import (
	"context"
	"testing"

	"github.com/goodsched/goodsched/accel"
	"github.com/goodsched/goodsched/placement"
	"github.com/goodsched/goodsched/scheduler"
	"github.com/goodsched/goodsched/scheduler/baselines"
	"github.com/goodsched/goodsched/scheduler/dmr"
	"github.com/goodsched/goodsched/scheduler/sim"
	"github.com/goodsched/goodsched/scheduler/sim/polluxdata"
)

// TestMalleableBeatsRigid: Pollux's eight default workloads on 16 × 4 T4,
// once with rigid jobs under FIFO, once with malleable jobs (the
// workload's batch, any count) that follow Reconfigure every round: the
// malleable jobs' total completion time is lower.
func TestMalleableBeatsRigid(t *testing.T) {
	apps, err := sim.LoadProfiles(sim.ProfileOptions{}, sim.ProfileSource{FS: polluxdata.FS, Dir: "traces"})
	if err != nil {
		t.Fatal(err)
	}
	ws, err := sim.LoadWorkloads(polluxdata.FS, "workloads")
	if err != nil {
		t.Fatal(err)
	}
	c, _ := accel.ParseSpec("16x4:t4")
	var rigidSum, mallSum float64
	for _, w := range ws {
		rigid, err := sim.Run(context.Background(), sim.Config{Cluster: c, Jobs: w.Jobs, Apps: apps, Policy: baselines.FIFO{}, Kind: scheduler.Rigid, Placer: placement.Packer{}})
		if err != nil {
			t.Fatal(err)
		}
		mall, err := sim.Run(context.Background(), sim.Config{Cluster: c, Jobs: w.Jobs, Apps: apps, Policy: dmr.Policy{}, Kind: scheduler.Elastic, Placer: placement.Packer{}})
		if err != nil {
			t.Fatal(err)
		}
		sum := func(r sim.Result) float64 {
			if r.Completed != len(r.Jobs) {
				t.Fatalf("%s: %d of %d jobs completed", w.Name, r.Completed, len(r.Jobs))
			}
			s := 0.0
			for _, j := range r.Jobs {
				s += j.JCT.Hours()
			}
			return s
		}
		rigidSum += sum(rigid)
		mallSum += sum(mall)
		t.Logf("%s: rigid %.1f job-h (%d done, makespan %.1f h), malleable %.1f job-h (%d done, makespan %.1f h, %d restarts)", w.Name, sum(rigid), rigid.Completed, rigid.Makespan.Hours(), sum(mall), mall.Completed, mall.Makespan.Hours(), mall.Restarts)
	}
	t.Logf("total completion time: rigid %.1f job-h, malleable %.1f job-h (%.1f%% lower)", rigidSum, mallSum, 100*(1-mallSum/rigidSum))
	if !(mallSum < rigidSum) {
		t.Fatalf("malleable jobs took %.1f job-h, rigid ones %.1f", mallSum, rigidSum)
	}
}

// TestPolicyRound: a malleable job alone grows to the free devices; when
// a rigid job queues, the malleable job shrinks and the rigid job starts
// in the same round.
func TestPolicyRound(t *testing.T) {
	c, _ := accel.ParseSpec("1x8:t4")
	ids := func(n int) []string {
		var out []string
		for _, d := range c.Nodes[0].Devices[:n] {
			out = append(out, d.ID)
		}
		return out
	}
	m := scheduler.Job{ID: "m", Kind: scheduler.Elastic, MinReplicas: 1, MaxReplicas: 8, Requested: 2}
	q := scheduler.Job{ID: "q", Kind: scheduler.Rigid, Requested: 4}
	for _, tc := range []struct {
		name string
		in   scheduler.Input
		want map[string]int
	}{
		{"alone", scheduler.Input{Cluster: c, Jobs: []scheduler.Job{m}, Current: []placement.Assignment{{Job: "m", Devices: ids(2)}}}, map[string]int{"m": 8}},
		{"a rigid job queues", scheduler.Input{Cluster: c, Jobs: []scheduler.Job{m, q}, Current: []placement.Assignment{{Job: "m", Devices: ids(8)}}}, map[string]int{"m": 4, "q": 4}},
		{"nothing runs", scheduler.Input{Cluster: c, Jobs: []scheduler.Job{m, q}}, map[string]int{"m": 2, "q": 4}},
	} {
		r, err := scheduler.NewRound(tc.in)
		if err != nil {
			t.Fatal(err)
		}
		tg, err := dmr.Policy{}.Allocate(context.Background(), r)
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]int{}
		for _, x := range tg {
			got[x.Job] = x.Count
		}
		if len(got) != len(tc.want) || got["m"] != tc.want["m"] || got["q"] != tc.want["q"] {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

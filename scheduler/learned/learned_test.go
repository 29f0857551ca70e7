package learned_test

import (
	"context"
	"sync"
	"testing"

	"github.com/goodsched/goodsched/accel"
	"github.com/goodsched/goodsched/placement"
	"github.com/goodsched/goodsched/scheduler"
	"github.com/goodsched/goodsched/scheduler/baselines"
	"github.com/goodsched/goodsched/scheduler/learned"
	"github.com/goodsched/goodsched/scheduler/sim"
	"github.com/goodsched/goodsched/scheduler/sim/polluxdata"
	"github.com/goodsched/goodsched/unrelated"
)

var (
	once  sync.Once
	apps  map[string]*sim.Application
	works []sim.Workload
	err0  error
)

func pollux(t testing.TB) (map[string]*sim.Application, []sim.Workload) {
	t.Helper()
	once.Do(func() {
		apps, err0 = sim.LoadProfiles(sim.ProfileOptions{}, sim.ProfileSource{FS: polluxdata.FS, Dir: "traces"})
		if err0 == nil {
			works, err0 = sim.LoadWorkloads(polluxdata.FS, "workloads")
		}
	})
	if err0 != nil {
		t.Fatal(err0)
	}
	return apps, works
}

func runPolicy(t testing.TB, spec string, jobs []sim.JobSpec, p scheduler.Policy) sim.Result {
	t.Helper()
	a, _ := pollux(t)
	c, err := accel.ParseSpec(spec)
	if err != nil {
		t.Fatal(err)
	}
	res, err := sim.Run(context.Background(), sim.Config{Cluster: c, Jobs: jobs, Apps: a, Policy: p, Kind: scheduler.Rigid, Oracle: true, Placer: placement.Packer{}})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// TestLearnedPolicyInTheSimulator: on a mixed cluster the learned policy
// schedules rigid jobs with only the exported Round (a plan the scheduler
// accepts every round), completes every job FIFO completes, never
// preempts, and gives the same result twice.
func TestLearnedPolicyInTheSimulator(t *testing.T) {
	_, ws := pollux(t)
	jobs := ws[2].Jobs[:40]
	const spec = "4x4:t4,2x8:a100-40gb"
	f := runPolicy(t, spec, jobs, baselines.FIFO{})
	l := runPolicy(t, spec, jobs, learned.Policy{})
	if l.Completed != f.Completed || l.Completed == 0 {
		t.Fatalf("learned completed %d jobs, FIFO %d", l.Completed, f.Completed)
	}
	if l.Restarts != 0 {
		t.Fatalf("%d restarts: the policy preempted", l.Restarts)
	}
	again := runPolicy(t, spec, jobs, learned.Policy{})
	if again.AvgJCT != l.AvgJCT || again.Makespan != l.Makespan {
		t.Fatalf("two runs differ: %v/%v, %v/%v", l.AvgJCT, l.Makespan, again.AvgJCT, again.Makespan)
	}
	t.Logf("average JCT: FIFO %.2f h, learned %.2f h", f.AvgJCT.Hours(), l.AvgJCT.Hours())
}

// TestRoundWithoutWaitingJobs: with nothing waiting, running jobs keep
// their devices and the network is not consulted.
func TestRoundWithoutWaitingJobs(t *testing.T) {
	c, err := accel.ParseSpec("1x4:t4")
	if err != nil {
		t.Fatal(err)
	}
	devs := []string{c.Nodes[0].Devices[0].ID, c.Nodes[0].Devices[1].ID}
	in := scheduler.Input{Cluster: c, Jobs: []scheduler.Job{{ID: "a", Kind: scheduler.Rigid, Requested: 2}},
		Current: []placement.Assignment{{Job: "a", Devices: devs}}}
	r, err := scheduler.NewRound(in)
	if err != nil {
		t.Fatal(err)
	}
	tg, err := learned.Policy{Decider: panicking{}}.Allocate(context.Background(), r)
	if err != nil || len(tg) != 1 || tg[0].Count != 2 {
		t.Fatalf("targets %+v, %v", tg, err)
	}
}

type panicking struct{}

func (panicking) Decide(*unrelated.State) unrelated.Action { panic("consulted") }

// BenchmarkCompareFIFO compares average JCTs on Pollux's eight default
// workloads (their first 80 jobs, rigid, oracle remaining work) on a
// mixed cluster: FIFO, the learned order and the paper's rule (go test
// -run '^$' -bench CompareFIFO -benchtime 1x ./scheduler/learned).
func BenchmarkCompareFIFO(b *testing.B) {
	_, ws := pollux(b)
	const spec = "4x4:t4,2x8:a100-40gb"
	for i := 0; i < b.N; i++ {
		var f, l, r float64
		for _, w := range ws {
			jobs := w.Jobs[:80]
			f += runPolicy(b, spec, jobs, baselines.FIFO{}).AvgJCT.Hours() / float64(len(ws))
			l += runPolicy(b, spec, jobs, learned.Policy{}).AvgJCT.Hours() / float64(len(ws))
			r += runPolicy(b, spec, jobs, learned.Policy{Decider: unrelated.Rule{}}).AvgJCT.Hours() / float64(len(ws))
		}
		b.ReportMetric(f, "fifo-jct-h")
		b.ReportMetric(l, "learned-jct-h")
		b.ReportMetric(r, "rule-jct-h")
	}
}

package dmr

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/goodsched/goodsched/accel"
	"github.com/goodsched/goodsched/scheduler"
	"github.com/goodsched/goodsched/scheduler/baselines"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func cluster(t *testing.T, spec string) accel.Cluster {
	t.Helper()
	c, err := accel.ParseSpec(spec)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestReconfigureAnswers(t *testing.T) {
	malleable := scheduler.Job{ID: "m", Kind: scheduler.Elastic, MinReplicas: 2, MaxReplicas: 8, Submitted: t0}
	types := cluster(t, "1x8:t4").Types()
	typ := types[0]
	run := func(id string, n int) scheduler.Decision { return scheduler.Decision{Job: id, Type: typ, To: n} }
	wait := func(id string) scheduler.Decision { return scheduler.Decision{Job: id} }
	cases := []struct {
		name    string
		jobs    []scheduler.Job
		plan    []scheduler.Decision
		verdict Verdict
		to      int
	}{
		{"spare devices: expand to all free", []scheduler.Job{malleable}, []scheduler.Decision{run("m", 4)}, Expand, 8},
		{"spare devices: expand up to the maximum", []scheduler.Job{{ID: "m", Kind: scheduler.Elastic, MinReplicas: 2, MaxReplicas: 6}},
			[]scheduler.Decision{run("m", 4)}, Expand, 6},
		{"queued job needs more than free: shrink", []scheduler.Job{malleable, {ID: "q", Kind: scheduler.Rigid, Requested: 4, Submitted: t0}},
			[]scheduler.Decision{run("m", 6), wait("q")}, Shrink, 4},
		{"queued job fits free devices: none", []scheduler.Job{malleable, {ID: "q", Kind: scheduler.Rigid, Requested: 2, Submitted: t0}},
			[]scheduler.Decision{run("m", 6), wait("q")}, None, 6},
		{"shrinking to the minimum is not enough: none", []scheduler.Job{malleable, {ID: "q", Kind: scheduler.Rigid, Requested: 7, Submitted: t0}},
			[]scheduler.Decision{run("m", 6), wait("q")}, None, 6},
		{"full cluster, nothing queued: none", []scheduler.Job{malleable, {ID: "r", Kind: scheduler.Rigid, Requested: 2}},
			[]scheduler.Decision{run("m", 6), run("r", 2)}, None, 6},
		{"at the maximum: none", []scheduler.Job{{ID: "m", Kind: scheduler.Elastic, MinReplicas: 1, MaxReplicas: 4}},
			[]scheduler.Decision{run("m", 4)}, None, 4},
		{"two malleable jobs give the shortfall together: shrink to the minimum",
			[]scheduler.Job{malleable, {ID: "n", Kind: scheduler.Elastic, MinReplicas: 2, MaxReplicas: 8, Submitted: t0}, {ID: "q", Kind: scheduler.Rigid, Requested: 3, Submitted: t0}},
			[]scheduler.Decision{run("m", 4), run("n", 4), wait("q")}, Shrink, 2},
		{"all malleable jobs together cannot give the shortfall: none",
			[]scheduler.Job{malleable, {ID: "n", Kind: scheduler.Elastic, MinReplicas: 2, MaxReplicas: 8, Submitted: t0}, {ID: "q", Kind: scheduler.Rigid, Requested: 5, Submitted: t0}},
			[]scheduler.Decision{run("m", 4), run("n", 4), wait("q")}, None, 4},
		{"rigid job: none", []scheduler.Job{{ID: "m", Kind: scheduler.Rigid, Requested: 4}}, []scheduler.Decision{run("m", 4)}, None, 4},
		{"not running: none", []scheduler.Job{malleable}, []scheduler.Decision{wait("m")}, None, 0},
		{"queued job for another type is ignored", []scheduler.Job{malleable, {ID: "q", Kind: scheduler.Rigid, Requested: 4, Types: []accel.TypeKey{"a100"}}},
			[]scheduler.Decision{run("m", 6), wait("q")}, Expand, 8},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			in := scheduler.Input{Cluster: cluster(t, "1x8:t4"), Jobs: c.jobs, Now: t0}
			a, err := New(in, scheduler.Plan{Decisions: c.plan})
			if err != nil {
				t.Fatal(err)
			}
			got, err := a.Reconfigure("m", t0.Add(time.Minute))
			if err != nil {
				t.Fatal(err)
			}
			if got.Verdict != c.verdict || got.To != c.to || got.Reason == "" {
				t.Fatalf("got %v to %d (%q), want %v to %d", got.Verdict, got.To, got.Reason, c.verdict, c.to)
			}
		})
	}
}

func TestReconfigureErrors(t *testing.T) {
	in := scheduler.Input{Cluster: cluster(t, "1x8:t4"), Jobs: []scheduler.Job{{ID: "m", Kind: scheduler.Elastic}}, Now: t0}
	if _, err := New(in, scheduler.Plan{}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("plan without the job's decision: %v", err)
	}
	a, err := New(in, scheduler.Plan{Decisions: []scheduler.Decision{{Job: "m"}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Reconfigure("x", t0); !errors.Is(err, ErrUnknownJob) {
		t.Fatalf("unknown job: %v", err)
	}
	if _, err := a.Reconfigure("m", t0.Add(-time.Second)); !errors.Is(err, ErrInvalid) {
		t.Fatalf("time before the round: %v", err)
	}
}

// TestReconfigureOnSchedulersPlan asks about a plan Schedule made: a
// malleable job alone on the cluster is told to use what is free, or to
// keep its size when it already has everything.
func TestReconfigureOnSchedulersPlan(t *testing.T) {
	s, err := scheduler.New(scheduler.Config{Policy: baselines.FIFO{}})
	if err != nil {
		t.Fatal(err)
	}
	in := scheduler.Input{Cluster: cluster(t, "1x8:t4"), Now: t0, Jobs: []scheduler.Job{
		{ID: "m", Kind: scheduler.Elastic, MinReplicas: 2, MaxReplicas: 8, Requested: 2, Submitted: t0},
	}}
	plan, err := s.Schedule(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	a, err := New(in, plan)
	if err != nil {
		t.Fatal(err)
	}
	got, err := a.Reconfigure("m", t0)
	if err != nil {
		t.Fatal(err)
	}
	d, _ := plan.Decision("m")
	want := None
	if d.To < 8 {
		want = Expand
	}
	if got.Verdict != want || (want == Expand && got.To != 8) {
		t.Fatalf("plan gives %d devices; got %v to %d (%s)", d.To, got.Verdict, got.To, got.Reason)
	}
}

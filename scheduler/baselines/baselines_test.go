package baselines_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/goodsched/goodsched/accel"
	"github.com/goodsched/goodsched/placement"
	"github.com/goodsched/goodsched/scheduler"
	"github.com/goodsched/goodsched/scheduler/baselines"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// counts schedules in with pol and returns each job's device count,
// checking that the plan gives no device twice and realises every count.
func counts(t *testing.T, pol scheduler.Policy, in scheduler.Input) map[string]int {
	t.Helper()
	s, err := scheduler.New(scheduler.Config{Policy: pol})
	if err != nil {
		t.Fatal(err)
	}
	plan, err := s.Schedule(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	out := make(map[string]int)
	held := make(map[string]string)
	for _, d := range plan.Decisions {
		if len(d.Assignment.Devices) != d.To {
			t.Errorf("%s: %d devices for a count of %d", d.Job, len(d.Assignment.Devices), d.To)
		}
		for _, id := range d.Assignment.Devices {
			if o, ok := held[id]; ok {
				t.Errorf("device %s given to %s and %s", id, o, d.Job)
			}
			held[id] = d.Job
		}
		out[d.Job] = d.To
	}
	return out
}

func TestBaselines(t *testing.T) {
	cl, err := accel.ParseSpec("2x4:t4") // 8 devices
	if err != nil {
		t.Fatal(err)
	}
	h := time.Hour
	all := []string{"t4-0/0", "t4-0/1", "t4-0/2", "t4-0/3", "t4-1/0", "t4-1/1", "t4-1/2", "t4-1/3"}
	cases := []struct {
		name string
		pol  scheduler.Policy
		in   scheduler.Input
		want map[string]int
	}{
		{"fifo order and backfill", baselines.FIFO{}, scheduler.Input{Cluster: cl, Now: t0.Add(h), Jobs: []scheduler.Job{
			{ID: "a", Submitted: t0, Requested: 4},
			{ID: "b", Submitted: t0.Add(time.Minute), Requested: 8}, // does not fit: waits
			{ID: "c", Submitted: t0.Add(2 * time.Minute), Requested: 2},
		}}, map[string]int{"a": 4, "b": 0, "c": 2}},
		{"fifo never preempts", baselines.FIFO{}, scheduler.Input{Cluster: cl, Now: t0.Add(h), Jobs: []scheduler.Job{
			{ID: "old", Submitted: t0.Add(time.Minute), Requested: 8},
			{ID: "new", Submitted: t0, Requested: 4, Priority: 5},
		}, Current: []placement.Assignment{{Job: "old", Devices: all}}},
			map[string]int{"old": 8, "new": 0}},
		{"fifo priority first", baselines.FIFO{}, scheduler.Input{Cluster: cl, Now: t0.Add(h), Jobs: []scheduler.Job{
			{ID: "a", Submitted: t0, Requested: 8},
			{ID: "b", Submitted: t0.Add(time.Minute), Requested: 8, Priority: 1},
		}}, map[string]int{"a": 0, "b": 8}},
		{"tiresias demotes at 16 GPU-hours", baselines.Tiresias{}, scheduler.Input{Cluster: cl, Now: t0.Add(h), Jobs: []scheduler.Job{
			{ID: "hog", Submitted: t0, Requested: 8, Attained: 20 * h},
			{ID: "fresh", Submitted: t0.Add(time.Minute), Requested: 8, Attained: h},
		}}, map[string]int{"hog": 0, "fresh": 8}},
		{"tiresias custom threshold", baselines.Tiresias{Threshold: 30 * h}, scheduler.Input{Cluster: cl, Now: t0.Add(h), Jobs: []scheduler.Job{
			{ID: "hog", Submitted: t0, Requested: 8, Attained: 20 * h},
			{ID: "fresh", Submitted: t0.Add(time.Minute), Requested: 8, Attained: h},
		}}, map[string]int{"hog": 8, "fresh": 0}},
		{"optimus favours long jobs' marginal gain", baselines.Optimus{}, scheduler.Input{Cluster: cl, Now: t0.Add(h), Jobs: []scheduler.Job{
			{ID: "long", Kind: scheduler.Elastic, MinReplicas: 1, MaxReplicas: 8, RemainingWork: 1000},
			{ID: "short", Kind: scheduler.Elastic, MinReplicas: 1, MaxReplicas: 8, RemainingWork: 10},
		}}, map[string]int{"long": 7, "short": 1}},
		{"optimus rigid gets requested", baselines.Optimus{}, scheduler.Input{Cluster: cl, Now: t0.Add(h), Jobs: []scheduler.Job{
			{ID: "r", Kind: scheduler.Rigid, Requested: 2, RemainingWork: 5},
			{ID: "e", Kind: scheduler.Elastic, MinReplicas: 1, MaxReplicas: 8, RemainingWork: 50},
		}}, map[string]int{"r": 2, "e": 6}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := counts(t, c.pol, c.in)
			for id, n := range c.want {
				if got[id] != n {
					t.Errorf("%s: %d devices, want %d (all: %v)", id, got[id], n, got)
				}
			}
		})
	}
}

// A negative Tiresias threshold fails when the Scheduler is built and
// when the policy is called on its own.
func TestTiresiasNegativeThreshold(t *testing.T) {
	p := baselines.Tiresias{Threshold: -time.Hour}
	if _, err := scheduler.New(scheduler.Config{Policy: p}); !errors.Is(err, scheduler.ErrInvalid) {
		t.Errorf("New: err %v, want ErrInvalid", err)
	}
	if _, err := scheduler.New(scheduler.Config{Policy: (*baselines.Tiresias)(nil)}); !errors.Is(err, scheduler.ErrInvalid) {
		t.Errorf("New with a nil *Tiresias: err %v, want ErrInvalid", err)
	}
	cl, _ := accel.ParseSpec("1x4:t4")
	r, err := scheduler.NewRound(scheduler.Input{Cluster: cl, Now: t0, Jobs: []scheduler.Job{{ID: "a", Submitted: t0}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Allocate(context.Background(), r); !errors.Is(err, scheduler.ErrInvalid) {
		t.Errorf("Allocate: err %v, want ErrInvalid", err)
	}
}

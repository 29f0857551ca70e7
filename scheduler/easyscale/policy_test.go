package easyscale_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/goodsched/goodsched/accel"
	"github.com/goodsched/goodsched/goodput"
	"github.com/goodsched/goodsched/placement"
	"github.com/goodsched/goodsched/scheduler"
	"github.com/goodsched/goodsched/scheduler/easyscale"
)

// model is a W-job's model on t4 and a100-40gb, the A100 3× faster.
func model(t testing.TB, w int) *goodput.WorkerModel {
	t.Helper()
	slow := goodput.Params{AlphaC: 0.01, BetaC: 0.003, AlphaR: 0.01, BetaR: 0.002, AlphaN: 0.05, BetaN: 0.005, Gamma: 2}
	fast := slow
	fast.AlphaC, fast.BetaC = slow.AlphaC/3, slow.BetaC/3
	m, err := goodput.NewWorkerModel(goodput.WorkerConfig{Workers: w, Local: 32,
		Models: map[string]goodput.Model{"t4": {Params: slow}, "a100-40gb": {Params: fast}}})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func cluster(t testing.TB, spec string) accel.Cluster {
	t.Helper()
	c, err := accel.ParseSpec(spec)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// checkW asserts that every W-job's assignment hosts exactly its W
// workers, one at least per device, in types matching its shares.
func checkW(t *testing.T, c accel.Cluster, jobs []scheduler.Job, plan scheduler.Plan) {
	t.Helper()
	for _, j := range jobs {
		d, ok := plan.Decision(j.ID)
		if !ok {
			t.Fatalf("job %s lost", j.ID)
		}
		if d.To == 0 {
			continue
		}
		a := d.Assignment
		if len(a.Workers) != len(a.Devices) || len(a.Devices) > j.Workers {
			t.Fatalf("job %s: %d devices, workers %v, W=%d", j.ID, len(a.Devices), a.Workers, j.Workers)
		}
		sum := 0
		for _, w := range a.Workers {
			if w < 1 {
				t.Fatalf("job %s: a device hosts %d workers", j.ID, w)
			}
			sum += w
		}
		if sum != j.Workers {
			t.Fatalf("job %s: W changed: %d workers hosted, W=%d", j.ID, sum, j.Workers)
		}
		types := map[accel.TypeKey]int{}
		for _, id := range a.Devices {
			dev, ok := c.Device(id)
			if !ok {
				t.Fatalf("unknown device %s", id)
			}
			types[dev.Type]++
		}
		if len(types) > 1 && len(d.Shares) != len(types) {
			t.Fatalf("job %s: %d types but shares %v", j.ID, len(types), d.Shares)
		}
		for _, s := range d.Shares {
			if types[s.Type] != s.Count {
				t.Fatalf("job %s: shares %v, devices per type %v", j.ID, d.Shares, types)
			}
		}
	}
}

// One job on two GPU types: it starts on a T4 (the smallest proposal),
// trades it for the A100s, then grows onto T4s when the A100s are full,
// and keeps W = 8.
func TestPolicyMixesTypes(t *testing.T) {
	c := cluster(t, "1x2:a100-40gb,1x4:t4")
	s, err := scheduler.New(scheduler.Config{Policy: easyscale.Policy{}})
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Unix(0, 0)
	jobs := []scheduler.Job{{ID: "w", Submitted: t0, Kind: scheduler.Elastic, MinReplicas: 1, Workers: 8, Speedup: model(t, 8)}}
	var cur []placement.Assignment
	var trail []string
	for round := range 5 {
		plan, err := s.Schedule(context.Background(), scheduler.Input{Cluster: c, Jobs: jobs, Current: cur, Now: t0.Add(time.Duration(round) * time.Minute)})
		if err != nil {
			t.Fatal(err)
		}
		checkW(t, c, jobs, plan)
		d, _ := plan.Decision("w")
		trail = append(trail, d.Message)
		cur = plan.Assignments()
	}
	got := strings.Join(trail, "\n")
	if !strings.Contains(got, "→2×a100-40gb") || !strings.HasPrefix(trail[0], "started on 1×t4") {
		t.Fatalf("expected a start on one T4 and a mixed gang later:\n%s", got)
	}
	d := cur[0]
	if len(d.Devices) < 3 {
		t.Fatalf("the job did not grow: %+v\n%s", d, got)
	}
}

// W is the same before and after every resize: random jobs, arrivals
// and completions over many rounds, for both variants.
func TestPolicyKeepsW(t *testing.T) {
	c := cluster(t, "2x4:t4,1x8:a100-40gb")
	for _, homo := range []bool{false, true} {
		s, err := scheduler.New(scheduler.Config{Policy: easyscale.Policy{Homogeneous: homo}})
		if err != nil {
			t.Fatal(err)
		}
		r := rand.New(rand.NewPCG(1, 2))
		t0 := time.Unix(0, 0)
		var jobs []scheduler.Job
		var cur []placement.Assignment
		models := map[int]*goodput.WorkerModel{}
		for round := range 60 {
			if r.IntN(3) == 0 {
				w := 1 + r.IntN(12)
				if models[w] == nil {
					models[w] = model(t, w)
				}
				j := scheduler.Job{ID: fmt.Sprintf("j%02d", round), Submitted: t0.Add(time.Duration(round) * time.Minute), Kind: scheduler.Elastic, MinReplicas: 1, Workers: w, Speedup: models[w]}
				if r.IntN(4) == 0 {
					j.Types = []accel.TypeKey{"t4"}
				}
				jobs = append(jobs, j)
			}
			if len(jobs) > 0 && r.IntN(5) == 0 {
				jobs = jobs[1:] // the oldest completes
			}
			plan, err := s.Schedule(context.Background(), scheduler.Input{Cluster: c, Jobs: jobs, Current: cur, Now: t0.Add(time.Duration(round) * time.Minute)})
			if err != nil {
				t.Fatal(err)
			}
			checkW(t, c, jobs, plan)
			for _, d := range plan.Decisions {
				if homo && len(d.Shares) > 1 {
					t.Fatalf("homogeneous policy mixed job %s: %v", d.Job, d.Shares)
				}
				if d.Action == placement.Shrink || d.Action == placement.Stop {
					t.Fatalf("job %s: %s", d.Job, d.Message)
				}
			}
			cur = plan.Assignments()
		}
	}
}

// Bad W input is a typed error naming the job, never a panic.
func TestBadWorkers(t *testing.T) {
	c := cluster(t, "1x4:t4,1x4:a100-40gb")
	t0 := time.Unix(0, 0)
	s, _ := scheduler.New(scheduler.Config{Policy: easyscale.Policy{}})
	ok := scheduler.Job{ID: "w", Submitted: t0, Kind: scheduler.Elastic, MinReplicas: 1, Workers: 4, Speedup: model(t, 4)}
	t4 := func(n int) []string {
		var out []string
		for _, d := range c.Nodes[1].Devices[:n] {
			out = append(out, d.ID)
		}
		return out
	}
	if c.Nodes[1].Devices[0].Type != "t4" {
		t4 = func(n int) []string {
			var out []string
			for _, d := range c.Nodes[0].Devices[:n] {
				out = append(out, d.ID)
			}
			return out
		}
	}
	for name, in := range map[string]scheduler.Input{
		"negative W":               {Jobs: []scheduler.Job{func() scheduler.Job { j := ok; j.Workers = -1; return j }()}},
		"W below min":              {Jobs: []scheduler.Job{func() scheduler.Job { j := ok; j.MinReplicas = 5; j.Speedup = nil; return j }()}},
		"model of another W":       {Jobs: []scheduler.Job{func() scheduler.Job { j := ok; j.Workers = 3; return j }()}},
		"more devices than W":      {Jobs: []scheduler.Job{ok}, Current: []placement.Assignment{{Job: "w", Devices: append(t4(4), c.Nodes[0].Devices[0].ID)}}},
		"workers not summing to W": {Jobs: []scheduler.Job{ok}, Current: []placement.Assignment{{Job: "w", Devices: t4(2), Workers: []int{1, 1}}}},
		"device with no worker":    {Jobs: []scheduler.Job{ok}, Current: []placement.Assignment{{Job: "w", Devices: t4(2), Workers: []int{4, 0}}}},
	} {
		in.Cluster, in.Now = c, t0
		_, err := s.Schedule(context.Background(), in)
		if !errors.Is(err, scheduler.ErrInvalid) || !strings.Contains(err.Error(), `"w"`) {
			t.Errorf("%s: %v, want ErrInvalid naming job w", name, err)
		}
	}
}

package scheduler

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/goodsched/goodsched/accel"
	"github.com/goodsched/goodsched/goodput"
	"github.com/goodsched/goodsched/placement"
)

// fixedTargets is a policy that returns the same targets every round.
type fixedTargets []Target

func (f fixedTargets) Allocate(context.Context, *Round) ([]Target, error) { return f, nil }

func gangModel(t testing.TB, w int) *goodput.WorkerModel {
	t.Helper()
	p := goodput.Params{AlphaC: 0.01, BetaC: 0.002, AlphaR: 0.01, AlphaN: 0.03, Gamma: 1}
	m, err := goodput.NewWorkerModel(goodput.WorkerConfig{Workers: w, Local: 16,
		Models: map[string]goodput.Model{"t4": {Params: p}, "a100": {Params: p}}})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func typesOf(c accel.Cluster, devs []string) map[accel.TypeKey]int {
	out := map[accel.TypeKey]int{}
	for _, id := range devs {
		d, _ := c.Device(id)
		out[d.Type]++
	}
	return out
}

// A target with shares of two types is placed per type, the workers
// spread within each type; the next round keeps it as it is.
func TestGangPlacedPerType(t *testing.T) {
	c := testCluster(group{2, 4, "t4"}, group{1, 4, "a100"})
	w := Job{ID: "w", Kind: Elastic, MinReplicas: 1, Workers: 7, Speedup: gangModel(t, 7)}
	tg := fixedTargets{{Job: "w", Count: 5, Shares: []placement.Share{{Type: "t4", Count: 2, Workers: 2}, {Type: "a100", Count: 3, Workers: 5}}}}
	plan := scheduleOnce(t, tg, Input{Cluster: c, Jobs: []Job{w}, Now: t0})
	d, _ := plan.Decision("w")
	if d.To != 5 || d.Type != "" || len(d.Shares) != 2 || d.Action != placement.Start {
		t.Fatalf("decision %+v", d)
	}
	if got := typesOf(c, d.Assignment.Devices); got["t4"] != 2 || got["a100"] != 3 {
		t.Fatalf("devices per type %v", got)
	}
	per := map[accel.TypeKey][]int{}
	for k, id := range d.Assignment.Devices {
		dev, _ := c.Device(id)
		per[dev.Type] = append(per[dev.Type], d.Assignment.Workers[k])
	}
	if !slices.Equal(per["t4"], []int{1, 1}) || !slices.Equal(per["a100"], []int{2, 2, 1}) {
		t.Fatalf("workers per device %v", per)
	}
	if !strings.Contains(d.Message, "started on 2×t4+3×a100") && !strings.Contains(d.Message, "started on 3×a100+2×t4") {
		t.Fatalf("message %q", d.Message)
	}
	// The next round: the same target keeps the gang and its workers.
	in := Input{Cluster: c, Jobs: []Job{w}, Current: plan.Assignments(), Now: t0}
	again := scheduleOnce(t, tg, in)
	d2, _ := again.Decision("w")
	if d2.Action != placement.Keep || !slices.Equal(d2.Assignment.Workers, d.Assignment.Workers) {
		t.Fatalf("second round %+v", d2)
	}
	// Shrinking to one type keeps W on fewer devices.
	one := scheduleOnce(t, fixedTargets{{Job: "w", Type: "a100", Count: 3}}, in)
	d3, _ := one.Decision("w")
	if d3.To != 3 || d3.Type != "a100" || len(d3.Shares) != 0 || d3.Assignment.Workers[0]+d3.Assignment.Workers[1]+d3.Assignment.Workers[2] != 7 {
		t.Fatalf("to one type: %+v", d3)
	}
}

// A part that cannot be placed leaves the job on what it held.
func TestGangUnplacedKeepsCurrent(t *testing.T) {
	c := testCluster(group{1, 4, "t4"}, group{1, 2, "a100"})
	w := Job{ID: "w", Kind: Elastic, MinReplicas: 1, Workers: 6, Speedup: gangModel(t, 6)}
	pin := Job{ID: "p", Kind: Rigid, Requested: 1, NonPreemptible: true}
	first := scheduleOnce(t, fixedTargets{
		{Job: "w", Count: 2, Shares: []placement.Share{{Type: "t4", Count: 1, Workers: 3}, {Type: "a100", Count: 1, Workers: 3}}},
		{Job: "p", Type: "a100", Count: 1},
	}, Input{Cluster: c, Jobs: []Job{w, pin}, Now: t0})
	in := Input{Cluster: c, Jobs: []Job{w, pin}, Current: first.Assignments(), Now: t0}
	// Two A100s for w: one is pinned to p.
	plan := scheduleOnce(t, fixedTargets{{Job: "w", Count: 3, Shares: []placement.Share{{Type: "t4", Count: 1, Workers: 2}, {Type: "a100", Count: 2, Workers: 4}}}}, in)
	d, _ := plan.Decision("w")
	before, _ := first.Decision("w")
	if !placement.SameDevices(d.Assignment.Devices, before.Assignment.Devices) || d.Reason == ReasonObjective {
		t.Fatalf("expected w to keep its gang, unplaced: %+v", d)
	}
}

// Shares that a job cannot take are the policy's fault, named.
func TestGangBadShares(t *testing.T) {
	c := testCluster(group{1, 4, "t4"}, group{1, 4, "a100"})
	w := Job{ID: "w", Kind: Elastic, MinReplicas: 1, Workers: 4, Speedup: gangModel(t, 4)}
	plain := Job{ID: "x", Kind: Elastic, MinReplicas: 1, Workers: 4}
	for name, c2 := range map[string]struct {
		job Job
		tg  Target
	}{
		"cannot mix":     {plain, Target{Job: "x", Count: 2, Shares: []placement.Share{{Type: "t4", Count: 1, Workers: 2}, {Type: "a100", Count: 1, Workers: 2}}}},
		"workers sum":    {w, Target{Job: "w", Count: 2, Shares: []placement.Share{{Type: "t4", Count: 1, Workers: 1}, {Type: "a100", Count: 1, Workers: 2}}}},
		"count mismatch": {w, Target{Job: "w", Count: 3, Shares: []placement.Share{{Type: "t4", Count: 1, Workers: 2}, {Type: "a100", Count: 1, Workers: 2}}}},
		"idle device":    {w, Target{Job: "w", Count: 4, Shares: []placement.Share{{Type: "t4", Count: 3, Workers: 2}, {Type: "a100", Count: 1, Workers: 2}}}},
		"type twice":     {w, Target{Job: "w", Count: 2, Shares: []placement.Share{{Type: "t4", Count: 1, Workers: 2}, {Type: "t4", Count: 1, Workers: 2}}}},
		"above W":        {w, Target{Job: "w", Type: "t4", Count: 5}},
	} {
		s, _ := New(Config{Policy: fixedTargets{c2.tg}})
		_, err := s.Schedule(context.Background(), Input{Cluster: c, Jobs: []Job{c2.job}, Now: t0})
		if !errors.Is(err, ErrPolicy) || !strings.Contains(err.Error(), `"`+c2.job.ID+`"`) {
			t.Errorf("%s: %v, want ErrPolicy naming the job", name, err)
		}
	}
	// A gang of two types in Current for a job that is not a W-job.
	_, err := NewRound(Input{Cluster: c, Jobs: []Job{{ID: "n", Kind: Elastic}}, Current: []placement.Assignment{{Job: "n", Devices: []string{c.Nodes[0].Devices[0].ID, c.Nodes[1].Devices[0].ID}}}})
	if !errors.Is(err, ErrInvalid) {
		t.Errorf("mixed current of a plain job: %v", err)
	}
}

// FuzzGangs feeds W-jobs random current gangs (of one or two types, with
// or without worker counts) and random targets with shares: Schedule
// never panics, fails only with the package's sentinels, and every W-job
// that runs hosts exactly its W workers.
func FuzzGangs(f *testing.F) {
	f.Add([]byte{4, 1, 2, 3, 0, 1, 2, 2, 1, 1})
	f.Add([]byte{8, 3, 3, 2, 2, 5, 1, 0, 0, 9})
	f.Add([]byte{1, 0, 0, 0, 0, 0, 0, 0, 0, 0})
	models := map[int]*goodput.WorkerModel{}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) < 10 {
			return
		}
		c := testCluster(group{2, 4, "t4"}, group{1, 4, "a100"})
		w := int(data[0]%10) - 1
		if models[w] == nil && w > 0 {
			models[w] = gangModel(t, w)
		}
		j := Job{ID: "w", Kind: Elastic, MinReplicas: 1, Workers: w}
		if w > 0 && data[1]%3 != 0 {
			j.Speedup = models[w]
		}
		var cur []placement.Assignment
		if n4, na := int(data[2]%4), int(data[3]%3); n4+na > 0 {
			a := placement.Assignment{Job: "w"}
			for k := range n4 {
				a.Devices = append(a.Devices, c.Nodes[k%2].Devices[k/2].ID)
			}
			for k := range na {
				a.Devices = append(a.Devices, c.Nodes[2].Devices[k].ID)
			}
			if data[4]%2 == 0 {
				for k := range a.Devices {
					a.Workers = append(a.Workers, int(data[5+k%5]%4))
				}
			}
			cur = append(cur, a)
		}
		tg := Target{Job: "w", Count: int(data[5]%4) + int(data[6]%3)}
		if data[7]%2 == 0 {
			tg.Shares = []placement.Share{{Type: "t4", Count: int(data[5] % 4), Workers: int(data[8] % 8)}, {Type: "a100", Count: int(data[6] % 3), Workers: int(data[9] % 8)}}
		} else {
			tg.Type = "t4"
		}
		s, _ := New(Config{Policy: fixedTargets{tg}})
		plan, err := s.Schedule(context.Background(), Input{Cluster: c, Jobs: []Job{j}, Current: cur, Now: t0})
		if err != nil {
			if !errors.Is(err, ErrInvalid) && !errors.Is(err, ErrPolicy) {
				t.Fatalf("unexpected error %v", err)
			}
			return
		}
		d, _ := plan.Decision("w")
		if d.To == 0 || w <= 0 {
			return
		}
		sum := 0
		for _, x := range d.Assignment.Workers {
			if x < 1 {
				t.Fatalf("a device hosts %d workers: %+v", x, d)
			}
			sum += x
		}
		if sum != w || len(d.Assignment.Workers) != len(d.Assignment.Devices) {
			t.Fatalf("W=%d, decision %+v", w, d)
		}
	})
}

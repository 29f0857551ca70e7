package sim

import (
	"context"
	"errors"
	"math"
	"testing"
	"time"

	"github.com/goodsched/goodsched/scheduler/baselines"
	"github.com/goodsched/goodsched/variability"
)

// TestVariabilityHandComputed: a job runs at 1 / its gang's largest
// factor, episodes included.
func TestVariabilityHandComputed(t *testing.T) {
	c := cluster(t, "1x1:t4")
	dev := c.Nodes[0].Devices[0].ID
	truth := variability.NewTable("classB")
	if err := truth.Set(dev, "classB", 1.5); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		v    *Variability
		want float64
	}{
		{"none", nil, 230},
		{"a 1.5× device", &Variability{Truth: truth}, 30 + 300},
		// 2× from the start on top of 1.5×: 600 s of work after the stall.
		{"an episode", &Variability{Truth: truth, Episodes: []variability.Episode{{Node: c.Nodes[0].Name, End: time.Hour, Factor: 2}}}, 30 + 600},
	} {
		res, err := Run(context.Background(), Config{Cluster: c, Apps: toyApps(t, ProfileOptions{}), Policy: baselines.FIFO{},
			Jobs: []JobSpec{{Name: "a", Application: "toy", Replicas: 1, BatchSize: 10}}, Variability: tc.v})
		if err != nil {
			t.Fatal(err)
		}
		if got := secs(res.Jobs[0].JCT); math.Abs(got-tc.want) > 1e-6 {
			t.Errorf("%s: JCT %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestVariabilityEstimatorInSim: the simulator's reports teach the
// estimator a 2× episode on one node within 5 reports from gangs on it,
// and it forgets it within 5 reports after it ends; the scheduler sees
// it through Input.Speeds.
func TestVariabilityEstimatorInSim(t *testing.T) {
	c := cluster(t, "2x1:t4")
	slow := c.Nodes[0].Devices[0].ID
	start, end := 100*time.Second, 200*time.Second
	cfg := Config{Cluster: c, Apps: toyApps(t, ProfileOptions{}), Policy: baselines.FIFO{}, Interval: 10 * time.Second, EveryRound: true,
		Jobs: []JobSpec{
			{Name: "a", Application: "toy", Replicas: 1, BatchSize: 10},
			{Name: "b", Application: "toy", Replicas: 1, BatchSize: 10},
		},
		Variability: &Variability{Episodes: []variability.Episode{{Node: c.Nodes[0].Name, Start: start, End: end, Factor: 2}}}}
	if err := cfg.validate(); err != nil {
		t.Fatal(err)
	}
	e, err := newEngine(cfg)
	if err != nil {
		t.Fatal(err)
	}
	learned, forgot := -1, -1
	during, after := 0, 0
	e.cfg.Progress = func(Status) {
		// The report of the round that just ended was made at e.now − 10 s.
		at := dur(e.now) - 10*time.Second
		est := e.speed.est.Slowdown(slow, "classB")
		switch {
		case at >= start && at < end:
			during++
			if learned < 0 && math.Abs(est-2) <= 0.2 {
				learned = during
			}
		case at >= end:
			after++
			if forgot < 0 && math.Abs(est-1) <= 0.1 {
				forgot = after
			}
		}
	}
	if err := e.loop(context.Background()); err != nil {
		t.Fatal(err)
	}
	if learned < 1 || learned > 5 {
		t.Errorf("2× learned after %d reports from gangs on the node, want 1..5", learned)
	}
	if forgot < 1 || forgot > 5 {
		t.Errorf("forgotten after %d reports, want 1..5", forgot)
	}
	t.Logf("learned after %d reports, forgotten after %d", learned, forgot)
	if got := e.speed.est.Slowdown(c.Nodes[1].Devices[0].ID, "classB"); got != 1 {
		t.Errorf("the other node's estimate is %v, want 1", got)
	}
}

// TestVariabilityDeviceSteps: one gang spans both nodes and node 0 is 2×
// slower. From the gang's step time alone both nodes are suspects; with
// each device's own time (Variability.DeviceSteps) only node 0 is slow.
func TestVariabilityDeviceSteps(t *testing.T) {
	c := cluster(t, "2x1:t4")
	for _, perDevice := range []bool{false, true} {
		cfg := Config{Cluster: c, Apps: toyApps(t, ProfileOptions{}), Policy: baselines.FIFO{}, Interval: 10 * time.Second, EveryRound: true,
			Jobs: []JobSpec{{Name: "a", Application: "toy", Replicas: 2, BatchSize: 20}},
			Variability: &Variability{DeviceSteps: perDevice,
				Episodes: []variability.Episode{{Node: c.Nodes[0].Name, Start: 0, End: 24 * time.Hour, Factor: 2}}}}
		if err := cfg.validate(); err != nil {
			t.Fatal(err)
		}
		e, err := newEngine(cfg)
		if err != nil {
			t.Fatal(err)
		}
		var slow, fast float64
		e.cfg.Progress = func(Status) {
			slow = e.speed.est.Slowdown(c.Nodes[0].Devices[0].ID, "")
			fast = e.speed.est.Slowdown(c.Nodes[1].Devices[0].ID, "")
		}
		if err := e.loop(context.Background()); err != nil {
			t.Fatal(err)
		}
		wantFast := 2.0
		if perDevice {
			wantFast = 1
		}
		if math.Abs(slow-2) > 1e-6 || math.Abs(fast-wantFast) > 1e-6 {
			t.Errorf("DeviceSteps %v: estimates %v (slow node), %v (fast node); want 2 and %v", perDevice, slow, fast, wantFast)
		}
	}
}

func TestVariabilityValidation(t *testing.T) {
	c := cluster(t, "1x1:t4")
	ghost := variability.NewTable("classA")
	_ = ghost.Set("nope", "classA", 1.1)
	for _, v := range []*Variability{
		{Episodes: []variability.Episode{{Node: "nope", End: time.Hour, Factor: 2}}},
		{Episodes: []variability.Episode{{Node: c.Nodes[0].Name, End: time.Hour, Factor: 0}}},
		{Truth: ghost},
		{LocalityPenalty: 0.5},
	} {
		_, err := Run(context.Background(), Config{Cluster: c, Apps: toyApps(t, ProfileOptions{}), Policy: baselines.FIFO{},
			Jobs: []JobSpec{{Name: "a", Application: "toy", Replicas: 1, BatchSize: 10}}, Variability: v})
		if !errors.Is(err, ErrInvalid) {
			t.Errorf("%+v: err %v, want ErrInvalid", v, err)
		}
	}
}

package sim

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/goodsched/goodsched/energy"
	"github.com/goodsched/goodsched/provision"
	"github.com/goodsched/goodsched/scheduler"
	"github.com/goodsched/goodsched/scheduler/baselines"
	"github.com/goodsched/goodsched/scheduler/carbonaware"
)

// allOn keeps every node on.
type allOn struct{}

func (allOn) Provision(_ context.Context, in scheduler.Input, _ []energy.NodeState) ([]energy.NodeState, error) {
	return make([]energy.NodeState, len(in.Cluster.Nodes)), nil
}

// TestProvisionSim: TestCarbonAwareSim's 20 jobs, carbon-aware, with
// nodes powered down by provision.Planner: every deadline met, less CO2
// than with every node on (the idle devices of nodes no plan needs stop
// drawing), and the parts (busy, idle, down, transitions) add up. A
// Provisioner that keeps every node on changes nothing.
func TestProvisionSim(t *testing.T) {
	apps := polluxApps(t)
	jobs := polluxJobs(t, "workloads", "workload-6", 20)
	run := func(p Provisioner) Result {
		r, err := Run(context.Background(), Config{Cluster: cluster(t, "4x4:t4"), Jobs: jobs, Apps: apps, Policy: carbonaware.Policy{CarbonWeight: 1},
			Kind: scheduler.Adaptive, Start: carbonStart, Carbon: daily(10, 400, 100), Slack: 12 * time.Hour, Provision: p})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	c, on, p := run(nil), run(allOn{}), run(provision.Planner{})
	if on.CarbonKg != c.CarbonKg || on.EnergyKWh != c.EnergyKWh || on.AvgJCT != c.AvgJCT || on.Transitions != 0 {
		t.Errorf("every node on: %v kg, %v kWh, JCT %v; without a Provisioner %v kg, %v kWh, JCT %v", on.CarbonKg, on.EnergyKWh, on.AvgJCT, c.CarbonKg, c.EnergyKWh, c.AvgJCT)
	}
	if p.DeadlineMisses != 0 || p.Completed != len(jobs) {
		t.Errorf("provisioned: %d deadline misses, %d of %d completed", p.DeadlineMisses, p.Completed, len(jobs))
	}
	if !(p.CarbonKg < c.CarbonKg) || p.Transitions == 0 || !(p.DownCarbonKg > 0) || !(p.TransitionCarbonKg > 0) {
		t.Errorf("provisioned %.4f kg (down %.4f, transitions %.4f, %d of them); every node on %.4f kg", p.CarbonKg, p.DownCarbonKg, p.TransitionCarbonKg, p.Transitions, c.CarbonKg)
	}
	if sum := p.BusyCarbonKg + p.IdleCarbonKg + p.DownCarbonKg + p.TransitionCarbonKg; math.Abs(sum-p.CarbonKg) > 1e-9*p.CarbonKg {
		t.Errorf("parts sum to %v, total %v", sum, p.CarbonKg)
	}
	t.Logf("carbon-aware %.3f kg (idle %.3f); provisioned %.3f kg (idle %.3f, down %.3f, transitions %.3f, %d), avg JCT %v → %v",
		c.CarbonKg, c.IdleCarbonKg, p.CarbonKg, p.IdleCarbonKg, p.DownCarbonKg, p.TransitionCarbonKg, p.Transitions, c.AvgJCT, p.AvgJCT)
}

// TestProvisionConfigInvalid: provisioning without a carbon series, and a
// Provisioner answering for the wrong number of nodes, fail with
// ErrInvalid.
func TestProvisionConfigInvalid(t *testing.T) {
	apps := toyApps(t, ProfileOptions{})
	cfg := Config{Cluster: cluster(t, "2x1:t4"), Jobs: []JobSpec{{Name: "a", Application: "toy", Replicas: 1, BatchSize: 10}},
		Apps: apps, Policy: baselines.FIFO{}, Start: carbonStart, Provision: allOn{}}
	if _, err := Run(context.Background(), cfg); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "Provision") {
		t.Errorf("no Carbon: %v", err)
	}
	cfg.Carbon, cfg.Provision = daily(1, 1, 1), short{}
	if _, err := Run(context.Background(), cfg); !errors.Is(err, ErrInvalid) {
		t.Errorf("one state for two nodes: %v", err)
	}
}

type short struct{}

func (short) Provision(context.Context, scheduler.Input, []energy.NodeState) ([]energy.NodeState, error) {
	return []energy.NodeState{energy.On}, nil
}

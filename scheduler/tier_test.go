package scheduler

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/goodsched/goodsched/placement"
	"github.com/goodsched/goodsched/scheduler/tiers"
)

// tierInput: job "run" holds the four T4s of one node with a day of
// attained service; job "new" (never ran) wants them.
func tierInput(tier tiers.Tier) Input {
	c := testCluster(group{1, 4, "t4"})
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	var devs []string
	for _, d := range c.Nodes[0].Devices {
		devs = append(devs, d.ID)
	}
	return Input{Cluster: c, Now: now, Jobs: []Job{
		{ID: "new", Submitted: now.Add(-time.Minute), Requested: 4},
		{ID: "run", Submitted: now.Add(-48 * time.Hour), Requested: 4, Attained: 96 * time.Hour, Tier: tier},
	}, Current: []placement.Assignment{{Job: "run", Devices: devs}}}
}

// TestTierPremiumNeverPreempted: a policy that gives a running job's
// devices to a new one preempts it, unless the running job is premium or
// standard (then the new one waits: its devices are not free).
func TestTierPremiumNeverPreempted(t *testing.T) {
	for _, tc := range []struct {
		tier      tiers.Tier
		preempted bool
		reason    Reason
	}{
		{tiers.None, true, ReasonOrder},
		{tiers.Basic, true, ReasonOrder},
		{tiers.Standard, false, ReasonTier},
		{tiers.Premium, false, ReasonTier},
	} {
		t.Run(tc.tier.String(), func(t *testing.T) {
			// A policy that gives the running job's devices to the new one.
			plan := scheduleOnce(t, fixedTargets{{Job: "new", Type: "t4", Count: 4}}, tierInput(tc.tier))
			d, _ := plan.Decision("run")
			if got := d.Action == placement.Stop; got != tc.preempted {
				t.Fatalf("run: %v (%s), preempted %v, want %v", d.Action, d.Message, got, tc.preempted)
			}
			if !tc.preempted && d.Reason != tc.reason {
				t.Errorf("run: reason %v, want %v", d.Reason, tc.reason)
			}
			if tc.tier == tiers.None {
				if plan.Tiers != nil {
					t.Errorf("Tiers = %+v without tiers, want nil", plan.Tiers)
				}
				return
			}
			want := tiers.Report{Tier: tc.tier, Jobs: 1, Running: 1}
			if tc.preempted {
				want.Running, want.Preempted = 0, 1
			}
			if len(plan.Tiers) != 1 || plan.Tiers[0] != want {
				t.Errorf("Tiers = %+v, want [%+v]", plan.Tiers, want)
			}
		})
	}
}

// TestTierStandardShrinksToGuarantee: an elastic standard job on 10
// devices that a policy would shrink to 2 keeps ⌈0.7×10⌉ = 7; a basic
// one goes to 2; a premium one keeps 10.
func TestTierStandardShrinksToGuarantee(t *testing.T) {
	c := testCluster(group{1, 16, "t4"})
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	var devs []string
	for _, d := range c.Nodes[0].Devices[:10] {
		devs = append(devs, d.ID)
	}
	for _, tc := range []struct {
		tier tiers.Tier
		want int
	}{{tiers.Basic, 2}, {tiers.Standard, 7}, {tiers.Premium, 10}} {
		in := Input{Cluster: c, Now: now, Jobs: []Job{{ID: "e", Kind: Elastic, MinReplicas: 1, MaxReplicas: 16, Requested: 10, Tier: tc.tier}},
			Current: []placement.Assignment{{Job: "e", Devices: devs}}}
		plan := scheduleOnce(t, fixedTargets{{Job: "e", Type: "t4", Count: 2}}, in)
		d := plan.Decisions[0]
		if d.To != tc.want {
			t.Errorf("%v: %d devices (%s), want %d", tc.tier, d.To, d.Message, tc.want)
		}
		if plan.Tiers[0].BelowGuarantee != 0 || (plan.Tiers[0].Shrunk == 1) != (tc.want < 10) {
			t.Errorf("%v: report %+v", tc.tier, plan.Tiers[0])
		}
	}
	// Stopping it is raised to the guarantee too.
	in := Input{Cluster: c, Now: now, Jobs: []Job{{ID: "e", Kind: Elastic, MinReplicas: 1, MaxReplicas: 16, Requested: 10, Tier: tiers.Standard}},
		Current: []placement.Assignment{{Job: "e", Devices: devs}}}
	if d := scheduleOnce(t, fixedTargets{}, in).Decisions[0]; d.To != 7 || d.Reason != ReasonTier {
		t.Errorf("stopped standard job: %d devices, %v", d.To, d.Reason)
	}
}

// TestTierUnknown: a job whose tier is not a constant fails the round.
func TestTierUnknown(t *testing.T) {
	s, _ := New(Config{})
	if _, err := s.Schedule(context.Background(), tierInput(tiers.Tier(7))); !errors.Is(err, tiers.ErrUnknown) {
		t.Errorf("Schedule with tier 7: %v, want tiers.ErrUnknown", err)
	}
}

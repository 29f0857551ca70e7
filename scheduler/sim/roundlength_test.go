package sim

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/goodsched/goodsched/scheduler"
	"github.com/goodsched/goodsched/scheduler/baselines"
)

// tenMinutes is FIFO designed for 10-minute rounds.
type tenMinutes struct{ baselines.FIFO }

func (tenMinutes) RoundLength() time.Duration { return 10 * time.Minute }

// TestPolicyRoundLength checks that a policy's own round length
// (scheduler.RoundLength) sets the default Interval, and that an explicit
// Interval still wins: a job submitted at 100 s is first seen at the round
// at 600 s, not 120 s.
func TestPolicyRoundLength(t *testing.T) {
	apps := toyApps(t, ProfileOptions{})
	jobs := []JobSpec{{Name: "a", Submit: 100 * time.Second, Application: "toy", Replicas: 1, BatchSize: 10}}
	for _, tc := range []struct {
		interval time.Duration
		wantJCT  float64 // seconds: wait for the round, 30 s stall, 200 s of steps
	}{
		{0, 500 + 230},
		{time.Minute, 20 + 230},
	} {
		res, err := Run(context.Background(), Config{Cluster: cluster(t, "1x1:t4"), Jobs: jobs, Apps: apps,
			Policy: tenMinutes{}, Kind: scheduler.Rigid, Interval: tc.interval})
		if err != nil {
			t.Fatal(err)
		}
		if got := res.Jobs[0].JCT.Seconds(); math.Abs(got-tc.wantJCT) > 1e-3 {
			t.Errorf("Interval %v: JCT %.1f s, want %.1f", tc.interval, got, tc.wantJCT)
		}
	}
}

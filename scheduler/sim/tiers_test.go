package sim

import (
	"context"
	"errors"
	"math"
	"testing"

	"github.com/goodsched/goodsched/scheduler"
)

// TestTiersHandComputed: a gang spread over two nodes whose tier keeps
// half its throughput takes 30 s + 200 steps / 0.5 instead of 30 + 200;
// Observe sees every round, the waiting job and then the running one.
func TestTiersHandComputed(t *testing.T) {
	for _, tc := range []struct {
		keep float64
		want float64
	}{{1, 230}, {0.5, 430}} {
		rounds, waited, ran := 0, 0, 0
		tiers := &Tiers{
			Keep: func(nodes []string) float64 {
				if len(nodes) > 1 {
					return tc.keep
				}
				return 1
			},
			Observe: func(r TiersRound) {
				rounds++
				waited += len(r.Waiting)
				ran += len(r.Current)
			},
		}
		res, err := Run(context.Background(), Config{
			Cluster: cluster(t, "2x2:t4"), Jobs: []JobSpec{{Name: "a", Application: "toy", Replicas: 2, BatchSize: 10}},
			Apps: toyApps(t, ProfileOptions{}), Policy: allRequested{}, Placer: spreadPlacer{}, Kind: scheduler.Rigid, Tiers: tiers,
		})
		if err != nil {
			t.Fatal(err)
		}
		if got := secs(res.Jobs[0].JCT); math.Abs(got-tc.want) > 1e-3 {
			t.Errorf("keep %v: JCT %.3f, want %.3f", tc.keep, got, tc.want)
		}
		if rounds == 0 || ran == 0 || waited != 0 {
			t.Errorf("keep %v: observed %d rounds, %d running, %d waiting", tc.keep, rounds, ran, waited)
		}
	}
	_, err := Run(context.Background(), Config{
		Cluster: cluster(t, "2x2:t4"), Jobs: []JobSpec{{Name: "a", Application: "toy", Replicas: 2, BatchSize: 10}},
		Apps: toyApps(t, ProfileOptions{}), Policy: allRequested{}, Placer: spreadPlacer{}, Kind: scheduler.Rigid,
		Tiers: &Tiers{Keep: func([]string) float64 { return math.NaN() }},
	})
	if !errors.Is(err, ErrInvalid) {
		t.Fatalf("NaN keep: err = %v", err)
	}
}

// allRequested gives every job its requested count (the test's cluster
// holds them all): no baseline policy needed.
type allRequested struct{}

func (allRequested) Allocate(_ context.Context, r *scheduler.Round) ([]scheduler.Target, error) {
	var out []scheduler.Target
	for _, j := range r.Jobs() {
		out = append(out, scheduler.Target{Job: j.Job.ID, Type: "t4", Count: j.Min})
	}
	return out, nil
}

package sim

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/goodsched/goodsched/accel"
	"github.com/goodsched/goodsched/scheduler"
	"github.com/goodsched/goodsched/scheduler/baselines"
)

// Issue 17: a cluster no profile covers, and a round longer than a day,
// were simulated silently.

func TestUnprofiledCluster(t *testing.T) {
	apps := toyApps(t, ProfileOptions{})
	cfg := Config{Cluster: cluster(t, "4x4:a100"), Jobs: []JobSpec{{Name: "a", Application: "toy", Replicas: 1, BatchSize: 10}}, Apps: apps, Policy: baselines.FIFO{}, Kind: scheduler.Adaptive}
	_, err := Run(context.Background(), cfg)
	if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "a100-40gb") {
		t.Fatalf("T4 profiles on an A100 cluster: err %v, want ErrInvalid naming a100-40gb", err)
	}
	mixed := cluster(t, "1x1:t4,1x4:a100")
	if got := UnprofiledTypes(mixed, apps); !slices.Equal(got, []accel.TypeKey{"a100-40gb"}) {
		t.Errorf("UnprofiledTypes = %v, want [a100-40gb]", got)
	}
	if got := UnprofiledTypes(cluster(t, "2x1:t4"), apps); len(got) != 0 {
		t.Errorf("UnprofiledTypes on a T4 cluster = %v, want none", got)
	}
	cfg.Cluster = mixed
	if _, err := Run(context.Background(), cfg); err != nil {
		t.Errorf("mixed cluster with one profiled type: %v", err)
	}
}

func TestIntervalBound(t *testing.T) {
	apps := toyApps(t, ProfileOptions{})
	cfg := Config{Cluster: cluster(t, "1x1:t4"), Jobs: []JobSpec{{Name: "a", Application: "toy", Replicas: 1, BatchSize: 10}}, Apps: apps, Policy: baselines.FIFO{}, Kind: scheduler.Adaptive, Interval: 10000 * time.Hour}
	if _, err := Run(context.Background(), cfg); !errors.Is(err, ErrInvalid) {
		t.Errorf("Interval 10000h: err %v, want ErrInvalid", err)
	}
	cfg.Interval = MaxInterval
	if _, err := Run(context.Background(), cfg); err != nil {
		t.Errorf("Interval MaxInterval: %v", err)
	}
}

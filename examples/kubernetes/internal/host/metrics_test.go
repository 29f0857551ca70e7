package host

import (
	"testing"

	"github.com/goodsched/goodsched/scheduler"
	"github.com/goodsched/goodsched/scheduler/quota"
	"github.com/prometheus/client_golang/prometheus"
)

// TestQueueGauges: goodsched_queue_gpus has one series per queue, type
// and measure of Plan.Queues, with the report's figures, and a round
// without queues leaves none behind.
func TestQueueGauges(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := newMetrics(reg, false)
	if err != nil {
		t.Fatal(err)
	}
	h := &Host{m: m}
	snap := buildSnapshot(nil, nil, nil, opts(), assumed{})
	plan := scheduler.Plan{Queues: []quota.Usage{
		{Queue: "vision", Type: "a100-40gb", Guaranteed: 4, Entitled: 6, Used: 5, Borrowed: 1, Pending: 2},
		{Queue: "nlp", Type: "a100-40gb", Guaranteed: 4, Entitled: 2, Used: 2, Lent: 1},
	}}
	h.recordMetrics(snap, plan)
	got := gauges(t, reg)["goodsched_queue_gpus"]
	if len(got) != 12 {
		t.Errorf("%d series, want 2 queues × 1 type × 6 measures: %v", len(got), got)
	}
	// Labels in name order: measure, queue, type.
	for key, want := range map[string]float64{
		"guaranteed,vision,a100-40gb": 4, "entitled,vision,a100-40gb": 6, "used,vision,a100-40gb": 5,
		"borrowed,vision,a100-40gb": 1, "lent,vision,a100-40gb": 0, "pending,vision,a100-40gb": 2,
		"entitled,nlp,a100-40gb": 2, "lent,nlp,a100-40gb": 1, "borrowed,nlp,a100-40gb": 0,
	} {
		if v, ok := got[key]; !ok || v != want {
			t.Errorf("%s = %v (%v), want %v", key, v, ok, want)
		}
	}
	h.recordMetrics(snap, scheduler.Plan{})
	if got := gauges(t, reg)["goodsched_queue_gpus"]; len(got) != 0 {
		t.Errorf("after a round without queues: %v, want no series", got)
	}
}

package host_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/goodsched/goodsched/carbon"
	"github.com/goodsched/goodsched/examples/kubernetes/internal/host"
	"github.com/goodsched/goodsched/scheduler"
	"github.com/goodsched/goodsched/scheduler/carbonaware"
)

// TestIntegrationCarbonShiftsDelayTolerantJobs runs the goodput-carbon
// policy with a forecast from Config.Carbon: a delay-tolerant Job with a
// deadline and its work annotated waits through the dirty hours while an
// ordinary Job starts at once; it starts when the clock reaches the clean
// hours; and when the forecast cannot be fetched, a delay-tolerant Job
// runs unshifted (the round does not fail).
func TestIntegrationCarbonShiftsDelayTolerantJobs(t *testing.T) {
	c := startCluster(t)
	createNodes(t, c, gpuNode("n0", productA100, 4, true))
	// The forecast starts at the hour the test runs: the Jobs' deadlines
	// must follow their creation time, which the API server sets from the
	// real clock (a fixed date here failed once the day passed 20:00).
	t0 := time.Now().UTC().Truncate(time.Hour)
	// Dirty (500 g/kWh) for hours 0–5 and 24–29 of the forecast, clean
	// (50) for hours 6–23 and 30–47.
	vals := make([]float64, 48)
	for i := range vals {
		vals[i] = 50
		if i < 6 || i >= 24 && i < 30 {
			vals[i] = 500
		}
	}
	series := carbon.Series{Zone: "ES", Start: t0, Step: time.Hour, Values: vals, Unit: carbon.GPerKWh}
	var fail atomic.Bool
	var mu sync.Mutex
	now := t0.Add(30 * time.Minute)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	set := func(t time.Time) { mu.Lock(); now = t; mu.Unlock() }
	f := carbon.ForecasterFunc(func(_ context.Context, zone string, from time.Time, horizon time.Duration) (carbon.Series, error) {
		if fail.Load() {
			return carbon.Series{}, fmt.Errorf("%w: provider down", carbon.ErrUnavailable)
		}
		if zone != "ES" {
			return carbon.Series{}, errors.New("wrong zone " + zone)
		}
		return series, nil
	})
	flexible := func(deadline time.Time) map[string]string {
		return map[string]string{host.AnnotationDelayTolerant: "true", host.AnnotationDeadline: deadline.Format(time.RFC3339),
			host.AnnotationWork: "2h"}
	}
	createJobs(t, c, gpuJob("now", 1, 1, nil), gpuJob("flex", 1, 1, flexible(t0.Add(20*time.Hour))))
	h, ctx := startHost(t, host.Config{Client: schedulerClient(t, c, &requestLog{}), Now: clock,
		Scheduler: scheduler.Config{Policy: carbonaware.Policy{CarbonWeight: 1}}, Carbon: f, CarbonZone: "ES"})

	decision := func(job string) (scheduler.Decision, bool) {
		r, err := h.RoundOnce(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range r.Plan.Decisions {
			if d.Job == "default/"+job {
				return d, true
			}
		}
		return scheduler.Decision{}, false
	}
	driveUntil(t, ctx, h, 30*time.Second, "the ordinary Job bound", func() (bool, string) {
		return boundCount(livePods(t, c, "now")) == 1, ""
	})
	d, ok := decision("flex")
	if !ok || d.To != 0 || d.Reason != scheduler.ReasonCarbon {
		t.Fatalf("the delay-tolerant Job in a dirty hour: %+v (found %v), want it waiting for carbon", d, ok)
	}
	if n := boundCount(livePods(t, c, "flex")); n != 0 {
		t.Fatalf("the delay-tolerant Job has %d bound pods in a dirty hour", n)
	}
	t.Logf("dirty hour: %s: %s", d.Reason, d.Message)

	set(t0.Add(6*time.Hour + 10*time.Minute))
	driveUntil(t, ctx, h, 30*time.Second, "the delay-tolerant Job bound in the clean hours", func() (bool, string) {
		return boundCount(livePods(t, c, "flex")) == 1, ""
	})

	// Dirty again: a new delay-tolerant Job waits; then the provider goes
	// down and it runs unshifted.
	set(t0.Add(25 * time.Hour))
	createJobs(t, c, gpuJob("flex2", 1, 1, flexible(t0.Add(45*time.Hour))))
	driveUntil(t, ctx, h, 30*time.Second, "the new delay-tolerant Job waiting for carbon", func() (bool, string) {
		d, ok := decision("flex2")
		return ok && d.To == 0 && d.Reason == scheduler.ReasonCarbon, fmt.Sprintf("%+v", d)
	})
	fail.Store(true)
	driveUntil(t, ctx, h, 30*time.Second, "the delay-tolerant Job bound without a forecast", func() (bool, string) {
		return boundCount(livePods(t, c, "flex2")) == 1, ""
	})
}

package serving

import (
	"math"
	"time"
)

// KPA re-implements Knative's Pod Autoscaler on the concurrency metric
// (knative/serving pkg/autoscaler/scaling/autoscaler.go, defaults from
// config/core/configmaps/autoscaler.yaml):
//
//   - observed stable and panic concurrency are the time averages of
//     Metrics.Concurrency over the last StableWindow and the last
//     PanicWindowPercent of it;
//   - desired = ⌈observed / (TargetConcurrency × TargetUtilization)⌉ for each
//     window, clamped to [⌊ready / MaxScaleDownRate⌋, ⌈ready × MaxScaleUpRate⌉]
//     with ready = max(1, Ready);
//   - panic starts (or is renewed) when the panic desired / ready ≥
//     PanicThresholdPercent / 100, and ends a stable window after the last
//     renewal; while panicking the count is max(stable, panic) and never
//     below the highest count of the panic.
//
// The zero value, with Service set, is Knative's defaults. A KPA is not safe
// for concurrent use.
type KPA struct {
	// Service bounds the decisions (MinReplicas, MaxReplicas).
	Service Service
	// TargetConcurrency is the in-flight requests one replica is meant to
	// hold (Knative's container-concurrency-target-default, or the
	// revision's target); 0 means 100.
	TargetConcurrency float64
	// TargetUtilization is the fraction of the target aimed at; 0 means 0.7.
	TargetUtilization float64
	// StableWindow is the averaging window of the stable mode; 0 means 60 s.
	StableWindow time.Duration
	// PanicWindowPercent is the panic window as a percentage of the stable
	// window; 0 means 10 (6 s).
	PanicWindowPercent float64
	// PanicThresholdPercent is the panic trigger as a percentage of ready
	// capacity; 0 means 200.
	PanicThresholdPercent float64
	// MaxScaleUpRate bounds one step up to ready × rate; 0 means 1000.
	MaxScaleUpRate float64
	// MaxScaleDownRate bounds one step down to ready / rate; 0 means 2.
	MaxScaleDownRate float64

	samples      []concurrencySample
	panicTime    time.Time
	maxPanicPods int
}

type concurrencySample struct {
	end      time.Time
	interval time.Duration
	value    float64
}

// Name returns "kpa".
func (k *KPA) Name() string { return "kpa" }

func orDefault(v, d float64) float64 {
	if v == 0 {
		return d
	}
	return v
}

// Desired implements Autoscaler.
func (k *KPA) Desired(m Metrics) (int, error) {
	if err := m.Validate(); err != nil {
		return 0, err
	}
	stableWindow := k.StableWindow
	if stableWindow <= 0 {
		stableWindow = 60 * time.Second
	}
	panicWindow := time.Duration(float64(stableWindow) * orDefault(k.PanicWindowPercent, 10) / 100)
	target := orDefault(k.TargetConcurrency, 100) * orDefault(k.TargetUtilization, 0.7)

	k.samples = append(k.samples, concurrencySample{end: m.Now, interval: m.Interval, value: m.Concurrency})
	drop := 0
	for drop < len(k.samples) && !k.samples[drop].end.After(m.Now.Add(-stableWindow)) {
		drop++
	}
	if drop > 0 {
		k.samples = append(k.samples[:0], k.samples[drop:]...)
	}
	stable := k.average(m.Now.Add(-stableWindow))
	panicking := k.average(m.Now.Add(-panicWindow))

	ready := math.Max(1, float64(m.Ready))
	maxUp := math.Ceil(orDefault(k.MaxScaleUpRate, 1000) * ready)
	maxDown := math.Floor(ready / orDefault(k.MaxScaleDownRate, 2))
	dspc := math.Ceil(stable / target)
	dppc := math.Ceil(panicking / target)
	desiredStable := int(math.Min(math.Max(dspc, maxDown), maxUp))
	desiredPanic := int(math.Min(math.Max(dppc, maxDown), maxUp))

	over := dppc/ready >= orDefault(k.PanicThresholdPercent, 200)/100
	switch {
	case over:
		k.panicTime = m.Now
	case !k.panicTime.IsZero() && k.panicTime.Add(stableWindow).Before(m.Now):
		k.panicTime = time.Time{}
		k.maxPanicPods = 0
	}
	desired := desiredStable
	if !k.panicTime.IsZero() {
		desired = max(desired, desiredPanic)
		k.maxPanicPods = max(k.maxPanicPods, desired)
		desired = k.maxPanicPods
	}
	return k.Service.Clamp(desired), nil
}

// average is the time-weighted mean of the samples (clipped) after from.
func (k *KPA) average(from time.Time) float64 {
	var sum, weight float64
	for _, s := range k.samples {
		start := s.end.Add(-s.interval)
		if start.Before(from) {
			start = from
		}
		w := s.end.Sub(start).Seconds()
		if w <= 0 {
			continue
		}
		sum += s.value * w
		weight += w
	}
	if weight == 0 {
		return 0
	}
	return sum / weight
}

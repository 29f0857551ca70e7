// Package serving sizes inference services: it says how many replicas an
// LLM service needs from what its replicas report, so that its latency
// objectives hold at the least GPU time.
//
// A Service names the model, the accelerator type, the GPUs per replica,
// the replica start-up time and the objectives (SLO: p90 time to first
// token and p90 time per output token). A Profile is the performance of
// one (model, accelerator type): prefill time by prompt tokens, decode step
// time by batch and context, KV-cache capacity. It starts empty and is fitted
// online from the Reports replicas send; it never sees ground truth.
//
// An Autoscaler turns the Metrics of one interval into a replica count.
// Three are here:
//
//   - KPA re-implements Knative's Pod Autoscaler: ⌈concurrency / target⌉
//     over a 60 s stable window and a 6 s panic window, panic at 200% of
//     ready pods, no scale-down while panicking, at most halving per
//     decision (knative/serving pkg/autoscaler/scaling/autoscaler.go).
//   - Dynamo re-implements NVIDIA Dynamo's SLA planner: a load predictor,
//     correction factors actual/expected TTFT and ITL, and replicas from the
//     profile's prefill and decode throughput at the objectives.
//   - Predictive is goodsched's own: it forecasts arrivals and tokens (level,
//     trend, burst and, when the history covers two periods, seasonality),
//     turns a forecast rate into replicas with the profile and a learned
//     correction, and provisions for the whole start-up horizon, so that
//     replicas asked for now are ready when the load arrives.
//
// The host contract, per service:
//
//  1. Build a Profile (NewProfile) and feed it every Report its replicas send
//     (Profile.Observe); a pre-deployment sweep is simply early Reports.
//  2. Every tick (2 s for KPA's windows), hand the Autoscaler the Metrics of
//     the interval that just ended (Autoscaler.Desired).
//  3. Start or stop replicas to reach the count it returns; replicas being
//     started count as Starting in the next Metrics.
//
// Nothing here starts goroutines, reads clocks or touches hardware; time is
// Metrics.Now. A trace of requests (Trace, ReadAzureTrace) and the
// token-level simulator in serving/sim complete the picture.
package serving

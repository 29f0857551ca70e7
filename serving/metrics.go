package serving

import (
	"fmt"
	"math"
	"time"
)

// Metrics is what a service's replicas and router measured over one
// interval ending at Now, the input of every Autoscaler decision. Counts
// and sums cover the interval; levels are taken at Now.
type Metrics struct {
	// Now is the end of the interval.
	Now time.Time
	// Interval is the length of the interval (the tick), positive.
	Interval time.Duration
	// Ready is the replicas serving requests at Now.
	Ready int
	// Starting is the replicas asked for and not yet ready at Now.
	Starting int
	// Arrivals is the requests that arrived in the interval.
	Arrivals int
	// PromptTokens and OutputTokens sum the token counts of those arrivals
	// (output tokens as the router learns them, at the request's end, is the
	// usual case; a host that knows only finished requests reports those).
	PromptTokens, OutputTokens int
	// Concurrency is the time-average number of requests in the system
	// (queued or running) over the interval, summed over replicas: Knative's
	// concurrency metric.
	Concurrency float64
	// Waiting is the requests queued for prefill at Now
	// (vllm:num_requests_waiting summed).
	Waiting int
	// KVUsage is the mean fraction of KV cache in use over ready replicas
	// at Now (vllm:gpu_cache_usage_perc).
	KVUsage float64
	// FirstTokens is the requests that got their first token in the
	// interval; TTFTSum sums their times to first token and TTFTP90 is
	// their 90th percentile.
	FirstTokens int
	TTFTSum     time.Duration
	TTFTP90     time.Duration
	// Finished is the requests of at least two output tokens that finished
	// in the interval; TPOTSum sums their times per output token and
	// TPOTP90 is their 90th percentile.
	Finished int
	TPOTSum  time.Duration
	TPOTP90  time.Duration
	// DecodeSteps is the decode iterations run in the interval over all
	// replicas; DecodeBatchSum and DecodeContextSum sum their batch sizes
	// and mean contexts (tokens).
	DecodeSteps      int
	DecodeBatchSum   int
	DecodeContextSum int
}

// Validate returns an ErrInvalidReport error naming the first field that is
// negative, not finite, or (Interval) not positive.
func (m *Metrics) Validate() error {
	if m.Interval <= 0 {
		return fmt.Errorf("%w: metrics interval %v must be positive", ErrInvalidReport, m.Interval)
	}
	ints := []struct {
		name string
		v    int64
	}{
		{"ready", int64(m.Ready)}, {"starting", int64(m.Starting)}, {"arrivals", int64(m.Arrivals)},
		{"prompt_tokens", int64(m.PromptTokens)}, {"output_tokens", int64(m.OutputTokens)},
		{"waiting", int64(m.Waiting)}, {"first_tokens", int64(m.FirstTokens)}, {"ttft_sum", int64(m.TTFTSum)},
		{"ttft_p90", int64(m.TTFTP90)}, {"finished", int64(m.Finished)}, {"tpot_sum", int64(m.TPOTSum)},
		{"tpot_p90", int64(m.TPOTP90)}, {"decode_steps", int64(m.DecodeSteps)},
		{"decode_batch_sum", int64(m.DecodeBatchSum)}, {"decode_context_sum", int64(m.DecodeContextSum)},
	}
	for _, f := range ints {
		if f.v < 0 {
			return fmt.Errorf("%w: metrics %s %d is negative", ErrInvalidReport, f.name, f.v)
		}
	}
	for _, f := range []struct {
		name string
		v    float64
	}{{"concurrency", m.Concurrency}, {"kv_usage", m.KVUsage}} {
		if f.v < 0 || math.IsNaN(f.v) || math.IsInf(f.v, 0) {
			return fmt.Errorf("%w: metrics %s %v", ErrInvalidReport, f.name, f.v)
		}
	}
	return nil
}

// Autoscaler turns a service's Metrics into the replica count it should
// have (ready plus starting). Implementations keep state between calls and
// are not safe for concurrent use; one per service.
type Autoscaler interface {
	// Name identifies the autoscaler in results ("kpa", "dynamo", "goodsched").
	Name() string
	// Desired returns the replica count to reach, within the service's
	// MinReplicas and MaxReplicas. An error (bad Metrics) leaves the state
	// as it was; the host keeps its last decision.
	Desired(m Metrics) (int, error)
}

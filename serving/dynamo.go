package serving

import (
	"fmt"
	"math"
	"time"
)

// Dynamo re-implements NVIDIA Dynamo's SLA planner
// (ai-dynamo/dynamo docs/architecture/sla_planner.md) for one pool of
// aggregated replicas. Every Interval it
//
//  1. averages the interval's TTFT and ITL (time per output token) and
//     computes the correction factors actual/expected: expected TTFT is the
//     profile's prefill time at the mean prompt (ISL), expected ITL the
//     profile's decode time at the concurrency per ready replica (Little's
//     law, as its decode planner computes it) and context ISL + OSL/2;
//  2. predicts the next interval's request count, ISL and OSL with its
//     constant predictor (the last interval's values, Dynamo's default);
//  3. prefill replicas = ⌈requests·ISL/interval · min(1, prefill correction) /
//     prefill throughput at ISL⌉; decode replicas = ⌈requests·OSL/interval /
//     the best decode throughput whose step time stays within
//     SLO.TPOTP90 / decode correction at context ISL + OSL/2⌉.
//
// Dynamo's SLA planner sizes separate prefill and decode pools; NVIDIA's
// aggregated mode is a load-based ±1 rule instead. Here every replica does
// both phases, so the two terms are the fractions of a replica's time each
// phase needs and the planner asks for ⌈prefill share + decode share⌉; the
// ITL correction then carries the decode stalls that prefills cause. When
// no batch meets the corrected ITL, Dynamo's decode planner falls back to
// its minimum, which in one aggregated pool collapses the fleet under load
// (measured); this one uses a batch of one's throughput, the interpolator's
// lowest point, instead.
//
// Until its first interval ends, or while the profile has no point, it keeps
// the current count. A Dynamo is not safe for concurrent use.
type Dynamo struct {
	// Service gives the SLO and bounds the decisions.
	Service Service
	// Profile is the (model, type) profile, fed by the host.
	Profile *Profile
	// Interval is the adjustment interval; 0 means 60 s (this
	// re-implementation's choice, to compare with the other autoscalers at
	// one cadence).
	Interval time.Duration

	start                 time.Time
	acc                   Metrics
	concurrencySeconds    float64
	decision              int
	correctP, correctD    float64
	haveDecision, started bool
}

// Name returns "dynamo".
func (d *Dynamo) Name() string { return "dynamo" }

// Desired implements Autoscaler.
func (d *Dynamo) Desired(m Metrics) (int, error) {
	if err := m.Validate(); err != nil {
		return 0, err
	}
	if d.Profile == nil {
		return 0, fmt.Errorf("%w: dynamo has no Profile", ErrNoProfile)
	}
	interval := d.Interval
	if interval <= 0 {
		interval = 60 * time.Second
	}
	if !d.started {
		d.started = true
		d.start = m.Now.Add(-m.Interval)
	}
	accumulate(&d.acc, &m)
	d.concurrencySeconds += m.Concurrency * m.Interval.Seconds()
	if !d.haveDecision {
		d.decision = m.Ready + m.Starting
	}
	if m.Now.Sub(d.start) < interval {
		return d.Service.Clamp(d.decision), nil
	}
	a := d.acc
	elapsed := m.Now.Sub(d.start).Seconds()
	concurrency := d.concurrencySeconds / elapsed
	d.acc, d.start, d.concurrencySeconds = Metrics{}, m.Now, 0
	if a.Arrivals == 0 || !d.Profile.Ready() {
		return d.Service.Clamp(d.decision), nil
	}
	isl := float64(a.PromptTokens) / float64(a.Arrivals)
	osl := float64(a.OutputTokens) / float64(a.Arrivals)
	ctx := int(isl + osl/2)

	prefill, err := d.Profile.Prefill(int(isl))
	if err != nil {
		return d.Service.Clamp(d.decision), nil
	}
	d.correctP = 1
	if a.FirstTokens > 0 {
		d.correctP = (a.TTFTSum.Seconds() / float64(a.FirstTokens)) / prefill.Seconds()
	}
	d.correctD = 1
	if a.Finished > 0 && m.Ready > 0 {
		perReplica := concurrency / float64(m.Ready)
		if expected, err := d.Profile.Decode(max(1, int(math.Round(perReplica))), ctx); err == nil && expected > 0 {
			d.correctD = (a.TPOTSum.Seconds() / float64(a.Finished)) / expected.Seconds()
		}
	}

	rate := float64(a.Arrivals) / elapsed // constant predictor
	prefillThroughput := isl / prefill.Seconds()
	prefillShare := rate * isl * math.Min(1, d.correctP) / prefillThroughput
	itl := d.Service.SLO.TPOTP90.Seconds() / math.Max(d.correctD, 1e-3)
	decodeShare := rate * osl / bestDecodeThroughput(d.Profile, itl, ctx)
	n := math.Ceil(prefillShare + decodeShare)
	if math.IsInf(n, 0) || n > 1e6 {
		n = 1e6
	}
	d.decision, d.haveDecision = int(n), true
	return d.Service.Clamp(d.decision), nil
}

// bestDecodeThroughput is the largest tokens/s of one replica whose decode
// step at context ctx takes at most itl seconds: the largest such batch
// (step time grows with the batch), or a batch of one when even that is
// slower.
func bestDecodeThroughput(p *Profile, itl float64, ctx int) float64 {
	step := func(b int) float64 {
		t, err := p.Decode(b, ctx)
		if err != nil {
			return math.Inf(1)
		}
		return t.Seconds()
	}
	if step(1) > itl {
		return 1 / step(1)
	}
	lo, hi := 1, 2
	for hi < 1<<16 && step(hi) <= itl {
		lo, hi = hi, hi*2
	}
	for hi-lo > 1 {
		mid := (lo + hi) / 2
		if step(mid) <= itl {
			lo = mid
		} else {
			hi = mid
		}
	}
	return float64(lo) / step(lo)
}

// accumulate adds the interval counts and sums of m to acc (levels are not
// summed; percentiles keep the larger).
func accumulate(acc, m *Metrics) {
	acc.Arrivals += m.Arrivals
	acc.PromptTokens += m.PromptTokens
	acc.OutputTokens += m.OutputTokens
	acc.FirstTokens += m.FirstTokens
	acc.TTFTSum += m.TTFTSum
	acc.Finished += m.Finished
	acc.TPOTSum += m.TPOTSum
	acc.DecodeSteps += m.DecodeSteps
	acc.DecodeBatchSum += m.DecodeBatchSum
	acc.DecodeContextSum += m.DecodeContextSum
	acc.TTFTP90 = max(acc.TTFTP90, m.TTFTP90)
	acc.TPOTP90 = max(acc.TPOTP90, m.TPOTP90)
}
